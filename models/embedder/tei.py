"""`TEIEmbedder`: text embeddings from a text-embeddings-inference server's native `POST /embed`.

`{"inputs": [...], "normalize": true, "truncate": true}` -> `[[...], ...]`, one vector per input in input
order. Texts go longest first in requests of at most `batch_size` (the server's `max_client_batch_size`
when the factory read it from `GET /info`), up to the config's `parallelism` at a time. A request the
server refuses as too large (422 over its batch limit, 413 over its payload limit) is split and sent again
(`ascend_eval.models.tei_api`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from numpy.typing import NDArray

from ascend_eval.models.base import EmbedKind
from ascend_eval.models.batching import longest_first
from ascend_eval.models.errors import BackendError, ConfigError
from ascend_eval.models.http import EndpointClient, EndpointConfig
from ascend_eval.models.tei_api import DEFAULT_BATCH, post_in_batches

_EMBED = "/embed"


class TEIEmbedder:
    """An `Embedder` that calls TEI's `/embed`.

    Args:
        config: The server (`url` is where `/embed` lives, with `under_v1=False`), the model name TEI
            reports, and the retry policy.
        batch_size: Texts per request; at most the server's `max_client_batch_size`.
        truncate: Let the server cut texts longer than the model's limit (else it refuses them).
        query_prefix: Prepended to every text embedded with kind="query" (e.g. "query: " for E5 models).
        document_prefix: Prepended to every text embedded with kind="document" (e.g. "passage: ").

    Raises:
        ConfigError: An invalid setting, or the API key named by `config` cannot be read.
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
        if batch_size < 1:
            raise ConfigError(f"TEIEmbedder batch_size must be >= 1, got {batch_size}.")
        if config.under_v1:
            raise ConfigError(
                "TEIEmbedder needs EndpointConfig(under_v1=False): TEI's /embed is not under /v1. "
                f"Got url={config.url!r}."
            )
        self.config = config
        self.batch_size = batch_size
        self.truncate = truncate
        self.query_prefix = query_prefix
        self.document_prefix = document_prefix
        self.model_id = f"tei:{config.model}@{config.url}"
        self._client = EndpointClient(config, json_types=(list,))

    def __repr__(self) -> str:
        return f"TEIEmbedder(model_id={self.model_id!r}, batch_size={self.batch_size})"

    def close(self) -> None:
        self._client.close()

    def __enter__(self) -> TEIEmbedder:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def embed(self, texts: Sequence[str], *, kind: EmbedKind = "document") -> NDArray[np.float32]:
        """Embed `texts`.

        Returns:
            float32 `[len(texts), dim]` in input order, each row L2-normalised (by the server, checked
            here; an all-zero vector stays zero).

        Raises:
            BackendError: A request failed after its retries, or the server answered with the wrong
                number or size of vectors; embeddings are all or nothing.
        """
        if kind not in ("query", "document"):
            raise ConfigError(f"kind must be 'query' or 'document', got {kind!r}.")
        if not texts:
            return np.zeros((0, 0), dtype=np.float32)
        prefix = self.query_prefix if kind == "query" else self.document_prefix
        inputs = [prefix + t for t in texts]
        order = longest_first([len(t) for t in inputs])
        chunks = [order[i : i + self.batch_size] for i in range(0, len(order), self.batch_size)]

        def body(chunk: list[int]) -> dict[str, Any]:
            return {"inputs": [inputs[j] for j in chunk], "normalize": True, "truncate": self.truncate}

        answered = post_in_batches(
            self._client, _EMBED, chunks, body, parse_embed, what=self.model_id, on_limit=self._lower
        )
        dims = sorted({vectors.shape[1] for _, vectors in answered})
        if len(dims) != 1:
            raise BackendError(f"{self.model_id} returned vectors of different sizes {dims} in one call.")
        out = np.empty((len(texts), dims[0]), dtype=np.float32)
        for chunk, vectors in answered:
            if len(vectors) != len(chunk):
                raise BackendError(
                    f"{self.model_id} returned {len(vectors)} vectors for the {len(chunk)} texts of one "
                    "request."
                )
            out[chunk] = vectors
        return _unit_rows(out)

    def _lower(self, size: int) -> None:
        self.batch_size = min(self.batch_size, size)


def parse_embed(data: Any) -> NDArray[np.float32]:
    """The vectors of one `/embed` response: a JSON array of equally long arrays of finite numbers.

    >>> parse_embed([[0.6, 0.8], [1.0, 0.0]]).shape
    (2, 2)
    """
    if not isinstance(data, list) or not data or not all(isinstance(v, list) and v for v in data):
        raise ValueError("expected a non-empty array of vectors (one per input)")
    if len({len(v) for v in data}) != 1:
        raise ValueError("the vectors in one response differ in size")
    array = np.asarray(data, dtype=np.float32)
    if not np.isfinite(array).all():
        raise ValueError("the vectors contain NaN or infinity")
    return array


def _unit_rows(x: NDArray[np.float32]) -> NDArray[np.float32]:
    """Rows at unit length: TEI normalises already (normalize=true); this keeps the protocol's promise
    whatever the server did. All-zero rows stay zero.

    >>> _unit_rows(np.array([[3.0, 4.0], [0.0, 0.0]], dtype=np.float32)).round(3).tolist()
    [[0.6000000238418579, 0.800000011920929], [0.0, 0.0]]
    """
    x64 = x.astype(np.float64)
    norms = np.linalg.norm(x64, axis=1, keepdims=True)
    return np.divide(x64, norms, out=np.zeros_like(x64), where=norms > 0).astype(np.float32)


__all__ = ["TEIEmbedder", "parse_embed"]
