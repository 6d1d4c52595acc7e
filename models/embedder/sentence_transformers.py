"""`TorchEmbedder`: a local sentence-transformers model behind the `Embedder` protocol.

The model is a directory on disk (no hub access: `local_files_only=True`), placed on the device that
`resolve_device` picks. sentence-transformers does the batching: it sorts texts by length, longest first,
so each batch pads to similar lengths, and hands results back in input order.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

from ascend_eval.models.base import EmbedKind
from ascend_eval.models.checks import (
    BATCH_SIZE,
    check_model_dir,
    device_spec,
    embed_texts,
    model_path,
    positive_int,
)
from ascend_eval.models.device import Precision, resolve_device
from ascend_eval.models.errors import BackendError, ConfigError, MissingDependencyError
from ascend_eval.models.lazy import LazyEmbedder
from ascend_eval.models.registry import lazy_local, register
from ascend_eval.models.spec import ModelSpec
from ascend_eval.models.weights.paths import local_model_id

logger = logging.getLogger(__name__)

_DOCUMENT_PROMPT_NAMES = ("document", "passage")


def import_sentence_transformers() -> Any:
    """The `sentence_transformers` module, imported on first use (with torch and transformers: ~5 s)."""
    try:
        import sentence_transformers
    except ImportError as e:
        raise MissingDependencyError(
            "TorchEmbedder and TorchReranker need sentence-transformers. Install them with "
            "`pip install 'ascend-eval[torch]'`."
        ) from e
    return sentence_transformers


def model_prompts(path: Path) -> dict[str, str]:
    """The prompts saved in a directory's config_sentence_transformers.json ({} if none)."""
    file = Path(path) / "config_sentence_transformers.json"
    if not file.is_file():
        return {}
    try:
        prompts = json.loads(file.read_text(encoding="utf-8")).get("prompts") or {}
    except (json.JSONDecodeError, AttributeError) as e:
        raise ConfigError(
            f"{file} is not a valid sentence-transformers config ({e}). Fix or delete it."
        ) from e
    return {k: v for k, v in prompts.items() if isinstance(k, str) and isinstance(v, str)}


def _max_positions(model: Any) -> int | None:
    """The position limit of a SentenceTransformer's first (transformer) module, if it has one."""
    first = model[0]
    # `config` on the module is sentence-transformers >= 6; `auto_model.config` is older releases.
    for holder in (first, getattr(first, "auto_model", None)):
        n = getattr(getattr(holder, "config", None), "max_position_embeddings", None)
        if isinstance(n, int):
            return n
    return None


def loaded_precision(model: Any) -> Precision:
    """The dtype a loaded sentence-transformers model computes in: its weights' (float32 unless the
    checkpoint's loader chose otherwise), which every device computes."""
    dtype = str(next(model.parameters()).dtype).removeprefix("torch.")
    return Precision(dtype, "sentence-transformers' loading dtype (float32 runs on every device)")


def resolve_prompts(path: Path, query_prompt: str | None, document_prompt: str | None) -> dict[str, str]:
    """The prompt prepended per kind: the configured one, else the one the model directory saved, else ""."""
    saved = model_prompts(path)
    document_saved = next((saved[k] for k in _DOCUMENT_PROMPT_NAMES if saved.get(k)), "")
    return {
        "query": query_prompt if query_prompt is not None else saved.get("query", ""),
        "document": document_prompt if document_prompt is not None else document_saved,
    }


@dataclass(frozen=True)
class TorchEmbedderConfig:
    """How to load and run a `TorchEmbedder`."""

    model: Path | str
    """A local sentence-transformers directory (modules.json, config.json, weights, tokenizer files)."""
    device: str | None = None
    """"auto", "cpu", "cuda[:N]" or "npu[:N]"; None defers to ASCEND_EVAL_DEVICE, then auto-detection."""
    batch_size: int = 64
    """Texts per forward pass; at most 4,096 (`checks.BATCH_SIZE`)."""
    query_prompt: str | None = None
    """Prepended to texts embedded with kind="query". None takes the model's own "query" prompt from its
    config_sentence_transformers.json (none if it has none); "" forces no prompt."""
    document_prompt: str | None = None
    """Prepended to texts embedded with kind="document". None takes the model's "document" prompt, else its
    "passage" prompt (none if it has neither); "" forces no prompt."""
    max_seq_length: int | None = None
    """Tokens per text (longer texts are truncated); None keeps the model's own setting."""

    def __post_init__(self) -> None:
        object.__setattr__(self, "model", model_path(self.model))
        BATCH_SIZE.check("batch_size", self.batch_size)
        for name in ("query_prompt", "document_prompt"):
            value = getattr(self, name)
            if value is not None and not isinstance(value, str):
                raise ConfigError(f"{name} must be a string or None, got {value!r}.")
        positive_int("max_seq_length", self.max_seq_length, optional=True)
        device_spec(self.device)


