"""`TEIEmbedder`: text embeddings from a text-embeddings-inference server's native `POST /embed`.

`{"inputs": [...], "normalize": true, "truncate": true}` -> `[[...], ...]`, one vector per input in input
order. Texts go longest first in requests of at most `batch_size` (the server's `max_client_batch_size`
when the factory read it from `GET /info`), up to the config's `parallelism` at a time. A request the
server refuses as too large (422 over its batch limit, 413 over its payload limit) is split and sent again
(`ascend_eval.models.tei_api`).
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.typing import NDArray

from ascend_eval.models.base import EmbedKind
from ascend_eval.models.endpoint_model import EndpointEmbedder, vector_rows
from ascend_eval.models.http import EndpointConfig
from ascend_eval.models.registry import register, tei_config
from ascend_eval.models.spec import ModelSpec
from ascend_eval.models.tei_api import DEFAULT_BATCH, TEIModel


class TEIEmbedder(TEIModel, EndpointEmbedder, route="/embed"):
    """An `Embedder` that calls TEI's `/embed`.

    Args:
        config: The server (`url` is where `/embed` lives, with `under_v1=False`), the model name TEI
            reports, and the retry policy.
        batch_size: Texts per request; at most the server's `max_client_batch_size`.
        truncate: Let the server cut texts longer than the model's limit (else it refuses them).
        query_prefix: Prepended to every text embedded with kind="query" (e.g. "query: " for E5 models).
        document_prefix: Prepended to every text embedded with kind="document" (e.g. "passage: ").
    """

    def __init__(
        self,
        config: EndpointConfig,
        *,
        batch_size: int = DEFAULT_BATCH,
        truncate: bool = True,
        query_prefix: str = "",
        document_prefix: str = "",
    ) -> None:
        self.truncate = truncate
        super().__init__(
            config, batch_size=batch_size, query_prefix=query_prefix, document_prefix=document_prefix
        )

    def _body(self, inputs: list[str], kind: EmbedKind) -> dict[str, Any]:
        # TEI normalises (the vectors are still brought to unit length here, whatever the server did).
        return {"inputs": inputs, "normalize": True, "truncate": self.truncate}

    def _parse(self, data: Any) -> NDArray[np.float32]:
        return parse_embed(data)


def parse_embed(data: Any) -> NDArray[np.float32]:
    """The vectors of one `/embed` response: a JSON array of equally long arrays of finite numbers.

    >>> parse_embed([[0.6, 0.8], [1.0, 0.0]]).shape
    (2, 2)
    """
    if not isinstance(data, list) or not data or not all(isinstance(v, list) and v for v in data):
        raise ValueError("expected a non-empty array of vectors (one per input)")
    return vector_rows(data)


@register("embedder", "tei")
def build_tei_embedder(spec: ModelSpec) -> TEIEmbedder:
    """An embedder on text-embeddings-inference's native `/embed` route."""
    config, batch = tei_config(spec)
    return TEIEmbedder(config, batch_size=batch)


__all__ = ["TEIEmbedder", "build_tei_embedder", "parse_embed"]
