"""The models one evaluation uses, by role: the engine sends each request to its role's model, and code
that needs more than answers to requests (the RAG pipeline: a model's identity, whether it is loaded, a
local embedder's tokenizer) asks the same object.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ascend_eval.errors import ConfigError
from ascend_eval.models.base import Embedder, Judge, Request, Reranker, Role
from ascend_eval.models.lazy import is_loaded, runtime_of


@dataclass(frozen=True)
class Backends:
    """The model runtimes one evaluation uses; a role no metric needs may be None."""

    judge: Judge | None = None
    embedder: Embedder | None = None
    reranker: Reranker | None = None

    def for_request(self, request: Request) -> Judge | Embedder | Reranker:
        """The model that answers `request`.

        Raises:
            ConfigError: no model is configured for the request's role.
        """
        backend = getattr(self, request.role)
        if backend is None:
            raise ConfigError(
                f"A metric sent a {type(request).__name__} but no {request.role} is configured. "
                f"Pass {request.role}=... to evaluate()."
            )
        return backend

    def has(self, role: Role) -> bool:
        """Whether a model is configured for `role`."""
        return getattr(self, role) is not None

    def model_id(self, role: Role) -> str:
        """The identity of `role`'s model (part of its requests' cache keys), known without loading it."""
        return self._configured(role).model_id

    def loaded(self, role: Role) -> bool:
        """Whether `role`'s model is ready without loading weights (false only for an unloaded local one)."""
        return is_loaded(self._configured(role))

    def runtime(self, role: Role) -> Any:
        """`role`'s model runtime itself, loaded now if it is a local model not loaded yet: for what only a
        runtime can tell, such as a local embedder's tokenizer. Requests still go through `Engine.run`."""
        return runtime_of(self._configured(role))

    def _configured(self, role: Role) -> Judge | Embedder | Reranker:
        model = getattr(self, role)
        if model is None:
            raise ConfigError(f"No {role} is configured for this engine. Pass {role}=... to evaluate().")
        return model  # type: ignore[no-any-return]
