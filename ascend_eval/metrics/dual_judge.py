"""The two-judge rating procedure shared by nv_accuracy, nv_context_relevance and nv_response_groundedness.

Each metric asks two differently worded judges for a rating on a small integer scale and averages them.
RAGAS sends the two judges one after the other and retries a judge up to five times when its text holds no
digit; here both go out in the same round, and a judge that cannot answer off the scale needs no retry:

* classify mode: one `Classify` request per judge over the scale's digits. The rating is the
  probability-weighted mean rating divided by the top of the scale (the probabilities are recorded);
  under `ragas_compat` it is the most probable rating, as RAGAS reads one sampled digit.
* generate mode: one JSON request per judge, `{"rating": int}` with the scale as an enum in the schema.

In either mode a judge whose answer cannot be read (the prompt's `parse` fails) is NaN, with its raw
answer kept, and the combination decides.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from pydantic import BaseModel

from ascend_eval.metrics.base import MetricResult, Plan, PlanContext
from ascend_eval.models.base import ClassifyResult, GenerateResult
from ascend_eval.prompts.base import ParseFailure
from ascend_eval.prompts.ratings import RatingPrompt


def expected_rating(probs: Sequence[float], scale: Sequence[int]) -> float:
    """The probability-weighted mean rating, divided by the top of the scale: a value in [0, 1].

    >>> expected_rating([0.0, 0.0, 1.0], [0, 2, 4])
    1.0
    >>> expected_rating([0.25, 0.5, 0.25], [0, 2, 4])
    0.5
    >>> expected_rating([0.5, 0.5, 0.0], [0, 1, 2])
    0.25
    """
    total = sum(probs)
    return sum(p * r for p, r in zip(probs, scale, strict=True)) / (total * max(scale))


def most_probable_rating(probs: Sequence[float], scale: Sequence[int]) -> float:
    """The most probable rating (the lower one on a tie), divided by the top of the scale.

    >>> most_probable_rating([0.2, 0.4, 0.4], [0, 2, 4])
    0.5
    >>> most_probable_rating([0.1, 0.1, 0.8], [0, 1, 2])
    1.0
    """
    best = max(range(len(probs)), key=lambda i: (probs[i], -i))
    return scale[best] / max(scale)


def combine_judges(first: float, second: float, *, ragas_compat: bool = False) -> float:
    """The metric's score from the two judges' normalised ratings.

    Default: the mean of the judges that gave a rating; NaN only when neither did.
    `ragas_compat`: RAGAS legacy's rule, the mean when both are >= 0 and otherwise Python's
    `max(first, second)`. Because every comparison with NaN is false, `max` returns its first argument
    when that is NaN: a failed judge 1 makes the score NaN even when judge 2 answered, while a failed
    judge 2 leaves judge 1's rating.

    >>> combine_judges(1.0, 0.5)
    0.75
    >>> combine_judges(math.nan, 0.5), combine_judges(0.5, math.nan)
    (0.5, 0.5)
    >>> combine_judges(math.nan, math.nan)
    nan
    >>> combine_judges(1.0, 0.5, ragas_compat=True)
    0.75
    >>> combine_judges(math.nan, 0.5, ragas_compat=True), combine_judges(0.5, math.nan, ragas_compat=True)
    (nan, 0.5)
    """
    if ragas_compat:
        if first >= 0 and second >= 0:
            return (first + second) / 2
        return max(first, second)
    valid = [s for s in (first, second) if not math.isnan(s)]
    return sum(valid) / len(valid) if valid else math.nan


def rate_twice(
    judges: tuple[RatingPrompt[Any], RatingPrompt[Any]],
    inputs: tuple[BaseModel, BaseModel],
    ctx: PlanContext,
) -> Plan:
    """Ask both judges in one round and return the combined score (use with `yield from`).

    Args:
        judges: judge 1 and judge 2.
        inputs: each judge's input model, filled by the metric.
        ctx: the plan context (language, judge mode, ragas_compat).

    Returns:
        A `MetricResult`: the combined score, with each judge's normalised rating (None when it failed) in
        `details["ratings"]`, the label probabilities in `details["probs"]` (classify mode) and, when a
        judge's answer could not be read, each judge's failure (or None) in `details["failures"]`.
    """
    details: dict[str, Any] = {}
    ratings: list[float] = []
    failures: list[dict[str, str] | None] = []
    if ctx.judge_mode == "generate":
        results: list[GenerateResult] = yield [
            judge.generate.request(x, ctx.language, ctx.block)  # type: ignore[arg-type]
            for judge, x in zip(judges, inputs, strict=True)
        ]
        for judge, result in zip(judges, results, strict=True):
            parsed = judge.generate.parse(result)
            if isinstance(parsed, ParseFailure):
                ratings.append(math.nan)
                failures.append({"reason": parsed.reason, "raw": parsed.raw})
            else:
                ratings.append(parsed.rating / judge.top)
                failures.append(None)
    else:
        answers: list[ClassifyResult] = yield [
            judge.classify.request(x, ctx.language, ctx.block)  # type: ignore[arg-type]
            for judge, x in zip(judges, inputs, strict=True)
        ]
        read = most_probable_rating if ctx.ragas_compat else expected_rating
        probs: list[list[float] | None] = []
        for judge, answer in zip(judges, answers, strict=True):
            verdict = judge.classify.parse(answer)
            if isinstance(verdict, ParseFailure):
                ratings.append(math.nan)
                failures.append({"reason": verdict.reason, "raw": verdict.raw})
                probs.append(None)
            else:
                ratings.append(read(verdict.probs, judge.scale))
                failures.append(None)
                probs.append([round(p, 6) for p in verdict.probs])
        details["probs"] = probs
    if any(failures):
        details["failures"] = failures
    # None rather than NaN in details: they are exported as JSON.
    details["ratings"] = [None if math.isnan(r) else r for r in ratings]
    score = combine_judges(ratings[0], ratings[1], ragas_compat=ctx.ragas_compat)
    if math.isnan(score):
        first_failure = next(f for f in details.get("failures", []) if f)
        return MetricResult.nan(first_failure["reason"], **details)
    return MetricResult(score, details=details)
