"""nv_response_groundedness: whether the retrieved contexts support the response, rated by two judges."""

from __future__ import annotations

from ascend_eval.data import Column, Sample
from ascend_eval.metrics.base import Metric, MetricResult, Plan, PlanContext
from ascend_eval.metrics.dual_judge import rate_twice
from ascend_eval.prompts.response_groundedness import (
    GROUNDEDNESS_JUDGE_1,
    GROUNDEDNESS_JUDGE_2,
    GroundednessInput,
    GroundednessInputResponseFirst,
)


def groundedness_shortcut(response: str, context: str) -> tuple[float, str] | None:
    """The score that needs no judge, with its reason, or None.

    RAGAS legacy scores 0.0 when the response or the joined context is blank, and 1.0 when the response
    (stripped) equals the context or is a substring of it: a verbatim quote is grounded. Collections keeps
    only the blank rule; we keep both in both modes, since a verbatim substring is supported by definition
    and the judge would only add noise (a fragment cut mid-sentence can still read as a partial claim).

    >>> groundedness_shortcut("", "The Nile flows north.")
    (0.0, 'blank_input')
    >>> groundedness_shortcut("flows north", "The Nile flows north.")
    (1.0, 'response_in_context')
    >>> groundedness_shortcut("长江注入东海。", "长江发源于青藏高原。") is None
    True
    """
    r, c = response.strip(), context.strip()
    if not r or not c:
        return 0.0, "blank_input"
    if r in c:
        return 1.0, "response_in_context"
    return None


class ResponseGroundedness(Metric):
    """NVIDIA's response groundedness: two judges rate how well the joined contexts support the response
    on 0/1/2.

    Judge 1 shows the context first, judge 2 (other wording) the response first. Score: see
    `metrics.dual_judge` (probability-weighted ratings by default, the most probable rating under
    `ragas_compat`; NaN-tolerant mean by default, RAGAS's legacy `max` rule under `ragas_compat`).
    Shortcuts: `groundedness_shortcut`, the same in both modes.
    """

    name = "nv_response_groundedness"
    required = frozenset({Column.RESPONSE, Column.RETRIEVED_CONTEXTS})

    def plan(self, sample: Sample, ctx: PlanContext) -> Plan:
        response, context = sample.response or "", sample.joined_contexts or ""
        shortcut = groundedness_shortcut(response, context)
        if shortcut is not None:
            return MetricResult(shortcut[0], details={"shortcut": shortcut[1]})
        inputs = (
            GroundednessInput(context=context, response=response),
            GroundednessInputResponseFirst(response=response, context=context),
        )
        return (yield from rate_twice((GROUNDEDNESS_JUDGE_1, GROUNDEDNESS_JUDGE_2), inputs, ctx))
