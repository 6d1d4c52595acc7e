"""`TEIReranker`: cross-encoder scores from a text-embeddings-inference server's native `POST /rerank`.

`{"query": q, "texts": [...], "raw_scores": false, "truncate": true}` -> `[{"index": i, "score": s}, ...]`,
best first, each entry pointing back at its text. Pairs are grouped by query, in order of first appearance,
and sent in requests of at most `batch_size` texts; a request the server refuses as too large is split and
sent again (`ascend_eval.models.tei_api`). With `raw_scores=false` TEI applies the model's activation (a
sigmoid for a one-logit reranker), as our other rerankers do by default.
"""

from __future__ import annotations

from typing import Any

from ascend_eval.models.endpoint_model import EndpointReranker, ranked_scores
from ascend_eval.models.http import EndpointConfig
from ascend_eval.models.registry import register, tei_config
from ascend_eval.models.spec import ModelSpec
from ascend_eval.models.tei_api import DEFAULT_BATCH, TEIModel


class TEIReranker(TEIModel, EndpointReranker, route="/rerank"):
    """A `Reranker` that calls TEI's `/rerank`; its scores are activated, or logits with `raw_scores`.

    Args:
        config: The server (`url` is where `/rerank` lives, with `under_v1=False`), the model name TEI
            reports, and the retry policy.
        batch_size: Texts per request; at most the server's `max_client_batch_size`.
        raw_scores: Ask for the raw logits instead of the activated scores.
        truncate: Let the server cut pairs longer than the model's limit (else it refuses them).
    """

    def __init__(
        self,
        config: EndpointConfig,
        *,
        batch_size: int = DEFAULT_BATCH,
        raw_scores: bool = False,
        truncate: bool = True,
    ) -> None:
        self.raw_scores = raw_scores
        self.truncate = truncate
        super().__init__(config, batch_size=batch_size)
        if raw_scores:
            self.model_id += ":raw"  # logits and activated scores are different results of one model

    def _body(self, query: str, texts: list[str]) -> dict[str, Any]:
        return {"query": query, "texts": texts, "raw_scores": self.raw_scores, "truncate": self.truncate}

    def _parse(self, data: Any) -> list[float]:
        return parse_rerank(data)


def parse_rerank(data: Any) -> list[float]:
    """The scores of one `/rerank` response, in the order the texts were sent.

    >>> parse_rerank([{"index": 1, "score": 0.9}, {"index": 0, "score": 0.2}])
    [0.2, 0.9]
    """
    if not isinstance(data, list) or not data:
        raise ValueError("expected a non-empty array of {index, score} entries")
    return ranked_scores(data, key="score", text="text", indices="the indices")


@register("reranker", "tei")
def build_tei_reranker(spec: ModelSpec) -> TEIReranker:
    """A reranker on text-embeddings-inference's native `/rerank` route."""
    config, batch = tei_config(spec)
    return TEIReranker(config, batch_size=batch)


__all__ = ["TEIReranker", "build_tei_reranker", "parse_rerank"]
