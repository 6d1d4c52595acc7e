"""context_precision and context_utilization: are the useful contexts ranked first?

For each retrieved context, in rank order, the judge decides whether it was useful for arriving at the
answer: the reference (context_precision) or the response (context_utilization). The score is the average
precision of those verdicts over the ranking. One request per context, all in one round, so the engine
batches every context of every sample together (RAGAS sends them one after another).

* "classify" judge mode: a CONTEXT_USEFUL `Classify` request per context; useful when p("1") is above
  `VERDICT_THRESHOLD` (0.5).
* "generate" judge mode: a CONTEXT_USEFUL_VERDICT JSON call `{reason, verdict}` per context (RAGAS's
  procedure).

In both modes one verdict that cannot be read makes the sample NaN, since every rank counts.

Default behaviour, and what `ragas_compat=True` does instead (RAGAS legacy):

* no epsilon: every context useful scores exactly 1.0 and none useful 0.0; compat adds RAGAS's 1e-10 to
  the denominator (all useful scores 0.9999999999..., not 1.0).
* no retrieved contexts: NaN ("no_contexts"), precision of an empty ranking being undefined; compat: 0.0.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any, ClassVar

from ascend_eval.data import Column, Sample
from ascend_eval.metrics.base import Metric, MetricResult, Plan, PlanContext
from ascend_eval.metrics.verdicts import Asked
from ascend_eval.models.base import ClassifyResult
from ascend_eval.prompts.base import ParseFailure
from ascend_eval.prompts.context_usefulness import CONTEXT_USEFUL, CONTEXT_USEFUL_VERDICT, UsefulnessInput

RAGAS_EPS = 1e-10
"""What RAGAS adds to the average precision's denominator."""


def average_precision(verdicts: Sequence[int], *, eps: float = 0.0) -> float:
    """Average precision of binary relevance verdicts in rank order.

    `sum_k (precision@k * v_k) / (sum_k v_k + eps)`, computed in RAGAS's order so that scores match to the
    last bit. Any non-zero verdict counts as 1.

    Args:
        verdicts: one verdict per retrieved context, best-ranked first.
        eps: added to the denominator; RAGAS uses `RAGAS_EPS`.

    Returns:
        The score in [0, 1]: 0.0 when nothing is relevant; with eps=0, NaN for an empty ranking.

    >>> average_precision([1, 0, 1])  # (1/1 + 2/3) / 2
    0.8333333333333333
    >>> average_precision([0, 1]), average_precision([1, 1, 1]), average_precision([0, 0])
    (0.5, 1.0, 0.0)
    >>> average_precision([1], eps=RAGAS_EPS), average_precision([1, 1, 1], eps=RAGAS_EPS)
    (0.9999999999, 0.9999999999666667)
    >>> average_precision([], eps=RAGAS_EPS), average_precision([])
    (0.0, nan)
    """
    v = [1 if x else 0 for x in verdicts]
    denominator = sum(v) + eps
    if denominator == 0:
        return 0.0 if v else math.nan
    numerator = sum([(sum(v[: i + 1]) / (i + 1)) * v[i] for i in range(len(v))])
    return numerator / denominator


def expected_average_precision(p_useful: Sequence[float]) -> float:
    """The expected average precision when context k is useful with probability p_k, independently
    (`scoring="expected"`), computed exactly; NaN for an empty ranking.

    AP = sum_k v_k * C_k / (k * S), with C_k the useful contexts among the first k and S all of them (AP
    is 0 when S is 0). For each k, C_k = 1 + A and S = 1 + A + B given v_k = 1, where A counts the useful
    contexts before k and B those after: independent Poisson-binomial counts, so
    E[AP] = sum_k p_k / k * sum_{a,b} P(A=a) P(B=b) (1 + a) / (1 + a + b), O(n^3) for n contexts.

    >>> expected_average_precision([1.0, 0.0, 1.0]) == average_precision([1, 0, 1])
    True
    >>> expected_average_precision([0.5])  # useful half the time: AP 1 or 0
    0.5
    >>> round(expected_average_precision([0.5, 0.5]), 6)  # (1 + 1 + 0.5 + 0) / 4 over the four outcomes
    0.625
    >>> expected_average_precision([])
    nan
    """
    n = len(p_useful)
    if n == 0:
        return math.nan
    total = 0.0
    for k in range(n):
        before, after = _count_distribution(p_useful[:k]), _count_distribution(p_useful[k + 1 :])
        inner = sum(
            pa * pb * (1 + a) / (1 + a + b) for a, pa in enumerate(before) for b, pb in enumerate(after)
        )
        total += p_useful[k] / (k + 1) * inner
    return total


