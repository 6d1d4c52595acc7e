"""Ascend NPUs: torch_npu (the only importer of it in the project) and vLLM with the vllm-ascend plugin.

torch_npu registers the `npu` device type with torch when imported, and `torch.npu` then has the calls
`torch.cuda` has. vllm-ascend is vLLM's platform plugin for the NPU: vLLM itself is installed first, at the
release vllm-ascend's row pins (`NPU_ROW`).
"""

from __future__ import annotations

import importlib
import itertools
import logging
from importlib import metadata
from typing import Any

from ascend_eval.models.errors import ConfigError
from ascend_eval.models.platforms.interface import AcceleratorPlatform, Precision

__all__ = [
    "ASCEND_KV_BYTES_FROM",
    "ASCEND_LOGPROB_TOKEN_IDS_FROM",
    "BF16_ASCEND_CHIPS",
    "NPU_ROW",
    "NpuPlatform",
    "ascend_fills_logprob_token_ids",
    "ascend_version",
    "import_torch_npu",
    "release",
]

log = logging.getLogger("ascend_eval.models.vllm_runtime")
"""The vLLM runtime's logger: the vllm-ascend checks below run as a vLLM engine starts."""

NPU_ROW = {
    "vllm-ascend": "0.23.0",
    "vllm": "0.23.0",
    "torch": "2.10.0",
    "torch-npu": "2.10.0.post4",
    "cann": "9.1.0",
    "python": ">=3.10,<3.13",
}
"""The Ascend install this project is written and checked against: vllm-ascend v0.23.0's row of its release
compatibility matrix (vLLM v0.23.0, PyTorch 2.10.0 / torch_npu 2.10.0.post4, CANN 9.1.0). The `[npu]` extra
pins it, except vLLM, which vllm-ascend does not install (`pip install vllm==0.23.0` first)."""
ASCEND_KV_BYTES_FROM = (0, 19, 1)
"""vllm-ascend honours `kv_cache_memory_bytes` from v0.19.1 (before, and on the Atlas 300I / 310P even in
v0.23.0, its worker sizes the KV cache from `gpu_memory_utilization` alone)."""
ASCEND_LOGPROB_TOKEN_IDS_FROM = (0, 19, 1)
"""vllm-ascend's sampler returns `SamplingParams.logprob_token_ids` from v0.19.1."""
BF16_ASCEND_CHIPS = ("Ascend910B", "Ascend910_93", "Ascend950")
"""Ascend SoC names that compute bfloat16 (torch_npu: SoC version Ascend910B1 and later, i.e. the Atlas A2
and A3 series), used where torch_npu cannot be asked; the 910A/910ProA and the Atlas 300I (310P) compute
float16 only."""


def import_torch_npu() -> Any | None:
    """Import torch_npu if it is installed; it registers the `npu` device type with torch."""
    try:
        return importlib.import_module("torch_npu")
    except ImportError:
        return None


def release(version: str) -> tuple[int, ...]:
    """The leading numbers of a version.

    >>> release("0.19.1rc1")
    (0, 19, 1)
    """
    numbers = []
    for part in version.split("."):
        digits = "".join(itertools.takewhile(str.isdigit, part))
        if not digits:
            break
        numbers.append(int(digits))
        if digits != part:
            break
    return tuple(numbers)


def ascend_version() -> str | None:
    """The installed vllm-ascend's version, or None."""
    try:
        return metadata.version("vllm-ascend")
    except metadata.PackageNotFoundError:
        return None


def ascend_fills_logprob_token_ids() -> bool:
    """Whether the installed vllm-ascend, if any, fills `SamplingParams.logprob_token_ids` (v0.19.1 on);
    True where it is not installed."""
    version = ascend_version()
    return version is None or release(version) >= ASCEND_LOGPROB_TOKEN_IDS_FROM


class NpuPlatform(AcceleratorPlatform):
    """Ascend NPUs, through torch_npu and vllm-ascend."""

    name = "npu"
    visible_env = "ASCEND_RT_VISIBLE_DEVICES"
    ray_resource = "NPU"
    """Ray has no built-in NPU resource: nodes declare the custom resource `NPU`."""

    def device_count(self) -> int:
        return 0 if import_torch_npu() is None else super().device_count()

    def missing_message(self, source: str, spec: str | None, visible: str | None) -> str:
        return (
            f"{source}={spec!r} but torch_npu is not importable or sees no NPU. "
            "Install the torch-npu build "
            "matching your torch and CANN (`pip install 'ascend-eval[npu]'`), check "
            f"ASCEND_RT_VISIBLE_DEVICES={visible!r}, or pass device='cpu'."
        )

    def initialized(self) -> bool:
        """False also while torch_npu is not even imported."""
        return import_torch_npu() is not None and super().initialized()

    def precision(self, index: int, capability: tuple[int, int] | None = None) -> Precision:
        """bfloat16 where the SoC computes it (torch_npu's `torch.npu.is_bf16_supported()`, or the chip's
        name with older builds that lack it), else float16: the Atlas 300I / 310P has no bfloat16."""
        try:
            ask = self.module().is_bf16_supported
        except AttributeError:
            ask = None
        name = self.chip_name(index)
        chip = name or "the NPU"
        if ask is not None:
            try:
                native = bool(ask())
            except Exception as e:  # a driver that cannot answer: float16 runs on every Ascend NPU
                return Precision("float16", f"torch_npu could not say whether {chip} has bfloat16 ({e})")
            return Precision(
                "bfloat16" if native else "float16",
                f"torch_npu: {chip} {'has' if native else 'has no'} bfloat16",
            )
        if name is not None and name.startswith(BF16_ASCEND_CHIPS):
            return Precision("bfloat16", f"{name} computes bfloat16")
        return Precision("float16", f"{chip} is not known to compute bfloat16")

    def ray_actor(self, num_cpus: float) -> tuple[float, dict[str, Any]]:
        return 1.0, {"resources": {"NPU": 1}}

    def check_vllm(self, index: int, kv_cache_memory_bytes: int | None, what: str) -> None:
        """Refuse a setting the installed vllm-ascend would silently ignore, and note a row other than
        ours."""
        version = ascend_version()
        if version is not None and version != NPU_ROW["vllm-ascend"]:
            log.warning(
                "%s: vllm-ascend %s is installed; this project is checked against vllm-ascend %s with vLLM "
                "%s (see the README's Ascend install).",
                what,
                version,
                NPU_ROW["vllm-ascend"],
                NPU_ROW["vllm"],
            )
        if kv_cache_memory_bytes is None:
            return
        chip = self.chip_name(index) or ""
        if chip.startswith("Ascend310P") or (version is not None and release(version) < ASCEND_KV_BYTES_FROM):
            where = chip if chip.startswith("Ascend310P") else f"vllm-ascend {version}"
            raise ConfigError(
                f"{what}: kv_cache_memory_bytes={kv_cache_memory_bytes} is ignored by {where} (it sizes "
                "the KV cache from gpu_memory_utilization alone). Drop kv_cache_memory_bytes and set "
                f"gpu_memory_utilization, or install vllm-ascend {NPU_ROW['vllm-ascend']}."
            )
