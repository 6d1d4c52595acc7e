"""`VllmEmbedder`: a sentence-transformers embedding model run with vLLM's pooling runner.

vLLM reads the directory's sentence-transformers files (modules.json: the pooling and normalisation). The
texts are tokenised here, with the model's own tokenizer truncating at its `max_seq_length` as
sentence-transformers does, and reach vLLM as token ids, so both backends embed the same tokens. The
prompt per kind ("query: " for e5) is resolved exactly as `TorchEmbedder` resolves it.
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
from ascend_eval.models.checks import check_model_dir, embed_texts, positive_int
from ascend_eval.models.embedder.sentence_transformers import resolve_prompts
from ascend_eval.models.errors import BackendError, ConfigError
from ascend_eval.models.lazy import LazyEmbedder
from ascend_eval.models.registry import lazy_local, register
from ascend_eval.models.spec import ModelSpec
from ascend_eval.models.vllm_runtime import VllmEngineConfig, load_tokenizer, start_engine, stop_engine
from ascend_eval.models.weights.paths import local_model_id

__all__ = ["VllmEmbedder", "VllmEmbedderConfig", "build_vllm_embedder"]

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class VllmEmbedderConfig(VllmEngineConfig):
    """How to build a `VllmEmbedder`; `model` is a local sentence-transformers directory."""

    query_prompt: str | None = None
    """As `TorchEmbedderConfig.query_prompt`: None takes the model's saved "query" prompt."""
    document_prompt: str | None = None
    """As `TorchEmbedderConfig.document_prompt`: None takes the saved "document" or "passage" prompt."""
    max_seq_length: int | None = None
    """Tokens per text (longer texts are truncated); None keeps the model's sentence-transformers setting."""

    def __post_init__(self) -> None:
        super().__post_init__()
        for name in ("query_prompt", "document_prompt"):
            value = getattr(self, name)
            if value is not None and not isinstance(value, str):
                raise ConfigError(f"{name} must be a string or None, got {value!r}.")
        positive_int("max_seq_length", self.max_seq_length, optional=True)


def saved_max_seq_length(path: Path) -> int | None:
    """The `max_seq_length` in a directory's sentence_bert_config.json (None if it has none)."""
    file = Path(path) / "sentence_bert_config.json"
    if not file.is_file():
        return None
    try:
        value = json.loads(file.read_text(encoding="utf-8")).get("max_seq_length")
    except (json.JSONDecodeError, AttributeError) as e:
        raise ConfigError(
            f"{file} is not a valid sentence-transformers config ({e}). Fix or delete it."
        ) from e
    return value if isinstance(value, int) and value > 0 else None


class VllmEmbedder:
    """A sentence-transformers embedding model on vLLM, implementing the `Embedder` protocol.

    Attributes:
        model_id: `<directory name>@<content hash>`, the same as `TorchEmbedder` gives for the directory.
        dim: the embedding size.
        device: where the model runs.
        precision: the dtype it computes in, and why.
        max_seq_length: tokens per text after truncation.
        prompts: the prompt applied per kind.
    """

    def __init__(self, config: VllmEmbedderConfig) -> None:
        """Start the engine.

        Raises:
            ConfigError: the directory is not a model, or max_seq_length exceeds the model's limit.
            MissingDependencyError: vLLM is not installed.
            BackendError: vLLM could not load the directory.
        """
        self.config = config
        path = check_model_dir(config.model, what="VllmEmbedder")
        self.model_id = local_model_id(path)
        self.prompts = resolve_prompts(path, config.query_prompt, config.document_prompt)
        wanted = config.max_seq_length or saved_max_seq_length(path)
        extra: dict[str, Any] = {"runner": "pooling"}
        if config.max_model_len is None and wanted is not None:
            extra["max_model_len"] = wanted
        self.llm, self.device, self.precision = start_engine(config, "VllmEmbedder", **extra)
        limit = int(self.llm.llm_engine.model_config.max_model_len)
        if wanted is not None and wanted > limit:
            raise ConfigError(
                f"max_seq_length={wanted} exceeds the {limit} positions of {self.model_id}. "
                f"Use at most {limit}."
            )
        self.max_seq_length = wanted or limit
        self.tokenizer = load_tokenizer(path, config.trust_remote_code)
        probe = self._embed_ids([self._encode([""])[0]])
        self.dim = int(probe.shape[1])
        logger.info(
            "Loaded embedder %s on vLLM on %s (dim %d, max_seq_length %d, prompts %r)",
            self.model_id,
            self.device.describe(),
            self.dim,
            self.max_seq_length,
            self.prompts,
        )

    def _encode(self, texts: list[str]) -> list[list[int]]:
        enc = self.tokenizer(texts, truncation=True, max_length=self.max_seq_length)
        return [list(ids) for ids in enc["input_ids"]]

    def _embed_ids(self, prompts: list[list[int]]) -> NDArray[np.float32]:
        try:
            outputs = self.llm.embed([{"prompt_token_ids": p} for p in prompts], use_tqdm=False)
        except Exception as e:  # vLLM raises many types; the cause is kept
            raise BackendError(
                f"Embedder {self.model_id} failed in vLLM on {len(prompts)} texts on "
                f"{self.device.describe()}: {type(e).__name__}: {e}"
            ) from e
        vectors = np.asarray([o.outputs.embedding for o in outputs], dtype=np.float32)
        norms = np.linalg.norm(vectors, axis=1, keepdims=True)
        return np.ascontiguousarray(vectors / np.where(norms == 0, 1, norms), dtype=np.float32)

    def embed(self, texts: Sequence[str], *, kind: EmbedKind = "document") -> NDArray[np.float32]:
        """Embed `texts` with the prompt for `kind`.

        Returns:
            float32 `[len(texts), dim]`, each row L2-normalised, in input order; `[0, dim]` for no texts.

        Raises:
            ConfigError: `kind` is not "query" or "document".
            DataError: `texts` is a single string or holds a non-string.
            BackendError: vLLM failed.
        """
        texts = embed_texts(texts, kind)
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        prompt = self.prompts[kind]
        return self._embed_ids(self._encode([prompt + t for t in texts]))

    def close(self) -> None:
        """Shut the engine down and free its memory."""
        llm = self.__dict__.pop("llm", None)
        if llm is not None:
            stop_engine(llm, self.device)


@register("embedder", "vllm")
def build_vllm_embedder(spec: ModelSpec) -> LazyEmbedder:
    """A local embedder on the vLLM engine, loaded on its first request."""
    return lazy_local(spec, LazyEmbedder, VllmEmbedderConfig, VllmEmbedder, vllm=True)
