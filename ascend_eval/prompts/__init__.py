"""Every prompt the metrics use, each defined once in its own module, and `PROMPTS`, all of them by tag."""

from __future__ import annotations

from typing import Any

from ascend_eval.prompts.answer_accuracy import ACCURACY_JUDGE_1, ACCURACY_JUDGE_2
from ascend_eval.prompts.answer_coverage import ANSWERS_QUESTION, ANSWERS_QUESTION_VERDICT
from ascend_eval.prompts.base import (
    VERDICT_THRESHOLD,
    ClassifyPromptSpec,
    ParseFailure,
    PromptSpec,
    Verdict,
)
from ascend_eval.prompts.context_recall import CONTEXT_ATTRIBUTION
from ascend_eval.prompts.context_relevance import RELEVANCE_JUDGE_1, RELEVANCE_JUDGE_2
from ascend_eval.prompts.context_usefulness import CONTEXT_USEFUL, CONTEXT_USEFUL_VERDICT
from ascend_eval.prompts.correctness import CORRECTNESS
from ascend_eval.prompts.entities import ENTITIES
from ascend_eval.prompts.json_text import extract_json
from ascend_eval.prompts.nli import STATEMENT_SUPPORT, SupportInput
from ascend_eval.prompts.nli_json import STATEMENT_VERDICTS
from ascend_eval.prompts.question_generation import RESPONSE_QUESTION
from ascend_eval.prompts.response_groundedness import GROUNDEDNESS_JUDGE_1, GROUNDEDNESS_JUDGE_2
from ascend_eval.prompts.statements import STATEMENTS, Statements, StatementsInput


def prompts_by_tag(*specs: PromptSpec[Any, Any] | ClassifyPromptSpec[Any]) -> dict[str, Any]:
    table: dict[str, Any] = {}
    for spec in specs:
        if spec.tag in table:  # the tag keys the request cache: two prompts must never share one
            raise ValueError(f"Two prompts are tagged {spec.tag!r}; give one another name or version.")
        table[spec.tag] = spec
    return table


_RATINGS = (
    ACCURACY_JUDGE_1, ACCURACY_JUDGE_2, RELEVANCE_JUDGE_1, RELEVANCE_JUDGE_2, GROUNDEDNESS_JUDGE_1,
    GROUNDEDNESS_JUDGE_2,
)  # fmt: skip

PROMPTS: dict[str, PromptSpec[Any, Any] | ClassifyPromptSpec[Any]] = prompts_by_tag(
    STATEMENTS,
    STATEMENT_SUPPORT,
    STATEMENT_VERDICTS,
    CONTEXT_ATTRIBUTION,
    CONTEXT_USEFUL,
    CONTEXT_USEFUL_VERDICT,
    CORRECTNESS,
    ENTITIES,
    RESPONSE_QUESTION,
    ANSWERS_QUESTION,
    ANSWERS_QUESTION_VERDICT,
    *(form for rating in _RATINGS for form in (rating.classify, rating.generate)),
)
"""Every prompt by its `name@version` tag: what a request's `tag` names, in results, traces and caches."""

__all__ = [
    "PROMPTS",
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
