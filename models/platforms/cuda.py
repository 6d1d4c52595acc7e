"""NVIDIA GPUs: torch's CUDA build, and vLLM's CUDA build from PyPI (`CUDA_ROW`)."""

from __future__ import annotations

from typing import Any

from ascend_eval.models.platforms.interface import AcceleratorPlatform, Precision

__all__ = ["BF16_CUDA_CAPABILITY", "CUDA_ROW", "CudaPlatform"]

CUDA_ROW = {"vllm": "0.23.0", "torch": "2.11.0"}
"""The NVIDIA install: vLLM 0.23.0 from PyPI, which pins torch 2.11.0 (its CUDA build). The `[vllm]` extra
pins it. Both rows take the same vLLM, so one check of our vLLM keywords covers both."""
BF16_CUDA_CAPABILITY = (8, 0)
"""CUDA GPUs compute bfloat16 natively from compute capability 8.0 (Ampere); vLLM refuses bfloat16 below."""


class CudaPlatform(AcceleratorPlatform):
    """NVIDIA GPUs, through `torch.cuda`."""

    name = "cuda"
    visible_env = "CUDA_VISIBLE_DEVICES"
    ray_resource = "GPU"

    def device_count(self) -> int:
        # torch.cuda.device_count() asks NVML first and initialises nothing; torch.cuda.is_available() would
        # initialise the CUDA driver in this process (unless PYTORCH_NVML_BASED_CUDA_CHECK=1, which vLLM sets
        # when imported), after which a forked vLLM engine cannot use CUDA.
        return super().device_count()

    def missing_message(self, source: str, spec: str | None, visible: str | None) -> str:
        return (
            f"{source}={spec!r} but torch sees no CUDA device (CUDA_VISIBLE_DEVICES={visible!r}). "
            "Install a CUDA "
            "build of torch, or pass device='cpu'."
        )

    def precision(self, index: int, capability: tuple[int, int] | None = None) -> Precision:
        """bfloat16 from compute capability 8.0, else float16.

        >>> CudaPlatform().precision(0, capability=(7, 5)).dtype
        'float16'
        """
        if capability is None:
            try:
                capability = tuple(self.module().get_device_capability(index))  # type: ignore[assignment]
            except Exception as e:  # a driver that cannot answer: float16 runs on every CUDA GPU
                return Precision("float16", f"CUDA compute capability unknown ({e}): float16")
        major, minor = capability  # type: ignore[misc]
        if (major, minor) >= BF16_CUDA_CAPABILITY:
            return Precision("bfloat16", f"CUDA compute capability {major}.{minor} >= 8.0: native bfloat16")
        return Precision("float16", f"CUDA compute capability {major}.{minor} < 8.0: no native bfloat16")

    def ray_actor(self, num_cpus: float) -> tuple[float, dict[str, Any]]:
        return 1.0, {"num_gpus": 1}

    def vllm_capability(self, vllm_platform: Any, index: int) -> tuple[int, int] | None:
        """Read through NVML by vLLM's CUDA platform, initialising nothing."""
        try:
            found = vllm_platform.get_device_capability(index)
        except Exception:  # the seam asks torch instead
            return None
        return None if found is None else (int(found.major), int(found.minor))
