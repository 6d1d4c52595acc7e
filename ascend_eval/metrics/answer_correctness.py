"""answer_correctness: factual overlap with the reference (F-beta over statements), blended with similarity.

Steps, per sample:

1. STATEMENTS splits the response into statements A and the reference into statements G. These are the
   very requests faithfulness (response) and context_recall / noise_sensitivity (reference) make, so the
   engine runs each once per sample. The two embeddings of step 3 go out in the same round.
2. TP / FP / FN:
   * "classify" judge mode: one STATEMENT_SUPPORT request per statement, read from next-token
     probabilities: each a in A against the reference text (supported: TP, else FP) and each g in G
     against the response text (not supported: FN).
   * "generate" judge mode: one CORRECTNESS JSON call that sorts A and G into TP / FP / FN with reasons,
     as RAGAS's classifier does; the counts are the lengths of the three lists.
3. Factuality = `fbeta_score(tp, fp, fn, beta)`; similarity = cosine of the reference's and the response's
   embeddings (the requests answer_similarity makes); score = weighted average of the two.

Where RAGAS's two implementations disagree, the default is:

* A and G both empty: factuality 1.0 with no classifier requests (legacy and collections agree).
* Exactly one of A, G empty: factuality 0.0 with no classifier requests. That is what legacy RAGAS gets
  from a sane classifier (no answer statement can be a TP, so precision or recall is 0); collections
  skips the classifier and scores 1.0, which would reward an answer that makes no claim at all.
  `ragas_compat=True` runs the classifier as legacy RAGAS does.
* "generate" mode, the classifier returns three empty lists for non-empty A and G: NaN
  ("no_classifications"); legacy RAGAS scores 0.0 (its F-beta of 0, 0, 0), and so does compat.
* A blank response or reference gets no statement request (it has no statements); compat sends it.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Sequence
from typing import Any

import numpy as np

from ascend_eval.data import Column, Sample
from ascend_eval.errors import ConfigError
from ascend_eval.metrics.answer_similarity import cosine
from ascend_eval.metrics.base import Metric, MetricResult, Plan, PlanContext, RoleName
from ascend_eval.metrics.verdicts import Asked
from ascend_eval.models.base import ClassifyResult, EmbedRequest, GenerateRequest
from ascend_eval.prompts.base import ParseFailure
from ascend_eval.prompts.correctness import CORRECTNESS, CorrectnessInput
from ascend_eval.prompts.nli import STATEMENT_SUPPORT, SupportInput
from ascend_eval.prompts.statements import STATEMENTS, StatementsInput, read_statements


def fbeta_score(tp: int, fp: int, fn: int, beta: float = 1.0) -> float:
    """F-beta of statement counts with legacy RAGAS's edge rules.

    Precision is 0 when tp + fp = 0 and recall is 0 when tp + fn = 0; when both are 0 the score is 0
    (so three zero counts give 0, not 1). Otherwise `(1 + b²)·P·R / (b²·P + R)`, computed in RAGAS's order
    so that scores match to the last bit.

    >>> fbeta_score(2, 1, 1)  # beta=1: tp / (tp + (fp + fn) / 2)
    0.6666666666666666
    >>> fbeta_score(3, 0, 0)
    1.0
    >>> fbeta_score(0, 2, 3), fbeta_score(0, 0, 3), fbeta_score(0, 2, 0), fbeta_score(0, 0, 0)
    (0.0, 0.0, 0.0, 0.0)
    >>> round(fbeta_score(1, 0, 3, beta=2.0), 4)  # beta > 1 weighs recall (0.25) over precision (1.0)
    0.2941
    """
    precision = tp / (tp + fp) if tp + fp else 0
    recall = tp / (tp + fn) if tp + fn else 0
    if precision == 0 and recall == 0:
        return 0.0
    beta_squared = beta**2
    return (1 + beta_squared) * (precision * recall) / ((beta_squared * precision) + recall)


def expected_fbeta(p_supported: Sequence[float], p_covered: Sequence[float], beta: float = 1.0) -> float:
    """F-beta of the expected counts (`scoring="expected"`): TP = sum of p(response statement supported
    by the reference), FP = the rest of the response statements, FN = sum of p(reference statement not
    covered by the response). This is F-beta at the expected counts, an approximation of the expected
    F-beta (a ratio of counts has no closed-form expectation); it equals `fbeta_score` on hard verdicts.

    >>> expected_fbeta([1.0, 1.0, 0.0], [1.0, 0.0]) == fbeta_score(2, 1, 1)
    True
    >>> round(expected_fbeta([0.9, 0.5], [0.8]), 6)  # TP 1.4, FP 0.6, FN 0.2: 1.4 / (1.4 + 0.4)
    0.777778
    """
    tp = sum(p_supported)
    return fbeta_score(tp, len(p_supported) - tp, sum(1 - p for p in p_covered), beta)  # type: ignore[arg-type]


def weighted_score(factuality: float, similarity: float, weights: Sequence[float]) -> float:
    """The weighted average RAGAS reports (`np.average`); NaN if factuality is NaN.

    >>> weighted_score(1.0, 0.6, (0.75, 0.25))
    0.9
    >>> weighted_score(0.5, 0.0, (1.0, 0.0))
    0.5
    >>> weighted_score(float("nan"), 0.9, (0.75, 0.25))
    nan
    """
    return float(np.average([factuality, similarity], weights=weights))


class AnswerCorrectness(Metric):
    """How correct the response is against the reference: F-beta of statement verdicts, plus similarity.

    Args:
        weights: (factuality, similarity) weights of the average; non-negative, not both 0. With
            similarity weight 0 no embedder is needed.
        beta: F-beta's beta (> 0); above 1 weighs recall (covering the reference) over precision.

    Raises:
        ConfigError: weights are not two non-negative finite numbers with a positive sum, or beta is not a
            positive finite number.
    """

    name = "answer_correctness"
    required = frozenset({Column.USER_INPUT, Column.RESPONSE, Column.REFERENCE})

    def __init__(self, weights: Sequence[float] = (0.75, 0.25), beta: float = 1.0) -> None:
        try:
            values = tuple(float(w) for w in weights)
        except (TypeError, ValueError):
            values = ()
        if (
            len(values) != 2
            or any(isinstance(w, bool) for w in weights)
            or not all(math.isfinite(w) and w >= 0 for w in values)
            or sum(values) == 0
        ):
            raise ConfigError(
                f"answer_correctness weights={weights!r}; pass two non-negative numbers, not both 0: "
                "(factuality weight, similarity weight), e.g. (0.75, 0.25)."
            )
        if (
            isinstance(beta, bool)
            or not isinstance(beta, numbers.Real)
            or not math.isfinite(beta)
            or beta <= 0
        ):
            raise ConfigError(
                f"answer_correctness beta={beta!r}; pass a positive number (1.0 is F1, above 1 favours "
                "recall, below 1 favours precision)."
            )
        self.weights = values
        self.beta = float(beta)

    @property
    def roles(self) -> frozenset[RoleName]:
        return frozenset({"judge", "embedder"}) if self.weights[1] > 0 else frozenset({"judge"})

    @property
    def params(self) -> dict[str, Any]:
        return {"weights": list(self.weights), "beta": self.beta}

    def plan(self, sample: Sample, ctx: PlanContext) -> Plan:
        question = sample.user_input or ""
        response, reference = sample.response or "", sample.reference or ""
        # A blank text has no statements; RAGAS asks the judge anyway, and so does compat.
        texts = {"response": response, "reference": reference}
        asked = [key for key, text in texts.items() if text.strip() or ctx.ragas_compat]
        requests: list[GenerateRequest | EmbedRequest] = [
            STATEMENTS.request(StatementsInput(question=question, answer=texts[key]), ctx.language, ctx.block)
            for key in asked
        ]
        if self.weights[1] > 0:
            # The same requests answer_similarity makes (RAGAS embeds an empty text as one space).
            requests += [EmbedRequest(reference or " "), EmbedRequest(response or " ")]
        results = yield requests

        found: dict[str, list[str]] = {"response": [], "reference": []}
        for key, raw in zip(asked, results, strict=False):
            parsed = read_statements(raw, question=question, ragas_compat=ctx.ragas_compat)
            if isinstance(parsed, ParseFailure):
                return MetricResult.nan(parsed.reason, raw=parsed.raw, step=f"{key} statements")
            found[key] = parsed
        answer, truth = found["response"], found["reference"]
        similarity = 0.0
        if self.weights[1] > 0:
            ref_vec, resp_vec = results[len(asked) :]
            # RAGAS divides by a zero norm (NaN) where the default scores 0.0.
            similarity = cosine(ref_vec, resp_vec, zero=math.nan if ctx.ragas_compat else 0.0)
        details: dict[str, Any] = {"response_statements": answer, "reference_statements": truth}

        if not answer and not truth:
            factuality = 1.0
        elif (not answer or not truth) and not ctx.ragas_compat:
            factuality = 0.0
        elif ctx.judge_mode == "classify":
            # RAGAS's classifier makes three per-statement decisions in one call: an answer statement is
            # TP if the ground truth supports it, else FP; a ground-truth statement is FN if the answer
            # does not contain it. Each is "is this statement supported by that text?", which is exactly
            # STATEMENT_SUPPORT, asked once per statement. The other side is given as its full text rather
            # than its statement list: the statements are a decomposition of that very text, and the text
            # keeps links between claims that splitting loses. This also makes the a-vs-reference requests
            # identical to noise_sensitivity's, so the engine runs them once.
            pairs = [(reference, a) for a in answer] + [(response, g) for g in truth]
            asked = Asked(STATEMENT_SUPPORT, [SupportInput(context=t, statement=s) for t, s in pairs], ctx)
            results: list[ClassifyResult] = yield asked.requests
            verdicts = asked.read_all(results)
            if isinstance(verdicts, ParseFailure):
                return MetricResult.nan(verdicts.reason, raw=verdicts.raw, **details)
            supported, covered = verdicts[: len(answer)], verdicts[len(answer) :]
            tp = sum(v.holds for v in supported)
            fp = len(supported) - tp
            fn = sum(not v.holds for v in covered)
            details |= {
                "p_response_supported": [round(v.p_positive, 6) for v in supported],
                "p_reference_covered": [round(v.p_positive, 6) for v in covered],
                "tp": tp,
                "fp": fp,
                "fn": fn,
                **asked.details(),
            }
            if ctx.scoring == "expected":
                factuality = expected_fbeta(
                    [v.p_positive for v in supported], [v.p_positive for v in covered], self.beta
                )
            else:
                factuality = fbeta_score(tp, fp, fn, self.beta)
        else:
            request = CORRECTNESS.request(
                CorrectnessInput(question=question, response_statements=answer, reference_statements=truth),
                ctx.language,
                ctx.block,
            )
            [raw] = yield [request]
            parsed = CORRECTNESS.parse(raw)
            if isinstance(parsed, ParseFailure):
                return MetricResult.nan(parsed.reason, raw=parsed.raw, **details)
            tp, fp, fn = len(parsed.TP), len(parsed.FP), len(parsed.FN)
            details |= {"tp": tp, "fp": fp, "fn": fn, "classification": parsed.model_dump()}
            if tp + fp + fn == 0 and not ctx.ragas_compat:
                return MetricResult.nan("no_classifications", raw=raw.text, **details)
            factuality = fbeta_score(tp, fp, fn, self.beta)
        details |= {"factuality": factuality, "similarity": similarity}
        return MetricResult(weighted_score(factuality, similarity, self.weights), details=details)
