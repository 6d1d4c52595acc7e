"""Every prompt the metrics use, each defined once in its own module."""

from ascend_eval.prompts.base import (
    VERDICT_THRESHOLD,
    ClassifyPromptSpec,
    ParseFailure,
    PromptSpec,
    Verdict,
    extract_json,
)
from ascend_eval.prompts.nli import STATEMENT_SUPPORT, SupportInput
from ascend_eval.prompts.statements import STATEMENTS, Statements, StatementsInput

__all__ = [
    "STATEMENTS",
    "STATEMENT_SUPPORT",
    "VERDICT_THRESHOLD",
    "ClassifyPromptSpec",
    "ParseFailure",
    "PromptSpec",
    "Statements",
    "StatementsInput",
    "SupportInput",
    "Verdict",
    "extract_json",
]
