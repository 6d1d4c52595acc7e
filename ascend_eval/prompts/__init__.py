"""Every prompt the metrics use, each defined once in its own module."""

from ascend_eval.prompts.base import ClassifyPromptSpec, ParseFailure, PromptSpec, extract_json
from ascend_eval.prompts.nli import STATEMENT_SUPPORT, SupportInput
from ascend_eval.prompts.statements import STATEMENTS, Statements, StatementsInput

__all__ = [
    "STATEMENTS",
    "STATEMENT_SUPPORT",
    "ClassifyPromptSpec",
    "ParseFailure",
    "PromptSpec",
    "Statements",
    "StatementsInput",
    "SupportInput",
    "extract_json",
]
