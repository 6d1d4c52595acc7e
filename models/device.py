"""The device seam: the one place that decides where models run, and the only importer of `torch_npu`.

Order of precedence: an explicit argument, then the `ASCEND_EVAL_DEVICE` setting, then auto-detection
(an Ascend NPU if `torch_npu` imports and reports one, else CUDA, else the CPU). Everything device-specific
(synchronise, free cached memory, memory info) goes through the `DeviceInfo` returned here, so no other
module branches on the device type.
"""

from __future__ import annotations

import importlib
import os
from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import Any, Literal

from ascend_eval.models.errors import ConfigError, MissingDependencyError

DeviceType = Literal["npu", "cuda", "cpu"]
DEVICE_ENV = "ASCEND_EVAL_DEVICE"
_VISIBLE_ENV = {"npu": "ASCEND_RT_VISIBLE_DEVICES", "cuda": "CUDA_VISIBLE_DEVICES"}


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
        """The dtype for `dtype="auto"`: bfloat16 where this device computes it natively (`supports_bf16`),
        else float32."""
        return "bfloat16" if self.supports_bf16 else "float32"

    @property
    def supports_bf16(self) -> bool:
        """Whether this device computes bfloat16 natively: an Ascend NPU that says so (the 910B does, the
        910A does not), a CUDA GPU with native bf16 (compute capability 8.0 and up), a CPU with AMX or
        AVX512-BF16 (`cpu_supports_bf16`). Elsewhere bfloat16 is emulated or slow, and float32 is the
        better default."""
        if self.type == "cpu":
            return cpu_supports_bf16()
        try:
            ask = self._module().is_bf16_supported
        except AttributeError:  # no torch_npu, or a torch that cannot ask: these accelerators mostly do
            return True
        try:
            if self.type == "cuda":
                try:
                    return bool(ask(including_emulation=False))
                except TypeError:  # torch < 2.3 has no including_emulation (and counts no emulation)
                    return bool(ask())
            # torch_npu's torch.npu.is_bf16_supported() asks the SoC (True from the Ascend 910B on).
            return bool(ask())
        except Exception:  # a driver that cannot answer: float32 is always correct
            return False

    def _module(self) -> Any:
        # torch.npu exists once torch_npu is imported; torch.cuda always exists.
        return getattr(_torch(), self.type)

    def synchronize(self) -> None:
        if self.type != "cpu":
            self._module().synchronize()

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
                f"visible ({_VISIBLE_ENV[self.type]}={self.visible!r}). Use a lower index or fewer devices."
            )
        return {_VISIBLE_ENV[self.type]: ",".join(chosen)}

    def describe(self) -> str:
        extra = f" ({_VISIBLE_ENV[self.type]}={self.visible})" if self.visible is not None else ""
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
    torch = _torch()
    return int(torch.cuda.device_count()) if torch.cuda.is_available() else 0


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
    count = _npu_count() if kind == "npu" else _cuda_count()
    visible = os.environ.get(_VISIBLE_ENV[kind])
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
            f"({_VISIBLE_ENV[kind]}={visible!r}). Use an index below {count}."
        )
    return DeviceInfo(kind, index, visible)
