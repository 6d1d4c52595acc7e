"""One platform class per device (`ascend_eval.models.platforms`): each one's answers on this machine. The
CPU platform runs for real; the NPU one against the torch_npu stand-in (tests/models/standins.py) and the
CUDA one against a fake `torch.cuda`, as no NPU or GPU exists here."""

from __future__ import annotations

import re
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

from ascend_eval.models.device import DeviceInfo, Precision, resolve_device
from ascend_eval.models.errors import ConfigError, MissingDependencyError
from ascend_eval.models.platforms import (
    ACCELERATORS,
    CPU,
    PLATFORMS,
    CpuPlatform,
    CudaPlatform,
    NpuPlatform,
    cluster_platform,
    platform_for,
)
from ascend_eval.models.platforms import cpu as cpu_platform
from ascend_eval.models.platforms import interface as platform_interface
from ascend_eval.models.platforms import npu as npu_platform
from ascend_eval.models.platforms.cpu import CPU_CHUNKED_PREFILL, CPU_KV_CACHE_BYTES
from tests.models.standins import StandinNpu

REPO = Path(__file__).resolve().parents[2]


def test_one_platform_per_device_picked_once() -> None:
    assert {name: type(p) for name, p in PLATFORMS.items()} == {
        "npu": NpuPlatform,
        "cuda": CudaPlatform,
        "cpu": CpuPlatform,
    }
    assert [p.name for p in ACCELERATORS] == ["npu", "cuda"]  # auto-detection's order
    assert platform_for("NPU:1") is PLATFORMS["npu"] and platform_for(" cuda ") is PLATFORMS["cuda"]
    with pytest.raises(KeyError):
        platform_for("auto")
    for kind in PLATFORMS:
        assert DeviceInfo(kind).platform is PLATFORMS[kind]  # type: ignore[arg-type]
    assert DeviceInfo("cpu") == DeviceInfo("cpu") and "platform" not in repr(DeviceInfo("cpu"))


def test_the_cpu_platform_on_this_machine(monkeypatch: pytest.MonkeyPatch) -> None:
    assert (CPU.name, CPU.accelerator, CPU.visible_env, CPU.ray_resource) == ("cpu", False, None, "CPU")
    CPU.synchronize("cpu")
    CPU.set_device(0)
    CPU.empty_cache()
    assert CPU.mem_get_info(0) is None and CPU.chip_name(0) is None and not CPU.initialized()
    assert CPU.vllm_capability(object(), 0) is None
    CPU.check_vllm(0, 1 << 30, "test")  # nothing the CPU build ignores
    monkeypatch.setattr(cpu_platform, "cpu_supports_bf16", lambda: False)
    assert CPU.precision(0) == Precision(
        "float32", "CPU without AMX or AVX512-BF16: bfloat16 would be emulated"
    )
    monkeypatch.setattr(cpu_platform, "cpu_supports_bf16", lambda: True)
    assert CPU.precision(0).dtype == "bfloat16"


