"""nv_accuracy: how well the response agrees with the reference answer, rated by two judges."""

from __future__ import annotations

from ascend_eval.data import Column, Sample
from ascend_eval.metrics.base import Metric, MetricResult, Plan, PlanContext
from ascend_eval.metrics.dual_judge import rate_twice
from ascend_eval.prompts.answer_accuracy import (
    ACCURACY_JUDGE_1,
    ACCURACY_JUDGE_2,
    AccuracyInput,
    AccuracyInputReferenceFirst,
)


class AnswerAccuracy(Metric):
    """NVIDIA's answer accuracy: two judges rate the response against the reference on 0/2/4, averaged.

    Judge 1 rates the response (as "answer") against the reference (as "reference_answer"). Judge 2 has
    its own wording and shows the reference answer field first. **Which text fills which field of judge
    2:** by default the roles are swapped, as RAGAS's collections `AnswerAccuracy` does: the response fills
    judge 2's reference field and the reference its answer field. Judge 1 then mainly catches what the
    response gets wrong or leaves out of the reference, judge 2 what the response claims beyond or against
    it, so the mean checks agreement in both directions instead of asking one question twice. Under
    `ragas_compat` judge 2 gets the roles of RAGAS's legacy `evaluate()` metric instead (labels kept, only
    the order shown swapped), since that is the implementation users compare against.

    Score: see `metrics.dual_judge` (probability-weighted ratings by default, the most probable rating
    under `ragas_compat`; NaN-tolerant mean by default, RAGAS's legacy `max` rule under `ragas_compat`).
    RAGAS has no shortcut here; by default a blank response scores 0.0 and a blank reference is NaN
    (`no_reference`), without a judge call. Under `ragas_compat` the judges are asked whatever the texts.
    """

    name = "nv_accuracy"
    required = frozenset({Column.USER_INPUT, Column.RESPONSE, Column.REFERENCE})

    def plan(self, sample: Sample, ctx: PlanContext) -> Plan:
        question = sample.user_input or ""
        response, reference = sample.response or "", sample.reference or ""
        if not ctx.ragas_compat:
            if not reference.strip():
                return MetricResult.nan("no_reference")
            if not response.strip():
                return MetricResult(0.0, details={"shortcut": "blank_response"})
        first = AccuracyInput(question=question, answer=response, reference_answer=reference)
        if ctx.ragas_compat:
            second = AccuracyInputReferenceFirst(
                question=question, reference_answer=reference, answer=response
            )
        else:
            second = AccuracyInputReferenceFirst(
                question=question, reference_answer=response, answer=reference
            )
        return (yield from rate_twice((ACCURACY_JUDGE_1, ACCURACY_JUDGE_2), (first, second), ctx))
