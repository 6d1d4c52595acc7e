"""Dense retrieval over chunks and cross-encoder reranking, with every model call through the engine.

Embeddings and reranker scores are requests like any metric's: the engine batches them (one `embed` call
per kind, one `score` call), drops duplicates and keeps them in the on-disk request cache, so a sweep whose
points share a chunking embeds its chunks once. In front of that cache an in-process memo keyed by
(model id, kind, text) saves even the SQLite round trip between points run in one process.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Sequence
from typing import Any

import numpy as np
from numpy.typing import NDArray

from ascend_eval.engine import Engine, PlanError
from ascend_eval.errors import BackendError
from ascend_eval.models.base import CrossScoreRequest, EmbedKind, EmbedRequest, Request
from ascend_eval.similarity import top_k


def ask(engine: Engine, requests: Sequence[Request], stage: str) -> list[Any]:
    """Answer `requests` through the engine (cache, dedupe, one backend call per group), in order.

    Raises:
        BackendError: a backend failed for one of them (what answered is cached; a re-run resumes).
    """
    if not requests:
        return []

    def plan() -> Any:
        return (yield list(requests))

    outcome = engine.run({stage: plan()})[stage]
    if isinstance(outcome, PlanError):
        raise BackendError(
            f"RAG pipeline stage {stage!r} failed: {outcome.reason}. Answered requests are cached; fix the "
            "model or endpoint and run again to resume."
        )
    return list(outcome)


class EmbeddingMemo:
    """Embeddings by (model id, kind, text), kept in this process, oldest dropped past `max_items`."""

    def __init__(self, max_items: int = 200_000) -> None:
        self.max_items = max_items
        self._items: OrderedDict[tuple[str, str, str], NDArray[np.float32]] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: tuple[str, str, str]) -> NDArray[np.float32] | None:
        with self._lock:
            return self._items.get(key)

    def put(self, key: tuple[str, str, str], vector: NDArray[np.float32]) -> None:
        with self._lock:
            self._items[key] = vector
            while len(self._items) > self.max_items:
                self._items.popitem(last=False)

    def __len__(self) -> int:
        return len(self._items)

    def clear(self) -> None:
        with self._lock:
            self._items.clear()


EMBEDDINGS = EmbeddingMemo()
"""The process-wide memo used by `embed_texts` by default."""


def embed_texts(
    engine: Engine,
    batches: Sequence[tuple[Sequence[str], EmbedKind]],
    *,
    memo: EmbeddingMemo | None = None,
) -> list[NDArray[np.float32]]:
    """Embed several lists of texts (each with its kind) in one engine round.

    Returns:
        One float32 `[len(texts), dim]` matrix per batch.
    """
    memo = EMBEDDINGS if memo is None else memo
    models = engine.backends
    model_id = models.model_id("embedder") if models.has("embedder") else ""
    missing: dict[tuple[str, str, str], EmbedRequest] = {}
    for texts, kind in batches:
        for text in texts:
            key = (model_id, kind, text)
            if key not in missing and memo.get(key) is None:
                missing[key] = EmbedRequest(text, kind)
    for key, vector in zip(missing, ask(engine, list(missing.values()), "embed"), strict=True):
        memo.put(key, np.asarray(vector, dtype=np.float32))
    out = []
    for texts, kind in batches:
        rows = [memo.get((model_id, kind, t)) for t in texts]
        out.append(np.stack(rows) if rows else np.zeros((0, 0), dtype=np.float32))  # type: ignore[arg-type]
    return out


def rerank(
    engine: Engine, queries: Sequence[str], candidates: Sequence[Sequence[str]], k: int
) -> list[list[int]]:
    """Reorder each query's candidate passages by cross-encoder score and keep the best `k`.

    All (query, passage) pairs go to the reranker in one engine round. Ties keep retrieval order.

    Returns:
        Per query, indices into its candidates, best first.
    """
    pairs = [
        CrossScoreRequest(q, p) for q, passages in zip(queries, candidates, strict=True) for p in passages
    ]
    scores = ask(engine, pairs, "rerank")
    out, pos = [], 0
    for passages in candidates:
        mine = np.asarray(scores[pos : pos + len(passages)], dtype=np.float32)
        pos += len(passages)
        out.extend(top_k(mine[None, :], k))
    return out