def _count_distribution(p: Sequence[float]) -> list[float]:
    """P(exactly c of the independent events with probabilities `p` happen), c = 0..len(p)."""
    dist = [1.0]
    for q in p:
        dist = [
            (dist[c] if c < len(dist) else 0.0) * (1 - q) + (dist[c - 1] * q if c else 0.0)
            for c in range(len(dist) + 1)
        ]
    return dist


def _first_failure(parsed: Sequence[object]) -> MetricResult | None:
    """NaN for the first context whose verdict cannot be read, with its rank (1 = best), or None."""
    for rank, p in enumerate(parsed, start=1):
        if isinstance(p, ParseFailure):
            return MetricResult.nan(p.reason, raw=p.raw, rank=rank)
    return None


class _ContextUsefulness(Metric):
    """Shared plan: judge each context's usefulness for `answer_column`, then average precision."""

    answer_column: ClassVar[Column]

    def plan(self, sample: Sample, ctx: PlanContext) -> Plan:
        contexts = sample.retrieved_contexts or ()
        eps = RAGAS_EPS if ctx.ragas_compat else 0.0
        if not contexts:
            if ctx.ragas_compat:
                return MetricResult(0.0, details={"verdicts": []})
            return MetricResult.nan("no_contexts")
        answer = sample.get(self.answer_column) or ""
        inputs = [
            UsefulnessInput(question=sample.user_input or "", context=c, answer=answer)  # type: ignore[arg-type]
            for c in contexts
        ]
        details: dict[str, Any] = {}
        if ctx.judge_mode == "classify":
            asked = Asked(CONTEXT_USEFUL, inputs, ctx)
            results: list[ClassifyResult] = yield asked.requests
            useful = asked.read(results)
            if (failed := _first_failure(useful)) is not None:
                return failed
            p_useful = [v.p_positive for v in useful]  # type: ignore[union-attr]
            details["verdicts"] = [int(v.holds) for v in useful]  # type: ignore[union-attr]
            details["p_useful"] = [round(p, 6) for p in p_useful]
            details |= asked.details()
            if ctx.scoring == "expected":
                return MetricResult(expected_average_precision(p_useful), details=details)
            return MetricResult(average_precision(details["verdicts"], eps=eps), details=details)
        else:
            raws = yield [CONTEXT_USEFUL_VERDICT.request(x, ctx.language, ctx.block) for x in inputs]
            parsed = [CONTEXT_USEFUL_VERDICT.parse(r) for r in raws]
            if (failed := _first_failure(parsed)) is not None:
                return failed
            verdicts = [1 if p.verdict else 0 for p in parsed]  # type: ignore[union-attr]
            details["reasons"] = [p.reason for p in parsed]  # type: ignore[union-attr]
        details["verdicts"] = verdicts
        return MetricResult(average_precision(verdicts, eps=eps), details=details)


class ContextPrecision(_ContextUsefulness):
    """Whether the contexts that help reach the reference answer are ranked above those that do not.

    RAGAS's `ContextPrecision` / `LLMContextPrecisionWithReference`.
    """

    name = "context_precision"
    required = frozenset({Column.USER_INPUT, Column.RETRIEVED_CONTEXTS, Column.REFERENCE})
    answer_column = Column.REFERENCE


class ContextUtilization(_ContextUsefulness):
    """Whether the contexts the response used are ranked above those it did not (no reference needed).

    RAGAS's `ContextUtilization` / `LLMContextPrecisionWithoutReference`.
    """

    name = "context_utilization"
    required = frozenset({Column.USER_INPUT, Column.RESPONSE, Column.RETRIEVED_CONTEXTS})
    answer_column = Column.RESPONSE
