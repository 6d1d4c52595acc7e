"""`TorchJudgeConfig`: how to build a `TorchJudge`, and the import of its engine."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ascend_eval.models.base import LOOP_GUARD
from ascend_eval.models.checks import BATCH_SIZE
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
    """"auto", "float32", "bfloat16" or "float16". "auto" is bfloat16 where the device computes it natively
    (an Ascend NPU such as the 910B, a CUDA GPU with bf16, a CPU with AMX or AVX512-BF16), else float32;
    `DeviceInfo.default_dtype` decides. bfloat16 label probabilities stay within 0.05 (absolute) of float32
    ones on our tests' models; greedy text may part from float32's where two tokens are near-tied."""
    token_budget: int = 16384
    """Padded tokens per forward batch (rows x longest row). In `generate` the rows decoding together
    count their prompts plus their `max_tokens`, which bounds the batch's KV cache (a shared prompt prefix
    still counts per row: the cache holds it per row while decoding); a waiting row joins when a finished
    one leaves room. A `classify` batch counts the prefix its rows are served from once (longest prefix +
    rows x longest rest), though its KV cache still holds rows x full length. Lower it if a batch runs out
    of memory."""
    max_batch_size: int = 64
    """Most rows in one batch, whatever the budget; at most 4,096 (`checks.BATCH_SIZE`)."""
    max_model_len: int | None = None
    """Longest prompt plus output, in tokens; None means the model's `max_position_embeddings`. A prompt
    that does not fit fails alone (with an error in its result); generation stops there with "length"."""
    trust_remote_code: bool = False
    """Allow a checkpoint's own Python code to run (transformers' `trust_remote_code`)."""
    min_shared_prefix: int = 32
    """Fewest tokens a run of prompt tokens that several prompts share (the preamble, a sample's block)
    must have to run once in a prompt pass of its own, its KV cache then read by every prompt beneath it;
    0 turns prefix sharing off. A shorter shared run is computed again with what follows it."""
    loop_guard: int = LOOP_GUARD
    """Stop generating for a row whose output ends in the same run of tokens three times in a row, once
    the repeats cover at least this many tokens (finish_reason "repetition": the prompts read its JSON up
    to the last complete list item, each repeated item once, or fail with that reason); 0 turns it off.
    A small judge that starts repeating a statement rarely stops before its cap, and those rows otherwise
    decode alone to the cap while the rest of the batch waits. The text it keeps is the start of what it
    would have written without the guard."""
    speculative_tokens: int = 64
    """Decoding drafts tokens from each row's own text (prompt lookup, see `speculate`) and verifies them
    in the same forward pass, while the batch's rows times (1 + draft) stay within this many tokens per
    step; 0 turns it off. Each row's tokens are those plain decoding picks (greedy, or sampled with the
    row's own seeded numbers). It pays while a step is bound by reading the weights (small batches, a
    call's tail); raise it on a GPU or NPU, where that holds for larger batches."""
    kv_cache_bytes: int = 1 << 30
    """Bytes of shared-prefix KV cache kept between calls (1 GiB), least recently used dropped first, so
    that a later call whose prompts start the same (the preamble, a sample's block) does not compute them
    again; 0 keeps none past the prompt pass that needs it. A call holds what its own prompts still need
    on top of it."""

    def __post_init__(self) -> None:
        check_judge_model("TorchJudgeConfig", self.model)
        if self.dtype not in _DTYPES:
            raise ConfigError(f"TorchJudgeConfig.dtype={self.dtype!r} is not one of {list(_DTYPES)}.")
        if self.token_budget < 1:
            raise ConfigError(f"TorchJudgeConfig.token_budget must be >= 1, got {self.token_budget}.")
        BATCH_SIZE.check("TorchJudgeConfig.max_batch_size", self.max_batch_size)
        if self.min_shared_prefix < 0:
            raise ConfigError(
                f"TorchJudgeConfig.min_shared_prefix must be >= 0 (0 turns prefix sharing off), "
                f"got {self.min_shared_prefix}."
            )
        if self.loop_guard < 0:
            raise ConfigError(
                f"TorchJudgeConfig.loop_guard must be >= 0 (0 turns it off), got {self.loop_guard}."
            )
        if self.speculative_tokens < 0:
            raise ConfigError(
                "TorchJudgeConfig.speculative_tokens must be >= 0 (0 turns it off), "
                f"got {self.speculative_tokens}."
            )
        if self.kv_cache_bytes < 0:
            raise ConfigError(f"TorchJudgeConfig.kv_cache_bytes must be >= 0, got {self.kv_cache_bytes}.")
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
