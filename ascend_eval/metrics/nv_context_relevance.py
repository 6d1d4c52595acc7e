"""nv_context_relevance: whether the retrieved contexts hold what the question needs, rated by two judges."""

from __future__ import annotations

from ascend_eval.data import Column, Sample
from ascend_eval.metrics.base import Metric, MetricResult, Plan, PlanContext
from ascend_eval.metrics.dual_judge import rate_twice
from ascend_eval.prompts.context_relevance import (
    RELEVANCE_JUDGE_1,
    RELEVANCE_JUDGE_2,
    RelevanceInput,
    RelevanceInputContextFirst,
)


def relevance_shortcut(question: str, context: str) -> tuple[float, str] | None:
    """The score that needs no judge, with its reason, or None.

    RAGAS (legacy and collections alike) scores 0.0 without asking a judge when the question or the
    joined context is blank, or when the context (stripped) is a substring of the question (equal texts
    included): a context that only repeats the question cannot inform the answer. Kept in both modes.

    >>> relevance_shortcut("  ", "Paris is the capital of France.")
    (0.0, 'blank_input')
    >>> relevance_shortcut("What is the capital of France?", " capital of France ")
    (0.0, 'context_in_question')
    >>> relevance_shortcut("法国的首都是哪里？", "巴黎是法国的首都。") is None
    True
    """
    q, c = question.strip(), context.strip()
    if not q or not c:
        return 0.0, "blank_input"
    if c in q:
        return 0.0, "context_in_question"
    return None


class ContextRelevance(Metric):
    """NVIDIA's context relevance: two judges rate the joined contexts for the question on 0/1/2.

    One judgement covers all retrieved contexts together (joined with newlines, as RAGAS does). Judge 1
    shows the question first, judge 2 (other wording) the context first, so that neither position is
    favoured. Score: see `metrics.dual_judge` (probability-weighted ratings by default, the most probable
    rating under `ragas_compat`; NaN-tolerant mean by default, RAGAS's legacy `max` rule under
    `ragas_compat`). Shortcuts: `relevance_shortcut`, the same in both modes.
    """

    name = "nv_context_relevance"
    required = frozenset({Column.USER_INPUT, Column.RETRIEVED_CONTEXTS})

    def plan(self, sample: Sample, ctx: PlanContext) -> Plan:
        question, context = sample.user_input or "", sample.joined_contexts or ""
        shortcut = relevance_shortcut(question, context)
        if shortcut is not None:
            return MetricResult(shortcut[0], details={"shortcut": shortcut[1]})
        inputs = (
            RelevanceInput(question=question, context=context),
            RelevanceInputContextFirst(context=context, question=question),
        )
        return (yield from rate_twice((RELEVANCE_JUDGE_1, RELEVANCE_JUDGE_2), inputs, ctx))
