"""The device seam: the one place that decides where models run.

Order of precedence: an explicit argument, then the `ASCEND_EVAL_DEVICE` setting, then auto-detection
(an Ascend NPU if `torch_npu` imports and reports one, else CUDA, else the CPU). Everything device-specific
(synchronise, free cached memory, memory info, the dtype policy) goes through the `DeviceInfo` returned
here, which asks its platform (`ascend_eval.models.platforms`: one class per device, the only importer of
`torch_npu`), so no other module branches on the device type.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Iterator, Mapping
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass, field
from typing import Any, Literal

from ascend_eval.models.errors import ConfigError, MissingDependencyError
from ascend_eval.models.platforms import ACCELERATORS, PLATFORMS, Platform, Precision, platform_for
from ascend_eval.models.platforms.cpu import cpu_supports_bf16
from ascend_eval.models.platforms.interface import torch_module

__all__ = [
    "DEVICE_ENV",
    "START_METHOD_ENV",
    "DeviceInfo",
    "DeviceType",
    "Precision",
    "cpu_supports_bf16",
    "engine_environment",
    "resolve_device",
]

DeviceType = Literal["npu", "cuda", "cpu"]
DEVICE_ENV = "ASCEND_EVAL_DEVICE"
START_METHOD_ENV = "VLLM_WORKER_MULTIPROC_METHOD"
"""vLLM's choice of how its engine and worker processes start ("fork", its default, or "spawn")."""
_ENV_LOCK = threading.RLock()
"""Held while an engine starts with narrowed visible devices, so that no device is resolved meanwhile."""


@dataclass(frozen=True)
class DeviceInfo:
    """A resolved device, with the few device-specific operations the runtimes need; each is its
    platform's (`platform`), so nothing here branches on the device type."""

    type: DeviceType
    index: int | None = None
    visible: str | None = None
    """The value of ASCEND_RT_VISIBLE_DEVICES / CUDA_VISIBLE_DEVICES when resolved (None if unset)."""
    platform: Platform = field(init=False, repr=False, compare=False)
    """What this kind of device knows and does, picked once from `type`."""

    def __post_init__(self) -> None:
        object.__setattr__(self, "platform", platform_for(self.type))

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
        return self.platform.precision(self.index or 0, capability)

    @property
    def supports_bf16(self) -> bool:
        """Whether this device computes bfloat16 natively (`precision` says bfloat16)."""
        return self.precision().dtype == "bfloat16"

    def synchronize(self) -> None:
        """Wait for this device's work (not device 0's: the index is passed)."""
        self.platform.synchronize(self.torch_device)

    def activate(self) -> None:
        """Make this device the process's current one before a model moves to it, so that the runtime's
        context is made on it rather than on device 0 (torch.npu.set_device / torch.cuda.set_device)."""
        if self.index is not None:
            self.platform.set_device(self.index)

    def initialized(self) -> bool:
        """Whether this process has initialised the accelerator's runtime (a forked child then cannot use
        it: torch_npu raises "Cannot re-initialize NPU in forked subprocess"). False on the CPU, and for an
        NPU while torch_npu is not even imported."""
        return self.platform.initialized()

    def chip_name(self) -> str | None:
        """The accelerator's name ("Ascend910B3", "Ascend310P3", "NVIDIA H100 ..."), None on the CPU or
        where the runtime cannot say."""
        return self.platform.chip_name(self.index or 0)

    def empty_cache(self) -> None:
        self.platform.empty_cache()

    def mem_get_info(self) -> tuple[int, int] | None:
        """(free, total) bytes of device memory, or None on the CPU."""
        return self.platform.mem_get_info(self.index or 0)

    def inference_mode(self) -> AbstractContextManager[Any]:
        return torch_module().inference_mode()

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
        variable = self.platform.visible_env
        if variable is None:
            return {}
        start = self.index or 0
        ids = [s.strip() for s in self.visible.split(",")] if self.visible else None
        wanted = range(start, start + count)
        chosen = ids[start : start + count] if ids is not None else [str(i) for i in wanted]
        if len(chosen) < count:
            raise ConfigError(
                f"{count} {self.type} device(s) from index {start} are wanted but only {len(ids or [])} are "
                f"visible ({variable}={self.visible!r}). Use a lower index or fewer devices."
            )
        return {variable: ",".join(chosen)}

    def describe(self) -> str:
        extra = f" ({self.platform.visible_env}={self.visible})" if self.visible is not None else ""
        return f"{self.torch_device}{extra}"


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
    variable = device.platform.visible_env
    if variable is not None:
        wanted = device.engine_visible_env(count)
        if in_process:
            if device.index:
                raise ConfigError(
                    f"An in-process vLLM engine (VLLM_ENABLE_V1_MULTIPROCESSING=0) cannot be moved to "
                    f"{device.describe()}: the device runtime reads {variable} once per "
                    "process. Let vLLM start its engine process (unset VLLM_ENABLE_V1_MULTIPROCESSING), or "
                    f"set {variable} so that the device is index 0."
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


def _parse(spec: str, source: str) -> tuple[str, int | None]:
    kind, _, idx = spec.strip().lower().partition(":")
    if kind not in PLATFORMS and kind != "auto":
        raise ConfigError(f"{source}={spec!r} is not a device. Valid: 'auto', 'cpu', 'cuda[:N]', 'npu[:N]'.")
    if idx and not idx.isdigit():
        raise ConfigError(f"{source}={spec!r}: the index after ':' must be a number, e.g. 'npu:0'.")
    return kind, int(idx) if idx else None


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
        found = next((p for p in ACCELERATORS if p.device_count() > 0), None)
        if found is None:
            return DeviceInfo("cpu")
        kind, index = found.name, 0

    platform = PLATFORMS[kind]
    if platform.visible_env is None:
        return DeviceInfo(platform.name)  # type: ignore[arg-type]
    with _ENV_LOCK:  # never the narrowed value of an engine that is starting
        count = platform.device_count()
        visible = os.environ.get(platform.visible_env)
    if count == 0:
        raise MissingDependencyError(platform.missing_message(source, spec, visible))
    index = 0 if index is None else index
    if index >= count:
        raise ConfigError(
            f"{source}={spec!r} but only {count} {kind} device(s) are visible "
            f"({platform.visible_env}={visible!r}). Use an index below {count}."
        )
    return DeviceInfo(platform.name, index, visible)  # type: ignore[arg-type]
