"""`TEIReranker`: cross-encoder scores from a text-embeddings-inference server's native `POST /rerank`.

`{"query": q, "texts": [...], "raw_scores": false, "truncate": true}` -> `[{"index": i, "score": s}, ...]`,
best first, each entry pointing back at its text. Pairs are grouped by query, in order of first appearance,
and sent in requests of at most `batch_size` texts; a request the server refuses as too large is split and
sent again (`ascend_eval.models.tei_api`). With `raw_scores=false` TEI applies the model's activation (a
sigmoid for a one-logit reranker), as our other rerankers do by default.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np
from numpy.typing import NDArray

from ascend_eval.models.errors import BackendError, ConfigError
from ascend_eval.models.http import EndpointClient, EndpointConfig
from ascend_eval.models.tei_api import DEFAULT_BATCH, post_in_batches

_RERANK = "/rerank"


class TEIReranker:
    """A `Reranker` that calls TEI's `/rerank`.

    Args:
        config: The server (`url` is where `/rerank` lives, with `under_v1=False`), the model name TEI
            reports, and the retry policy.
        batch_size: Texts per request; at most the server's `max_client_batch_size`.
        raw_scores: Ask for the raw logits instead of the activated scores.
        truncate: Let the server cut pairs longer than the model's limit (else it refuses them).

    Raises:
        ConfigError: An invalid setting, or the API key named by `config` cannot be read.
    """

    def __init__(
        self,
        config: EndpointConfig,
        *,
        batch_size: int = DEFAULT_BATCH,
        raw_scores: bool = False,
        truncate: bool = True,
    ) -> None:
        if batch_size < 1:
            raise ConfigError(f"TEIReranker batch_size must be >= 1, got {batch_size}.")
        if config.under_v1:
            raise ConfigError(
                "TEIReranker needs EndpointConfig(under_v1=False): TEI's /rerank is not under /v1. "
                f"Got url={config.url!r}."
            )
        self.config = config
        self.batch_size = batch_size
        self.raw_scores = raw_scores
        self.truncate = truncate
        self.model_id = f"tei:{config.model}@{config.url}" + (":raw" if raw_scores else "")
        self._client = EndpointClient(config, json_types=(list,))

    def __repr__(self) -> str:
        return f"TEIReranker(model_id={self.model_id!r}, batch_size={self.batch_size})"

    def close(self) -> None:
        self._client.close()

    def __enter__(self) -> TEIReranker:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def score(self, pairs: Sequence[tuple[str, str]]) -> NDArray[np.float32]:
        """Score each (query, text) pair.

        Returns:
            float32 `[len(pairs)]` in input order: activated scores, or logits with `raw_scores`.

        Raises:
            BackendError: A request failed after its retries, or the server scored other texts than it
                was sent; scores are all or nothing.
        """
        if not pairs:
            return np.zeros(0, dtype=np.float32)
        by_query: dict[str, list[int]] = {}
        for i, (query, _) in enumerate(pairs):
            by_query.setdefault(query, []).append(i)
        chunks = [
            positions[k : k + self.batch_size]
            for positions in by_query.values()
            for k in range(0, len(positions), self.batch_size)
        ]

        def body(chunk: list[int]) -> dict[str, Any]:
            return {
                "query": pairs[chunk[0]][0],
                "texts": [pairs[i][1] for i in chunk],
                "raw_scores": self.raw_scores,
                "truncate": self.truncate,
            }

        answered = post_in_batches(
            self._client, _RERANK, chunks, body, parse_rerank, what=self.model_id, on_limit=self._lower
        )
        out = np.empty(len(pairs), dtype=np.float32)
        for chunk, scores in answered:
            if len(scores) != len(chunk):
                raise BackendError(
                    f"{self.model_id} ranked {len(scores)} texts of the {len(chunk)} sent in one request."
                )
            out[chunk] = scores
        return out

    def _lower(self, size: int) -> None:
        self.batch_size = min(self.batch_size, size)


def parse_rerank(data: Any) -> list[float]:
    """The scores of one `/rerank` response, in the order the texts were sent.

    >>> parse_rerank([{"index": 1, "score": 0.9}, {"index": 0, "score": 0.2}])
    [0.2, 0.9]
    """
    if not isinstance(data, list) or not data:
        raise ValueError("expected a non-empty array of {index, score} entries")
    indices = [entry["index"] for entry in data]
    if sorted(indices) != list(range(len(data))):
        raise ValueError(f"the indices are not 0..{len(data) - 1}: {indices[:20]}")
    scores = [0.0] * len(data)
    for entry in data:
        score = float(entry["score"])
        if not math.isfinite(score):
            raise ValueError(f"text {entry['index']} has a non-finite score {score}")
        scores[entry["index"]] = score
    return scores


__all__ = ["TEIReranker", "parse_rerank"]
