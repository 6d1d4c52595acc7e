"""answer_similarity: how close the response is to the reference in meaning."""

from __future__ import annotations

import math
from typing import Any, Literal

from ascend_eval.data import Column, Sample
from ascend_eval.errors import ConfigError
from ascend_eval.metrics.base import Metric, MetricResult, Plan, PlanContext, RoleName
from ascend_eval.models.base import CrossScoreRequest, EmbedRequest
from ascend_eval.similarity import cosine


def apply_threshold(score: float, threshold: float | None) -> float:
    """RAGAS's optional binarisation: 1.0 when score >= threshold (NaN stays NaN).

    >>> apply_threshold(0.8, 0.5), apply_threshold(0.3, 0.5), apply_threshold(0.3, None)
    (1.0, 0.0, 0.3)
    """
    if threshold is None or math.isnan(score):
        return score
    return float(score >= threshold)


class AnswerSimilarity(Metric):
    """Semantic similarity of response and reference.

    Args:
        method: "embedding" (RAGAS: cosine of the two embeddings, no judge call) or "cross_encoder"
            (the Ascend RAG SDK: the cross-encoder's score of the (reference, response) pair).
        threshold: if set, the score becomes 1.0 when it reaches the threshold and 0.0 otherwise.
    """

    name = "answer_similarity"
    required = frozenset({Column.REFERENCE, Column.RESPONSE})

    def __init__(
        self, method: Literal["embedding", "cross_encoder"] = "embedding", threshold: float | None = None
    ) -> None:
        if method not in ("embedding", "cross_encoder"):
            raise ConfigError(f"answer_similarity method={method!r}; valid: 'embedding', 'cross_encoder'.")
        self.method = method
        self.threshold = threshold

    @property
    def roles(self) -> frozenset[RoleName]:
        return frozenset({"embedder" if self.method == "embedding" else "reranker"})

    @property
    def params(self) -> dict[str, Any]:
        return {"method": self.method, "threshold": self.threshold}

    def plan(self, sample: Sample, ctx: PlanContext) -> Plan:
        # RAGAS embeds an empty text as a single space; keep that so scores stay comparable.
        reference, response = sample.reference or " ", sample.response or " "
        if self.method == "embedding":
            ref_vec, resp_vec = yield [EmbedRequest(reference), EmbedRequest(response)]
            score = cosine(ref_vec, resp_vec, zero=math.nan if ctx.ragas_compat else 0.0)
            if math.isnan(score):
                return MetricResult.nan("zero_vector", note="an embedding is all zeros")
        else:
            [score] = yield [CrossScoreRequest(reference, response)]
        # RAGAS tests `if self.threshold:`, so there a threshold of 0.0 is ignored.
        threshold = None if ctx.ragas_compat and self.threshold == 0.0 else self.threshold
        return MetricResult(apply_threshold(float(score), threshold), details={"raw_score": float(score)})
