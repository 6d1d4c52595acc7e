"""The device seam: the one place that decides where models run, and the only importer of `torch_npu`.

Order of precedence: an explicit argument, then the `ASCEND_EVAL_DEVICE` setting, then auto-detection
(an Ascend NPU if `torch_npu` imports and reports one, else CUDA, else the CPU). Everything device-specific
(synchronise, free cached memory, memory info) goes through the `DeviceInfo` returned here, so no other
module branches on the device type.
"""

from __future__ import annotations

import importlib
import os
import threading
from collections.abc import Iterator, Mapping
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass
from typing import Any, Literal

from ascend_eval.models.errors import ConfigError, MissingDependencyError

DeviceType = Literal["npu", "cuda", "cpu"]
DEVICE_ENV = "ASCEND_EVAL_DEVICE"
VISIBLE_ENV = {"npu": "ASCEND_RT_VISIBLE_DEVICES", "cuda": "CUDA_VISIBLE_DEVICES"}
START_METHOD_ENV = "VLLM_WORKER_MULTIPROC_METHOD"
"""vLLM's choice of how its engine and worker processes start ("fork", its default, or "spawn")."""
_ENV_LOCK = threading.RLock()
"""Held while an engine starts with narrowed visible devices, so that no device is resolved meanwhile."""


def _torch() -> Any:
    try:
        return importlib.import_module("torch")
    except ImportError as e:  # pragma: no cover - the test environment has torch
        raise MissingDependencyError(
            "The on-device runtimes need torch. Install the build for your accelerator, e.g. "
            "`pip install 'ascend-eval[torch]' torch==2.13.0` for the CPU."
        ) from e


def _import_torch_npu() -> Any | None:
    """Import torch_npu if it is installed; it registers the `npu` device type with torch."""
    try:
        return importlib.import_module("torch_npu")
    except ImportError:
        return None


@dataclass(frozen=True)
class Precision:
    """The dtype a model computes in, and why (recorded in a run's provenance)."""

    dtype: str
    reason: str


BF16_CUDA_CAPABILITY = (8, 0)
"""CUDA GPUs compute bfloat16 natively from compute capability 8.0 (Ampere); vLLM refuses bfloat16 below."""


