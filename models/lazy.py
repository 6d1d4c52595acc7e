"""Local models that load their weights when the first request reaches them, one wrapper per role.

Cache keys need only a model's identity, which comes from its files, so a run whose requests are all
cached (a finished run re-opened, or a resumed one past a model's last round) never loads that model.
Each wrapper implements its own role's protocol and nothing else, so a lazy embedder is refused where a
judge is wanted before anything loads.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Sequence
from typing import Any, ClassVar, Generic, TypeVar

from ascend_eval.models.base import (
    ClassifyRequest,
    ClassifyResult,
    Embedder,
    EmbedKind,
    GenerateRequest,
    GenerateResult,
    Judge,
    Reranker,
    Role,
)
from ascend_eval.models.errors import ConfigError

__all__ = ["LazyEmbedder", "LazyJudge", "LazyModel", "LazyReranker", "is_loaded", "runtime_of"]

logger = logging.getLogger(__name__)

_LOADING = threading.Lock()

T = TypeVar("T", Judge, Embedder, Reranker)


class LazyModel(Generic[T]):
    """A local model runtime built by `build` on first use.

    Args:
        model_id: the identity the runtime will have (`local_model_id` of its files), known now.
        build: makes the runtime (loads the weights).
    """

    role: ClassVar[Role]

    def __init__(self, model_id: str, build: Callable[[], T]) -> None:
        self.model_id = model_id
        self._build = build
        self._runtime: T | None = None

    @property
    def loaded(self) -> bool:
        """Whether the weights are loaded."""
        return self._runtime is not None

    def load(self) -> T:
        """The runtime, loading it now if it is not yet.

        Raises:
            ConfigError: the loaded model's identity is not the one its requests were keyed with.
        """
        if self._runtime is not None:
            return self._runtime
        # One load at a time in the process: the engine calls each backend from its own thread, and
        # model loading (transformers' empty-weight init, torch's default dtype) patches global state.
        with _LOADING:
            if self._runtime is not None:  # another thread loaded it while this one waited
                return self._runtime
            started = time.perf_counter()
            runtime = self._build()
            if runtime.model_id != self.model_id:  # the identity the cache was keyed with must hold
                raise ConfigError(
                    f"{self.role} loaded as {runtime.model_id!r}, expected {self.model_id!r}: "
                    "the model files changed while loading. Run again."
                )
            self._runtime = runtime
            logger.info("loaded %s %s in %.1fs", self.role, self.model_id, time.perf_counter() - started)
        return self._runtime

    def close(self) -> None:
        """Free the runtime if it was loaded (a later request loads it again)."""
        runtime, self._runtime = self._runtime, None
        close = getattr(runtime, "close", None)
        if close is not None:
            close()

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.model_id!r}, loaded={self.loaded})"


class LazyJudge(LazyModel[Judge]):
    """A local `Judge` that loads on its first non-empty request."""

    role = "judge"

    def generate(self, requests: Sequence[GenerateRequest]) -> list[GenerateResult]:
        return self.load().generate(requests) if requests else []

    def classify(self, requests: Sequence[ClassifyRequest]) -> list[ClassifyResult]:
        return self.load().classify(requests) if requests else []


class LazyEmbedder(LazyModel[Embedder]):
    """A local `Embedder` that loads on its first call."""

    role = "embedder"

    def embed(self, texts: Sequence[str], *, kind: EmbedKind = "document") -> Any:
        return self.load().embed(texts, kind=kind)


class LazyReranker(LazyModel[Reranker]):
    """A local `Reranker` that loads on its first call."""

    role = "reranker"

    def score(self, pairs: Sequence[tuple[str, str]]) -> Any:
        return self.load().score(pairs)


def is_loaded(model: Any) -> bool:
    """Whether `model` is ready without loading anything (every runtime but an unloaded lazy one)."""
    return not isinstance(model, LazyModel) or model.loaded


def runtime_of(model: Any) -> Any:
    """The runtime itself: a lazy model loads and is unwrapped; anything else is returned as it is."""
    return model.load() if isinstance(model, LazyModel) else model
