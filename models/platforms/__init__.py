"""One platform per device kind, each owning what is device-specific (as vLLM's `vllm.platforms`): the
runtime calls, the dtype policy, the Ray resource an actor reserves, and what vLLM needs on that device.

`platform_for` picks the platform of a device string once; `ACCELERATORS` is the order auto-detection
tries them in (an Ascend NPU before a CUDA GPU), the CPU being what is left.

>>> platform_for("npu:1").ray_resource, platform_for("cuda").visible_env, platform_for("cpu").accelerator
('NPU', 'CUDA_VISIBLE_DEVICES', False)
>>> [p.name for p in ACCELERATORS]
['npu', 'cuda']
"""

from __future__ import annotations

from collections.abc import Mapping

from ascend_eval.models.platforms.cpu import CpuPlatform
from ascend_eval.models.platforms.cuda import CudaPlatform
from ascend_eval.models.platforms.interface import AcceleratorPlatform, Platform, Precision
from ascend_eval.models.platforms.npu import NpuPlatform

__all__ = [
    "ACCELERATORS",
    "CPU",
    "PLATFORMS",
    "AcceleratorPlatform",
    "CpuPlatform",
    "CudaPlatform",
    "NpuPlatform",
    "Platform",
    "Precision",
    "cluster_platform",
    "platform_for",
]

ACCELERATORS: tuple[Platform, ...] = (NpuPlatform(), CudaPlatform())
"""The accelerators, in the order auto-detection prefers them."""
CPU = CpuPlatform()
PLATFORMS: Mapping[str, Platform] = {p.name: p for p in (*ACCELERATORS, CPU)}
"""Device type -> its platform."""


def platform_for(device: str) -> Platform:
    """The platform of `device` ("npu", "cuda:1", "cpu", ...; not "auto", which is resolved first).

    Raises:
        KeyError: not a device type.
    """
    return PLATFORMS[device.strip().lower().partition(":")[0]]


def cluster_platform(resources: Mapping[str, float]) -> Platform:
    """The platform "auto" means on a Ray cluster with `resources`: its first accelerator, else the CPU.

    >>> cluster_platform({"CPU": 8, "GPU": 2}).name, cluster_platform({"CPU": 8}).name
    ('cuda', 'cpu')
    """
    return next((p for p in ACCELERATORS if resources.get(p.ray_resource)), CPU)