@dataclass(frozen=True)
class DeviceInfo:
    """A resolved device, with the few device-specific operations the runtimes need."""

    type: DeviceType
    index: int | None = None
    visible: str | None = None
    """The value of ASCEND_RT_VISIBLE_DEVICES / CUDA_VISIBLE_DEVICES when resolved (None if unset)."""

    @property
    def torch_device(self) -> str:
        """The string torch accepts, e.g. "npu:0", "cuda:1" or "cpu"."""
        return self.type if self.index is None else f"{self.type}:{self.index}"

    @property
    def default_dtype(self) -> str:
        """The dtype for `dtype="auto"`: `precision().dtype`."""
        return self.precision().dtype

    def precision(self, capability: tuple[int, int] | None = None) -> Precision:
        """The dtype policy of `dtype="auto"`: bfloat16 where this chip computes it natively, else float16 on
        an accelerator (every Ascend NPU and CUDA GPU computes float16; the Atlas 300I / 310P and GPUs below
        compute capability 8.0 have no bfloat16, and vLLM refuses it there), and float32 on a CPU without
        AMX or AVX512-BF16 (a CPU's float16 is slow).

        Args:
            capability: a CUDA GPU's compute capability when the caller knows it without initialising CUDA
                (vLLM reads it through NVML); None asks torch.

        >>> DeviceInfo("cuda", 0).precision(capability=(7, 5)).dtype
        'float16'
        """
        if self.type == "cpu":
            if cpu_supports_bf16():
                return Precision("bfloat16", "CPU with AMX or AVX512-BF16: native bfloat16")
            return Precision("float32", "CPU without AMX or AVX512-BF16: bfloat16 would be emulated")
        if self.type == "cuda":
            return _cuda_precision(self, capability)
        return _npu_precision(self)

    @property
    def supports_bf16(self) -> bool:
        """Whether this device computes bfloat16 natively (`precision` says bfloat16)."""
        return self.precision().dtype == "bfloat16"

    def _module(self) -> Any:
        # torch.npu exists once torch_npu is imported; torch.cuda always exists.
        return getattr(_torch(), self.type)

    def synchronize(self) -> None:
        """Wait for this device's work (not device 0's: the index is passed)."""
        if self.type != "cpu":
            self._module().synchronize(self.torch_device)

    def activate(self) -> None:
        """Make this device the process's current one before a model moves to it, so that the runtime's
        context is made on it rather than on device 0 (torch.npu.set_device / torch.cuda.set_device)."""
        if self.type != "cpu" and self.index is not None:
            self._module().set_device(self.index)

    def initialized(self) -> bool:
        """Whether this process has initialised the accelerator's runtime (a forked child then cannot use
        it: torch_npu raises "Cannot re-initialize NPU in forked subprocess"). False on the CPU, and for an
        NPU while torch_npu is not even imported."""
        if self.type == "cpu" or (self.type == "npu" and _import_torch_npu() is None):
            return False
        try:
            return bool(self._module().is_initialized())
        except AttributeError:
            return False

    def chip_name(self) -> str | None:
        """The accelerator's name ("Ascend910B3", "Ascend310P3", "NVIDIA H100 ..."), None on the CPU or
        where the runtime cannot say."""
        if self.type == "cpu":
            return None
        try:
            return str(self._module().get_device_name(self.index or 0))
        except Exception:  # a driver that cannot answer
            return None

    def empty_cache(self) -> None:
        if self.type != "cpu":
            self._module().empty_cache()

    def mem_get_info(self) -> tuple[int, int] | None:
        """(free, total) bytes of device memory, or None on the CPU."""
        if self.type == "cpu":
            return None
        return tuple(self._module().mem_get_info(self.index or 0))  # type: ignore[return-value]

    def inference_mode(self) -> AbstractContextManager[Any]:
        return _torch().inference_mode()

    def engine_visible_env(self, count: int = 1) -> dict[str, str]:
        """The visible-devices setting that shows an engine which picks its own devices (vLLM, or vLLM with
        the vllm-ascend plugin) this device and the `count - 1` after it, as its devices 0 to count - 1.

        Such an engine always starts at its first visible device, so our index has to reach it through
        ASCEND_RT_VISIBLE_DEVICES / CUDA_VISIBLE_DEVICES. Indices count within the current setting, as
        everywhere here. {} on the CPU.

        >>> DeviceInfo("npu", 1, "4,5").engine_visible_env()
        {'ASCEND_RT_VISIBLE_DEVICES': '5'}
        >>> DeviceInfo("cuda", 0, None).engine_visible_env(2)
        {'CUDA_VISIBLE_DEVICES': '0,1'}
        >>> DeviceInfo("cpu").engine_visible_env()
        {}
        """
        if self.type == "cpu":
            return {}
        start = self.index or 0
        ids = [s.strip() for s in self.visible.split(",")] if self.visible else None
        wanted = range(start, start + count)
        chosen = ids[start : start + count] if ids is not None else [str(i) for i in wanted]
        if len(chosen) < count:
            raise ConfigError(
                f"{count} {self.type} device(s) from index {start} are wanted but only {len(ids or [])} are "
                f"visible ({VISIBLE_ENV[self.type]}={self.visible!r}). Use a lower index or fewer devices."
            )
        return {VISIBLE_ENV[self.type]: ",".join(chosen)}

    def describe(self) -> str:
        extra = f" ({VISIBLE_ENV[self.type]}={self.visible})" if self.visible is not None else ""
        return f"{self.torch_device}{extra}"


CPU_BF16_FLAGS = ("amx_bf16", "avx512_bf16")
"""/proc/cpuinfo flags of x86 CPUs that compute bfloat16 matmuls natively (Intel Sapphire Rapids and later:
AMX; Cooper Lake, AMD Zen 4 and later: AVX512-BF16); oneDNN runs torch's bfloat16 matmuls with them."""


def cpu_supports_bf16(cpuinfo: str | None = None) -> bool:
    """Whether the CPU computes bfloat16 natively, from the flags in `cpuinfo` (by default
    /proc/cpuinfo's text; no such file, as off Linux, means no).

    >>> cpu_supports_bf16("flags\t: fpu avx2 avx512f amx_bf16 amx_tile"), cpu_supports_bf16("flags: avx2")
    (True, False)
    """
    if cpuinfo is None:
        try:
            with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as f:
                cpuinfo = f.read()
        except OSError:
            return False
    for line in cpuinfo.splitlines():
        key, _, value = line.partition(":")
        if key.strip() in ("flags", "Features") and any(flag in value.split() for flag in CPU_BF16_FLAGS):
            return True
    return False


