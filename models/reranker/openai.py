"""`OpenAIReranker`: cross-encoder scores from an NVIDIA NIM-style `/v1/ranking` endpoint.

The ranking API scores many passages against one query per request:
`{"model", "query": {"text"}, "passages": [{"text"}, ...]}` -> `{"rankings": [{"index", "logit"}, ...]}`
(rankings sorted by score, each pointing back at its passage by `index`). Pairs are therefore grouped by
query, in order of first appearance, and sent in chunks of `batch_size` passages.
"""

from __future__ import annotations

from typing import Any

from ascend_eval.models.endpoint_model import EndpointReranker, listed, ranked_scores
from ascend_eval.models.http import EndpointConfig
from ascend_eval.models.registry import endpoint_config, register
from ascend_eval.models.spec import ModelSpec


class OpenAIReranker(EndpointReranker, route="/ranking", asks_for="ranking", ranks="passages"):
    """A `Reranker` that calls a NIM-style ranking endpoint; its scores are the raw logits.

    Args:
        config: The server, the model name and the retry policy.
        batch_size: Passages per request (all with the same query).
    """

    def __init__(self, config: EndpointConfig, *, batch_size: int = 64) -> None:
        super().__init__(config, batch_size=batch_size)

    def _body(self, query: str, texts: list[str]) -> dict[str, Any]:
        passages = [{"text": t} for t in texts]
        return {"model": self.config.model, "query": {"text": query}, "passages": passages}

    def _parse(self, data: dict[str, Any]) -> list[float]:
        return _parse_rankings(data)


def _parse_rankings(data: dict[str, Any]) -> list[float]:
    """The logits of one response, in passage order."""
    return ranked_scores(listed(data, "rankings"), key="logit", text="passage", indices="the ranking indices")


@register("reranker", "openai")
def build_openai_reranker(spec: ModelSpec) -> OpenAIReranker:
    """A reranker on an OpenAI-compatible (NIM) `/v1/ranking` server."""
    return OpenAIReranker(endpoint_config(spec))


__all__ = ["EndpointConfig", "OpenAIReranker", "build_openai_reranker"]
