"""`VllmReranker`: a cross-encoder (a *ForSequenceClassification checkpoint with one label) run with vLLM's
pooling runner through `LLM.score`.

vLLM pairs and tokenises each (query, passage) itself, token types included, and applies the model's
activation (a sigmoid for one label, as sentence-transformers' `CrossEncoder` does) unless "none" is asked
for. A pair longer than the model's positions is cut to fit from its end (sentence-transformers would cut
the longer of the two texts instead), so scores agree on pairs that fit.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from ascend_eval.models.checks import check_model_dir, score_pairs
from ascend_eval.models.errors import BackendError, ConfigError
from ascend_eval.models.lazy import LazyReranker
from ascend_eval.models.registry import lazy_local, register
from ascend_eval.models.reranker.cross_encoder import Activation, is_cross_encoder
from ascend_eval.models.spec import ModelSpec
from ascend_eval.models.vllm_runtime import VllmEngineConfig, import_vllm, start_engine, stop_engine
from ascend_eval.models.weights.paths import local_model_id

__all__ = ["VllmReranker", "VllmRerankerConfig", "build_vllm_reranker"]

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class VllmRerankerConfig(VllmEngineConfig):
    """How to build a `VllmReranker`; `model` is a local cross-encoder directory. `max_model_len` bounds
    the tokens of a (query, passage) pair (None: the model's own limit)."""

    activation: Activation = "sigmoid"
    """"sigmoid" maps the logit to (0, 1); "none" returns the raw logit."""

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.activation not in ("sigmoid", "none"):
            raise ConfigError(f"activation={self.activation!r}; valid: 'sigmoid', 'none'.")


class VllmReranker:
    """A cross-encoder on vLLM, implementing the `Reranker` protocol.

    Attributes:
        model_id: `<directory name>@<content hash>`, the same as `TorchReranker` gives for the directory.
        device: where the model runs.
        precision: the dtype it computes in, and why.
    """

    def __init__(self, config: VllmRerankerConfig) -> None:
        """Start the engine.

        Raises:
            ConfigError: the directory is not a trained cross-encoder (vLLM cannot add a random head, as
                sentence-transformers does).
            MissingDependencyError: vLLM is not installed.
            BackendError: vLLM could not load the directory.
        """
        self.config = config
        path = check_model_dir(config.model, what="VllmReranker")
        if not is_cross_encoder(path):
            raise ConfigError(
                f"VllmReranker model={str(path)!r} has no *ForSequenceClassification architecture in its "
                "config.json, so it is not a cross-encoder. Pass a trained cross-encoder directory (or use "
                "the torch backend, which loads other models with a random head)."
            )
        self.model_id = local_model_id(path)
        vllm = import_vllm()
        self.llm, self.device, self.precision = start_engine(config, "VllmReranker", runner="pooling")
        self._params: Any = None
        if config.activation == "none":
            self._params = vllm.PoolingParams(use_activation=False)
        logger.info("Loaded reranker %s on vLLM on %s", self.model_id, self.device.describe())

    def score(self, pairs: Sequence[tuple[str, str]]) -> NDArray[np.float32]:
        """Score each (query, passage) pair.

        Returns:
            float32 `[len(pairs)]` in input order: probabilities with activation "sigmoid", logits with
            "none".

        Raises:
            DataError: a pair is not two strings.
            BackendError: vLLM failed.
        """
        items = score_pairs(pairs)
        if not items:
            return np.zeros((0,), dtype=np.float32)
        try:
            outputs = self.llm.score(
                [q for q, _ in items],
                [p for _, p in items],
                use_tqdm=False,
                pooling_params=self._params,
                tokenization_kwargs={"truncation": True},
            )
        except Exception as e:  # vLLM raises many types; the cause is kept
            raise BackendError(
                f"Reranker {self.model_id} failed in vLLM on {len(items)} pairs on {self.device.describe()}: "
                f"{type(e).__name__}: {e}"
            ) from e
        return np.asarray([o.outputs.score for o in outputs], dtype=np.float32).reshape(len(items))

    def close(self) -> None:
        """Shut the engine down and free its memory."""
        llm = self.__dict__.pop("llm", None)
        if llm is not None:
            stop_engine(llm, self.device)


@register("reranker", "vllm")
def build_vllm_reranker(spec: ModelSpec) -> LazyReranker:
    """A local reranker on the vLLM engine, loaded on its first request."""
    return lazy_local(spec, LazyReranker, VllmRerankerConfig, VllmReranker, vllm=True)