def test_the_cpu_platforms_vllm_defaults(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("VLLM_CPU_KVCACHE_SPACE", raising=False)
    assert CPU.vllm_defaults() == {
        "enforce_eager": True,
        "enable_chunked_prefill": CPU_CHUNKED_PREFILL,
        "kv_cache_memory_bytes": CPU_KV_CACHE_BYTES,
    }
    monkeypatch.setenv("VLLM_CPU_KVCACHE_SPACE", "4")  # vLLM's own setting then sizes the cache
    assert "kv_cache_memory_bytes" not in CPU.vllm_defaults()
    for accelerator in ACCELERATORS:
        assert accelerator.vllm_defaults() == {"enforce_eager": False}


def test_the_npu_platform_against_the_torch_npu_standin(standin_npu: StandinNpu) -> None:
    npu = PLATFORMS["npu"]
    assert (npu.accelerator, npu.visible_env, npu.ray_resource) == (True, "ASCEND_RT_VISIBLE_DEVICES", "NPU")
    assert npu.device_count() == 2 and not npu.initialized()  # ASCEND_RT_VISIBLE_DEVICES=4,5
    assert npu.chip_name(0) == "Ascend910B3" and npu.initialized()
    assert npu.precision(0) == Precision("bfloat16", "torch_npu: Ascend910B3 has bfloat16")
    npu.synchronize("npu:1")
    npu.set_device(1)
    assert npu.mem_get_info(1) == (30 << 30, 64 << 30)
    npu.empty_cache()
    assert standin_npu.calls[-4:] == ["synchronize:npu:1", "set_device:1", "mem_get_info:1", "empty_cache"]
    assert npu.vllm_capability(object(), 0) is None


def test_the_npu_platform_without_torch_npu(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "torch_npu", None)  # `import torch_npu` raises ImportError
    npu = PLATFORMS["npu"]
    assert npu.device_count() == 0 and not npu.initialized()
    assert "torch_npu is not importable" in npu.missing_message("device", "npu", None)


def test_the_npu_platform_refuses_what_vllm_ascend_ignores(
    standin_npu: StandinNpu, monkeypatch: pytest.MonkeyPatch
) -> None:
    npu = PLATFORMS["npu"]
    monkeypatch.setattr(npu_platform, "ascend_version", lambda: "0.18.0")
    npu.check_vllm(0, None, "test")  # nothing set that it would ignore
    with pytest.raises(ConfigError, match=r"ignored by vllm-ascend 0\.18\.0"):
        npu.check_vllm(0, 1 << 30, "test")
    assert not npu_platform.ascend_fills_logprob_token_ids()
    monkeypatch.setattr(npu_platform, "ascend_version", lambda: "0.23.0")
    npu.check_vllm(0, 1 << 30, "test")
    assert npu_platform.ascend_fills_logprob_token_ids()
    standin_npu.soc = "Ascend310P3"
    with pytest.raises(ConfigError, match="ignored by Ascend310P3"):
        npu.check_vllm(0, 1 << 30, "test")
    monkeypatch.setattr(npu_platform, "ascend_version", lambda: None)
    assert npu_platform.ascend_fills_logprob_token_ids()  # no vllm-ascend: vLLM's own sampler


def test_the_cuda_platform_against_a_fake_torch_cuda(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[str] = []
    cuda = SimpleNamespace(
        device_count=lambda: 4,
        get_device_capability=lambda index=0: (7, 0),
        get_device_name=lambda index=0: f"NVIDIA V100 #{index}",
        is_initialized=lambda: False,
        synchronize=lambda device=None: calls.append(f"synchronize:{device}"),
        set_device=lambda index: calls.append(f"set_device:{index}"),
        empty_cache=lambda: calls.append("empty_cache"),
        mem_get_info=lambda index=0: (1 << 30, 16 << 30),
    )
    monkeypatch.setattr(platform_interface, "torch_module", lambda: SimpleNamespace(cuda=cuda))
    gpu = PLATFORMS["cuda"]
    assert (gpu.accelerator, gpu.visible_env, gpu.ray_resource) == (True, "CUDA_VISIBLE_DEVICES", "GPU")
    assert gpu.device_count() == 4 and not gpu.initialized() and gpu.chip_name(2) == "NVIDIA V100 #2"
    assert gpu.precision(0).dtype == "float16" and gpu.precision(0, (8, 0)).dtype == "bfloat16"
    gpu.synchronize("cuda:2")
    gpu.set_device(2)
    gpu.empty_cache()
    assert calls == ["synchronize:cuda:2", "set_device:2", "empty_cache"]
    assert gpu.mem_get_info(0) == (1 << 30, 16 << 30)
    vllm = SimpleNamespace(get_device_capability=lambda index: SimpleNamespace(major=9, minor=0))
    assert gpu.vllm_capability(vllm, 0) == (9, 0)
    assert gpu.vllm_capability(SimpleNamespace(), 0) is None  # not asked of vLLM: torch is asked instead
    cuda.device_count = lambda: 1 / 0  # a broken driver reports no device
    assert gpu.device_count() == 0
    assert "torch sees no CUDA device" in gpu.missing_message("device", "cuda", None)


def test_the_ray_resources_of_each_platform() -> None:
    """The mapping the Ray executor asks for, unchanged: a GPU per actor as `num_gpus`, an NPU as the
    custom resource `NPU`, else the actor's CPUs."""
    table = {name: (p.ray_resource, *p.ray_actor(2.0)) for name, p in PLATFORMS.items()}
    assert table == {
        "cuda": ("GPU", 1.0, {"num_gpus": 1}),
        "npu": ("NPU", 1.0, {"resources": {"NPU": 1}}),
        "cpu": ("CPU", 2.0, {"num_cpus": 2.0}),
    }
    assert cluster_platform({"NPU": 8, "GPU": 8, "CPU": 64}) is PLATFORMS["npu"]
    assert cluster_platform({"NPU": 0, "GPU": 2}) is PLATFORMS["cuda"]
    assert cluster_platform({"CPU": 4}) is CPU


def test_resolve_device_asks_the_platforms(standin_npu: StandinNpu, monkeypatch: pytest.MonkeyPatch) -> None:
    assert resolve_device().platform is PLATFORMS["npu"]
    monkeypatch.setattr(NpuPlatform, "device_count", lambda self: 0)
    monkeypatch.setattr(CudaPlatform, "device_count", lambda self: 0)
    assert resolve_device().platform is CPU
    with pytest.raises(MissingDependencyError, match="torch_npu is not importable"):
        resolve_device("npu")


def test_no_module_outside_the_platforms_compares_a_device_type_with_a_name() -> None:
    compares = re.compile(
        r"\.type\s*[!=]=\s*[\"'](npu|cuda|cpu)[\"']|[\"'](npu|cuda|cpu)[\"']\s*[!=]=\s*\w+\.type"
    )
    found = sorted(
        f"{p.relative_to(REPO).as_posix()}:{n}"
        for folder in ("ascend_eval", "models", "kernels")
        for p in (REPO / folder).rglob("*.py")
        for n, line in enumerate(p.read_text(encoding="utf-8").splitlines(), 1)
        if compares.search(line)
    )
    assert found == []
