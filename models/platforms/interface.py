"""The platform interface: what one kind of device knows and does, written once per device (as vLLM's
`vllm.platforms.interface.Platform`). `Platform` holds the answers of a device with no accelerator runtime;
`AcceleratorPlatform` those of a device that torch drives through its own module (`torch.npu`,
`torch.cuda`).

The platforms are told a device index, never a `DeviceInfo`: `models/device.py` is built on them.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from typing import Any, ClassVar

from ascend_eval.models.errors import MissingDependencyError


def torch_module() -> Any:
    """The `torch` module, imported on first use."""
    try:
        return importlib.import_module("torch")
    except ImportError as e:  # pragma: no cover - the test environment has torch
        raise MissingDependencyError(
            "The on-device runtimes need torch. Install the build for your accelerator, e.g. "
            "`pip install 'ascend-eval[torch]' torch==2.13.0` for the CPU."
        ) from e


@dataclass(frozen=True)
class Precision:
    """The dtype a model computes in, and why (recorded in a run's provenance)."""

    dtype: str
    reason: str


class Platform:
    """One kind of device. Subclasses set the class attributes and override what differs."""

    name: ClassVar[str]
    """The device type: "npu", "cuda" or "cpu" (the part of a device string before ':')."""
    accelerator: ClassVar[bool] = False
    """Whether models on it run on an accelerator with its own memory and device indices."""
    visible_env: ClassVar[str | None] = None
    """The variable that narrows the devices a process sees (ASCEND_RT_VISIBLE_DEVICES, ...)."""
    ray_resource: ClassVar[str]
    """The Ray cluster resource one of these devices is counted as ("NPU", "GPU", "CPU")."""

    def __repr__(self) -> str:
        return f"{type(self).__name__}()"

    # -- discovery and the runtime

    def device_count(self) -> int:
        """How many of these devices this process sees (0: none, or no runtime to ask)."""
        return 0

    def missing_message(self, source: str, spec: str | None, visible: str | None) -> str:
        """Why `source`=`spec` cannot be had: this device was asked for and none is visible."""
        return f"{source}={spec!r} but no {self.name} device is visible."

    def initialized(self) -> bool:
        """Whether this process has initialised the device's runtime (a forked child then cannot use it)."""
        return False

    def synchronize(self, torch_device: str) -> None:
        """Wait for the work of `torch_device` ("npu:1"): a no-op without an accelerator."""

    def set_device(self, index: int) -> None:
        """Make device `index` the process's current one: a no-op without an accelerator."""

    def chip_name(self, index: int) -> str | None:
        """The accelerator's name, None where there is none or the runtime cannot say."""
        return None

    def empty_cache(self) -> None:
        """Free the runtime's cached memory: a no-op without an accelerator."""

    def mem_get_info(self, index: int) -> tuple[int, int] | None:
        """(free, total) bytes of device `index`'s memory, None without an accelerator."""
        return None

    def precision(self, index: int, capability: tuple[int, int] | None = None) -> Precision:
        """The dtype of `dtype="auto"` on device `index`, and why."""
        raise NotImplementedError

    # -- Ray

    def ray_actor(self, num_cpus: float) -> tuple[float, dict[str, Any]]:
        """What one scoring actor reserves: its amount of `ray_resource`, and the remote arguments that
        reserve it. `num_cpus` is what an actor reserves where the models run on no accelerator."""
        raise NotImplementedError

    # -- vLLM

    def vllm_defaults(self) -> dict[str, Any]:
        """The `vllm.LLM` arguments this device takes where the settings leave them open."""
        return {"enforce_eager": False}

    def vllm_capability(self, vllm_platform: Any, index: int) -> tuple[int, int] | None:
        """The compute capability vLLM's own platform reads for device `index` without initialising the
        device; None where the device has none."""
        return None

    def check_vllm(self, index: int, kv_cache_memory_bytes: int | None, what: str) -> None:
        """Refuse a setting the installed vLLM build for this device would silently ignore."""


class AcceleratorPlatform(Platform):
    """A device that torch drives through `torch.<name>`, which has the same calls for every accelerator."""

    accelerator = True

    def module(self) -> Any:
        """`torch.npu` (there once torch_npu is imported) or `torch.cuda` (always there)."""
        return getattr(torch_module(), self.name)

    def device_count(self) -> int:
        try:
            return int(self.module().device_count())
        except Exception:  # a driver that is installed but broken reports no device rather than crashing
            return 0

    def initialized(self) -> bool:
        try:
            return bool(self.module().is_initialized())
        except AttributeError:
            return False

    def synchronize(self, torch_device: str) -> None:
        self.module().synchronize(torch_device)

    def set_device(self, index: int) -> None:
        self.module().set_device(index)

    def chip_name(self, index: int) -> str | None:
        try:
            return str(self.module().get_device_name(index))
        except Exception:  # a driver that cannot answer
            return None

    def empty_cache(self) -> None:
        self.module().empty_cache()

    def mem_get_info(self, index: int) -> tuple[int, int] | None:
        return tuple(self.module().mem_get_info(index))  # type: ignore[return-value]
