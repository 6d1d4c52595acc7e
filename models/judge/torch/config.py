"""`TorchJudgeConfig`: how to build a `TorchJudge`, and the import of its engine."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ascend_eval.models.errors import ConfigError, MissingDependencyError
from ascend_eval.models.judge.base import check_judge_model

__all__ = ["TorchJudgeConfig", "cache_param", "forward_params", "import_engine"]

_DTYPES = ("auto", "float32", "bfloat16", "float16")


@dataclass(frozen=True)
class TorchJudgeConfig:
    """How to build a `TorchJudge`."""

    model: str | Path
    """A local Hugging Face checkpoint directory, or a `.gguf` file (converted once to a cached checkpoint
    by `checkpoint_from_gguf`). Nothing is downloaded."""
    device: str | None = None
    """"auto", "cpu", "cuda[:N]" or "npu[:N]"; None defers to `ASCEND_EVAL_DEVICE`, then auto-detection."""
    dtype: str = "auto"
    """"auto" (bfloat16 on NPU and CUDA, float32 on the CPU), "float32", "bfloat16" or "float16"."""
    token_budget: int = 16384
    """Padded tokens per forward batch (rows x longest row). For `generate` a row counts its prompt plus
    its `max_tokens`, which bounds the batch's KV cache (a shared prompt prefix still counts per row: the
    cache holds it per row once decoding starts). A `classify` batch that shares a prompt prefix counts it
    once (prefix + rows x longest suffix), though its KV cache still holds rows x full length. Lower it if a
    batch runs out of memory."""
    max_batch_size: int = 64
    """Most rows in one batch, whatever the budget."""
    max_model_len: int | None = None
    """Longest prompt plus output, in tokens; None means the model's `max_position_embeddings`. A prompt
    that does not fit fails alone (with an error in its result); generation stops there with "length"."""
    trust_remote_code: bool = False
    """Allow a checkpoint's own Python code to run (transformers' `trust_remote_code`)."""
    min_shared_prefix: int = 32
    """Fewest prompt tokens the rows of a `classify` or `generate` batch must share for that prefix to run
    once, its KV cache expanded to every row; 0 turns prefix sharing off. Below it the extra forward call
    costs more than the rows save."""

    def __post_init__(self) -> None:
        check_judge_model("TorchJudgeConfig", self.model)
        if self.dtype not in _DTYPES:
            raise ConfigError(f"TorchJudgeConfig.dtype={self.dtype!r} is not one of {list(_DTYPES)}.")
        if self.token_budget < 1:
            raise ConfigError(f"TorchJudgeConfig.token_budget must be >= 1, got {self.token_budget}.")
        if self.max_batch_size < 1:
            raise ConfigError(f"TorchJudgeConfig.max_batch_size must be >= 1, got {self.max_batch_size}.")
        if self.min_shared_prefix < 0:
            raise ConfigError(
                f"TorchJudgeConfig.min_shared_prefix must be >= 0 (0 turns prefix sharing off), "
                f"got {self.min_shared_prefix}."
            )
        if self.max_model_len is not None and self.max_model_len < 2:
            raise ConfigError(
                f"TorchJudgeConfig.max_model_len must be >= 2 or None, got {self.max_model_len}."
            )


def import_engine() -> tuple[Any, Any]:
    try:
        import torch
        import transformers
    except ImportError as e:
        raise MissingDependencyError(
            f"TorchJudge needs torch and transformers ({e}). Install them with "
            "`pip install 'ascend-eval[torch]'` and the torch build for your accelerator."
        ) from e
    return torch, transformers


def forward_params(model: Any) -> set[str]:
    import inspect

    return set(inspect.signature(model.forward).parameters)


def cache_param(model: Any) -> str | None:
    """The forward argument that takes a KV cache, or None where the model takes none."""
    params = forward_params(model)
    if "use_cache" not in params:
        return None
    # transformers 5 renamed `past_key_values` to `cache`; older releases (>= 4.56) take the old name.
    return next((n for n in ("cache", "past_key_values") if n in params), None)
