"""`TorchReranker`: a local sentence-transformers `CrossEncoder` behind the `Reranker` protocol.

No trained cross-encoder installs offline here. A bi-encoder directory (e.g. all-MiniLM) still loads, with a
randomly initialised one-logit head: the code path is real, the scores are noise, and a WARNING says so.
sentence-transformers does the batching: it sorts pairs by length, longest first, and restores input order.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import numpy as np
from numpy.typing import NDArray

from ascend_eval.models.checks import (
    BATCH_SIZE,
    check_model_dir,
    device_spec,
    model_path,
    positive_int,
    score_pairs,
)
from ascend_eval.models.device import resolve_device
from ascend_eval.models.embedder.sentence_transformers import (
    import_sentence_transformers,
    loaded_precision,
)
from ascend_eval.models.errors import BackendError, ConfigError
from ascend_eval.models.lazy import LazyReranker
from ascend_eval.models.registry import lazy_local, register
from ascend_eval.models.spec import ModelSpec
from ascend_eval.models.weights.paths import local_model_id

logger = logging.getLogger(__name__)

Activation = Literal["sigmoid", "none"]
# Heads that sentence-transformers loads as trained scorers: a sequence-classification head, or a causal LM
# read through its "yes"/"no" logits.
_SCORING_ARCHITECTURES = ("ForSequenceClassification", "ForCausalLM")


def _architectures(path: Path) -> list[str]:
    file = path / "config.json"
    if not file.is_file():
        return []
    try:
        return list(json.loads(file.read_text(encoding="utf-8")).get("architectures") or [])
    except (json.JSONDecodeError, AttributeError) as e:
        raise ConfigError(
            f"{file} is not a valid transformers config ({e}). Fix it or point at another model."
        ) from e


def is_cross_encoder(path: Path) -> bool:
    """Whether the directory's checkpoint carries a trained scoring head (by its config's architectures)."""
    return any(a.endswith(_SCORING_ARCHITECTURES) for a in _architectures(Path(path)))


@dataclass(frozen=True)
class TorchRerankerConfig:
    """How to load and run a `TorchReranker`."""

    model: Path | str
    """A local cross-encoder directory (config.json with a *ForSequenceClassification architecture, weights,
    tokenizer). Any other transformers directory loads with a random head and a WARNING."""
    device: str | None = None
    """"auto", "cpu", "cuda[:N]" or "npu[:N]"; None defers to ASCEND_EVAL_DEVICE, then auto-detection."""
    batch_size: int = 64
    """Pairs per forward pass; at most 4,096 (`checks.BATCH_SIZE`)."""
    activation: Activation = "sigmoid"
    """"sigmoid" maps the logit to (0, 1); "none" returns the raw logit."""
    max_length: int | None = None
    """Tokens per (query, passage) pair; None keeps the model's own limit."""

    def __post_init__(self) -> None:
        object.__setattr__(self, "model", model_path(self.model))
        BATCH_SIZE.check("batch_size", self.batch_size)
        if self.activation not in ("sigmoid", "none"):
            raise ConfigError(f"activation={self.activation!r}; valid: 'sigmoid', 'none'.")
        positive_int("max_length", self.max_length, optional=True)
        device_spec(self.device)


class TorchReranker:
    """A sentence-transformers cross-encoder run with torch on the resolved device.

    Attributes:
        model_id: `<directory name>@<content hash>`, see `local_model_id`.
        device: where the model runs (`DeviceInfo`).
        precision: the dtype it computes in (sentence-transformers loads float32 weights), and why.
        trained: False when the directory had no scoring head and one was initialised at random.
    """

    def __init__(self, config: TorchRerankerConfig) -> None:
        """Load the model.

        Raises:
            ConfigError: the directory is missing or not a model, or its head has more than one label.
            MissingDependencyError: sentence-transformers (or the requested device's runtime) is missing.
            BackendError: sentence-transformers could not load the directory.
        """
        self.config = config
        path = check_model_dir(config.model, what="TorchReranker")
        self.device = resolve_device(config.device)
        self.model_id = local_model_id(path)
        self.trained = is_cross_encoder(path)
        if not self.trained:
            logger.warning(
                "%s is not a cross-encoder (config architectures %s): its scoring head is randomly "
                "initialised, so reranker scores are meaningless until a trained cross-encoder directory (a "
                "*ForSequenceClassification checkpoint) is given as the reranker model.",
                self.model_id,
                _architectures(path) or "missing",
            )
        st = import_sentence_transformers()
        import torch

        self.device.activate()  # the runtime's context on this device, not on device 0
        try:
            self._model = st.CrossEncoder(
                str(path),
                device=self.device.torch_device,
                local_files_only=True,
                max_length=config.max_length,
                # One logit per pair: what a trained reranker has, and what a random head must be given.
                num_labels=None if self.trained else 1,
            )
        except Exception as e:  # the engine raises many types; the cause is kept
            raise BackendError(
                f"sentence-transformers could not load {str(path)!r} as a cross-encoder on "
                f"{self.device.describe()}: {e}. Check that the directory is a complete model."
            ) from e
        if self._model.num_labels != 1:
            raise ConfigError(
                f"{self.model_id} has {self._model.num_labels} output labels; a reranker needs one score per "
                "pair. Use a cross-encoder trained for relevance (num_labels=1)."
            )
        self._activation = torch.nn.Sigmoid() if config.activation == "sigmoid" else torch.nn.Identity()
        self.precision = loaded_precision(self._model)
        logger.info("Loaded reranker %s on %s", self.model_id, self.device.describe())

    def score(self, pairs: Sequence[tuple[str, str]]) -> NDArray[np.float32]:
        """Score each (query, passage) pair.

        Args:
            pairs: any number of (query, passage) string pairs.

        Returns:
            float32 `[len(pairs)]` in input order: probabilities with activation "sigmoid", logits with
            "none".

        Raises:
            DataError: a pair is not two strings.
        """
        items = score_pairs(pairs)
        if not items:
            return np.zeros((0,), dtype=np.float32)
        scores = self._model.predict(
            [[q, p] for q, p in items],
            batch_size=self.config.batch_size,
            activation_fn=self._activation,
            show_progress_bar=False,
            convert_to_numpy=True,
        )
        return np.ascontiguousarray(scores, dtype=np.float32).reshape(len(items))


@register("reranker", "torch")
def build_torch_reranker(spec: ModelSpec) -> LazyReranker:
    """A local reranker on the torch runtime, loaded on its first request."""
    return lazy_local(spec, LazyReranker, TorchRerankerConfig, TorchReranker)