class TorchEmbedder:
    """A sentence-transformers embedding model run with torch on the resolved device.

    Attributes:
        model_id: `<directory name>@<content hash>`, see `local_model_id`.
        dim: the embedding size.
        device: where the model runs (`DeviceInfo`).
        precision: the dtype it computes in (sentence-transformers loads float32 weights), and why.
        prompts: the prompt applied per kind, after resolving the config against the model's own.
    """

    @property
    def tokenizer(self) -> Any:
        """The model's own (fast) tokenizer: what token-unit chunking counts with."""
        return self._model.tokenizer

    def __init__(self, config: TorchEmbedderConfig) -> None:
        """Load the model.

        Raises:
            ConfigError: the directory is missing or not a model, or max_seq_length exceeds the model's limit.
            MissingDependencyError: sentence-transformers (or the requested device's runtime) is missing.
            BackendError: sentence-transformers could not load the directory.
        """
        self.config = config
        path = check_model_dir(config.model, what="TorchEmbedder")
        self.device = resolve_device(config.device)
        self.model_id = local_model_id(path)
        self.prompts = resolve_prompts(path, config.query_prompt, config.document_prompt)
        st = import_sentence_transformers()
        self.device.activate()  # the runtime's context on this device, not on device 0
        try:
            self._model = st.SentenceTransformer(
                str(path), device=self.device.torch_device, local_files_only=True
            )
        except Exception as e:  # the engine raises many types; the cause is kept
            raise BackendError(
                f"sentence-transformers could not load {str(path)!r} on {self.device.describe()}: {e}. "
                "Check that the directory is a complete sentence-transformers model."
            ) from e
        if config.max_seq_length is not None:
            limit = _max_positions(self._model)
            if limit is not None and config.max_seq_length > limit:
                raise ConfigError(
                    f"max_seq_length={config.max_seq_length} exceeds the {limit} positions of "
                    f"{self.model_id}. Use at most {limit}."
                )
            self._model.max_seq_length = config.max_seq_length
        # get_embedding_dimension is sentence-transformers >= 6; the older name warns there.
        get_dim = (
            getattr(self._model, "get_embedding_dimension", None)
            or self._model.get_sentence_embedding_dimension
        )
        dim = get_dim()
        if dim is None:
            raise BackendError(
                f"{self.model_id} does not report an embedding size; it has no pooling module."
            )
        self.dim = int(dim)
        self.precision = loaded_precision(self._model)
        logger.info(
            "Loaded embedder %s on %s (dim %d, max_seq_length %s, prompts %r)",
            self.model_id,
            self.device.describe(),
            self.dim,
            self._model.max_seq_length,
            self.prompts,
        )

    @property
    def max_seq_length(self) -> int | None:
        """Tokens per text after truncation."""
        return self._model.max_seq_length

    def embed(self, texts: Sequence[str], *, kind: EmbedKind = "document") -> NDArray[np.float32]:
        """Embed `texts` with the prompt for `kind`.

        Args:
            texts: any number of strings; sentence-transformers sorts them longest first into batches of
                `batch_size` and restores input order.
            kind: "query" or "document"; selects the prompt.

        Returns:
            float32 `[len(texts), dim]`, each row L2-normalised, in input order; `[0, dim]` for no texts.

        Raises:
            ConfigError: `kind` is not "query" or "document".
            DataError: `texts` is a single string or holds a non-string.
        """
        texts = embed_texts(texts, kind)
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        vectors = self._model.encode(
            texts,
            prompt=self.prompts[kind],  # explicit, even when "", so a saved default_prompt_name never applies
            batch_size=self.config.batch_size,
            show_progress_bar=False,
            convert_to_numpy=True,
            normalize_embeddings=True,
        )
        return np.ascontiguousarray(vectors, dtype=np.float32).reshape(len(texts), self.dim)


@register("embedder", "torch")
def build_torch_embedder(spec: ModelSpec) -> LazyEmbedder:
    """A local embedder on the torch runtime, loaded on its first request."""
    return lazy_local(spec, LazyEmbedder, TorchEmbedderConfig, TorchEmbedder)