BF16_ASCEND_CHIPS = ("Ascend910B", "Ascend910_93", "Ascend950")
"""Ascend SoC names that compute bfloat16 (torch_npu: SoC version Ascend910B1 and later, i.e. the Atlas A2
and A3 series), used where torch_npu cannot be asked; the 910A/910ProA and the Atlas 300I (310P) compute
float16 only."""


def _cuda_precision(device: DeviceInfo, capability: tuple[int, int] | None) -> Precision:
    if capability is None:
        try:
            capability = tuple(_torch().cuda.get_device_capability(device.index or 0))  # type: ignore[assignment]
        except Exception as e:  # a driver that cannot answer: float16 runs on every CUDA GPU
            return Precision("float16", f"CUDA compute capability unknown ({e}): float16")
    major, minor = capability  # type: ignore[misc]
    if (major, minor) >= BF16_CUDA_CAPABILITY:
        return Precision("bfloat16", f"CUDA compute capability {major}.{minor} >= 8.0: native bfloat16")
    return Precision("float16", f"CUDA compute capability {major}.{minor} < 8.0: no native bfloat16")


def _npu_precision(device: DeviceInfo) -> Precision:
    # torch_npu's torch.npu.is_bf16_supported() asks the SoC; older builds lack it, and then the name says.
    try:
        ask = device._module().is_bf16_supported  # noqa: SLF001  # the seam's own helper
    except AttributeError:
        ask = None
    name = device.chip_name()
    chip = name or "the NPU"
    if ask is not None:
        try:
            native = bool(ask())
        except Exception as e:  # a driver that cannot answer: float16 runs on every Ascend NPU
            return Precision("float16", f"torch_npu could not say whether {chip} has bfloat16 ({e})")
        return Precision(
            "bfloat16" if native else "float16", f"torch_npu: {chip} {'has' if native else 'has no'} bfloat16"
        )
    if name is not None and name.startswith(BF16_ASCEND_CHIPS):
        return Precision("bfloat16", f"{name} computes bfloat16")
    return Precision("float16", f"{chip} is not known to compute bfloat16")


@contextmanager
def engine_environment(
    device: DeviceInfo, count: int = 1, *, in_process: bool = False, start_method: str = "auto"
) -> Iterator[dict[str, str]]:
    """The environment an engine that picks its own devices (vLLM, vllm-ascend) starts in, set for the
    duration of the `with` block and then restored, so that nothing after it sees narrowed devices.

    - The visible devices are narrowed to `device` and the `count - 1` after it (`engine_visible_env`),
      computed from the values of the user's ASCEND_RT_VISIBLE_DEVICES / CUDA_VISIBLE_DEVICES captured when
      the device was resolved. An engine in this process (`in_process`) cannot be narrowed (the runtime
      reads the variable once per process), so there the device must be the first visible one.
    - vLLM's start method: "spawn" when this process has already initialised the accelerator (vLLM itself
      only forces it for CUDA and XPU; a forked child of a process that used the NPU cannot), or when
      `start_method` says so; "fork" only when asked; otherwise vLLM's own choice.

    Yields:
        The variables set.

    Raises:
        ConfigError: an in-process engine on a device other than the first visible one.
    """
    changes: dict[str, str] = {}
    if device.type != "cpu":
        wanted = device.engine_visible_env(count)
        if in_process:
            if device.index:
                raise ConfigError(
                    f"An in-process vLLM engine (VLLM_ENABLE_V1_MULTIPROCESSING=0) cannot be moved to "
                    f"{device.describe()}: the device runtime reads {VISIBLE_ENV[device.type]} once per "
                    "process. Let vLLM start its engine process (unset VLLM_ENABLE_V1_MULTIPROCESSING), or "
                    f"set {VISIBLE_ENV[device.type]} so that the device is index 0."
                )
        else:
            changes.update(wanted)
    if start_method == "spawn" or (start_method == "auto" and device.initialized()):
        changes[START_METHOD_ENV] = "spawn"
    elif start_method == "fork":
        changes[START_METHOD_ENV] = "fork"
    with _ENV_LOCK:
        saved = {k: os.environ.get(k) for k in changes}
        os.environ.update(changes)
        try:
            yield changes
        finally:
            _restore(saved)


