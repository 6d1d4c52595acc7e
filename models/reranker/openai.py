"""`OpenAIReranker`: cross-encoder scores from an NVIDIA NIM-style `/v1/ranking` endpoint.

The ranking API scores many passages against one query per request:
`{"model", "query": {"text"}, "passages": [{"text"}, ...]}` -> `{"rankings": [{"index", "logit"}, ...]}`
(rankings sorted by score, each pointing back at its passage by `index`). Pairs are therefore grouped by
query, in order of first appearance, and sent in chunks of `batch_size` passages.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np
from numpy.typing import NDArray

from ascend_eval.models.errors import BackendError, ConfigError
from ascend_eval.models.http import EndpointClient, EndpointConfig, EndpointError

_RANKING = "/ranking"


class OpenAIReranker:
    """A `Reranker` that calls a NIM-style ranking endpoint.

    Args:
        config: The server, the model name and the retry policy.
        batch_size: Passages per request (all with the same query).

    Raises:
        ConfigError: An invalid setting, or the API key named by `config` cannot be read.
    """

    def __init__(self, config: EndpointConfig, *, batch_size: int = 64) -> None:
        if batch_size < 1:
            raise ConfigError(f"batch_size must be >= 1, got {batch_size}.")
        self.config = config
        self.batch_size = batch_size
        self.model_id = f"openai:{config.model}@{config.url}"
        self._client = EndpointClient(config)

    def __repr__(self) -> str:
        return f"OpenAIReranker(model_id={self.model_id!r}, batch_size={self.batch_size})"

    def close(self) -> None:
        self._client.close()

    def __enter__(self) -> OpenAIReranker:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def score(self, pairs: Sequence[tuple[str, str]]) -> NDArray[np.float32]:
        """Score each (query, passage) pair.

        Returns:
            float32 `[len(pairs)]` raw logits, in input order.

        Raises:
            BackendError: Any request failed after its retries; scores are all or nothing.
        """
        by_query: dict[str, list[int]] = {}
        for i, (query, _) in enumerate(pairs):
            by_query.setdefault(query, []).append(i)
        jobs = [
            (query, positions[k : k + self.batch_size])
            for query, positions in by_query.items()
            for k in range(0, len(positions), self.batch_size)
        ]
        bodies = [
            {
                "model": self.config.model,
                "query": {"text": query},
                "passages": [{"text": pairs[i][1]} for i in positions],
            }
            for query, positions in jobs
        ]
        outcomes = self._client.map(_RANKING, bodies, _parse_rankings)

        failed = [o for o in outcomes if isinstance(o, EndpointError)]
        if failed:
            raise BackendError(
                f"{self.model_id}: {len(failed)} of {len(jobs)} ranking requests failed; "
                f"the first: {failed[0]}"
            ) from None
        ranked = [o for o in outcomes if not isinstance(o, EndpointError)]
        out = np.empty(len(pairs), dtype=np.float32)
        for (_, positions), logits in zip(jobs, ranked, strict=True):
            if len(logits) != len(positions):
                raise BackendError(
                    f"{self.model_id} ranked {len(logits)} passages of the {len(positions)} sent "
                    "in one request."
                )
            out[positions] = logits
        return out


def _parse_rankings(data: dict[str, Any]) -> list[float]:
    """The logits of one response, in passage order."""
    rankings = data.get("rankings")
    if not isinstance(rankings, list) or not rankings:
        raise ValueError(f"no 'rankings' list in the response; its keys are {sorted(data)}")
    indices = [r["index"] for r in rankings]
    if sorted(indices) != list(range(len(rankings))):
        raise ValueError(f"the ranking indices are not 0..{len(rankings) - 1}: {indices[:20]}")
    logits = [0.0] * len(rankings)
    for r in rankings:
        logit = float(r["logit"])
        if not math.isfinite(logit):
            raise ValueError(f"passage {r['index']} has a non-finite logit {logit}")
        logits[r["index"]] = logit
    return logits


__all__ = ["EndpointConfig", "OpenAIReranker"]