def _restore(saved: Mapping[str, str | None]) -> None:
    for key, value in saved.items():
        if value is None:
            os.environ.pop(key, None)
        else:
            os.environ[key] = value


def _parse(spec: str, source: str) -> tuple[DeviceType, int | None]:
    kind, _, idx = spec.strip().lower().partition(":")
    if kind not in ("npu", "cuda", "cpu", "auto"):
        raise ConfigError(f"{source}={spec!r} is not a device. Valid: 'auto', 'cpu', 'cuda[:N]', 'npu[:N]'.")
    if idx and not idx.isdigit():
        raise ConfigError(f"{source}={spec!r}: the index after ':' must be a number, e.g. 'npu:0'.")
    return kind, int(idx) if idx else None  # type: ignore[return-value]


def _npu_count() -> int:
    if _import_torch_npu() is None:
        return 0
    try:
        return int(_torch().npu.device_count())
    except Exception:  # a driver that is installed but broken reports no device rather than crashing
        return 0


def _cuda_count() -> int:
    # torch.cuda.device_count() asks NVML first and initialises nothing; torch.cuda.is_available() would
    # initialise the CUDA driver in this process (unless PYTORCH_NVML_BASED_CUDA_CHECK=1, which vLLM sets
    # when imported), after which a forked vLLM engine cannot use CUDA.
    try:
        return int(_torch().cuda.device_count())
    except Exception:  # a driver that is installed but broken reports no device rather than crashing
        return 0


def resolve_device(requested: str | None = None, *, config: str | None = None) -> DeviceInfo:
    """Decide where models run.

    Args:
        requested: an explicit choice ("auto", "cpu", "cuda", "cuda:1", "npu", "npu:0"); wins over all else.
        config: the configured choice, used when `requested` is None; when both are None the
            `ASCEND_EVAL_DEVICE` environment variable is read, and failing that "auto".

    Returns:
        The resolved device. Auto-detection picks an NPU if `torch_npu` imports and reports one, else CUDA,
        else the CPU. Device indices count within ASCEND_RT_VISIBLE_DEVICES / CUDA_VISIBLE_DEVICES.

    Raises:
        ConfigError: the choice is malformed, or names an index beyond the visible devices.
        MissingDependencyError: "npu" was asked for but torch_npu is missing or sees no device, or
            "cuda" was asked for but torch sees no CUDA device.
    """
    source, spec = "device", requested
    if spec is None:
        source, spec = "config device", config
    if spec is None:
        source, spec = DEVICE_ENV, os.environ.get(DEVICE_ENV)
    kind, index = _parse(spec or "auto", source)

    if kind == "auto":
        if _npu_count() > 0:
            kind, index = "npu", 0
        elif _cuda_count() > 0:
            kind, index = "cuda", 0
        else:
            return DeviceInfo("cpu")

    if kind == "cpu":
        return DeviceInfo("cpu")
    with _ENV_LOCK:  # never the narrowed value of an engine that is starting
        count = _npu_count() if kind == "npu" else _cuda_count()
        visible = os.environ.get(VISIBLE_ENV[kind])
    if count == 0:
        if kind == "npu":
            raise MissingDependencyError(
                f"{source}={spec!r} but torch_npu is not importable or sees no NPU. "
                "Install the torch-npu build "
                "matching your torch and CANN (`pip install 'ascend-eval[npu]'`), check "
                f"ASCEND_RT_VISIBLE_DEVICES={visible!r}, or pass device='cpu'."
            )
        raise MissingDependencyError(
            f"{source}={spec!r} but torch sees no CUDA device (CUDA_VISIBLE_DEVICES={visible!r}). "
            "Install a CUDA "
            "build of torch, or pass device='cpu'."
        )
    index = 0 if index is None else index
    if index >= count:
        raise ConfigError(
            f"{source}={spec!r} but only {count} {kind} device(s) are visible "
            f"({VISIBLE_ENV[kind]}={visible!r}). Use an index below {count}."
        )
    return DeviceInfo(kind, index, visible)
