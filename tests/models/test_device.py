"""The device seam. No NPU exists here, so the NPU branch runs against an injected `torch_npu` module that
behaves like the real one: importing it registers `torch.npu` with the device count and memory calls."""

from __future__ import annotations

import re
import sys
import types
from pathlib import Path

import pytest
import torch

from ascend_eval.models.device import DEVICE_ENV, resolve_device
from ascend_eval.models.errors import ConfigError, MissingDependencyError

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture
def fake_npu(monkeypatch):
    """Install a `torch_npu` that reports two NPUs (as with ASCEND_RT_VISIBLE_DEVICES=4,5)."""
    calls = []
    npu = types.SimpleNamespace(
        device_count=lambda: 2,
        synchronize=lambda device=None: calls.append(f"synchronize:{device}"),
        empty_cache=lambda: calls.append("empty_cache"),
        mem_get_info=lambda index=0: (calls.append(f"mem_get_info:{index}"), (30 << 30, 64 << 30))[1],
    )
    module = types.ModuleType("torch_npu")
    monkeypatch.setitem(sys.modules, "torch_npu", module)
    monkeypatch.setattr(torch, "npu", npu, raising=False)
    monkeypatch.setenv("ASCEND_RT_VISIBLE_DEVICES", "4,5")
    monkeypatch.delenv(DEVICE_ENV, raising=False)
    return calls


@pytest.fixture
def no_npu(monkeypatch):
    monkeypatch.setitem(sys.modules, "torch_npu", None)  # makes `import torch_npu` raise ImportError
    monkeypatch.delenv(DEVICE_ENV, raising=False)


def test_auto_prefers_an_npu(fake_npu):
    device = resolve_device()
    assert (device.type, device.index, device.torch_device) == ("npu", 0, "npu:0")
    assert device.describe() == "npu:0 (ASCEND_RT_VISIBLE_DEVICES=4,5)"
    device.synchronize()
    device.empty_cache()
    assert device.mem_get_info() == (30 << 30, 64 << 30)
    assert fake_npu == ["synchronize:npu:0", "empty_cache", "mem_get_info:0"]


def test_npu_index_counts_within_visible_devices(fake_npu):
    assert resolve_device("npu:1").torch_device == "npu:1"
    with pytest.raises(
        ConfigError, match=r"only 2 npu device\(s\) are visible \(ASCEND_RT_VISIBLE_DEVICES='4,5'\)"
    ):
        resolve_device("npu:2")


def test_precedence_argument_config_environment(fake_npu, monkeypatch):
    monkeypatch.setenv(DEVICE_ENV, "cpu")
    assert resolve_device().type == "cpu"
    assert resolve_device(config="npu").type == "npu"
    assert resolve_device("cpu", config="npu").type == "cpu"


def test_npu_requested_without_torch_npu(no_npu):
    with pytest.raises(MissingDependencyError, match=r"torch_npu is not importable.*device='cpu'"):
        resolve_device("npu")


def test_auto_without_accelerators_is_cpu(no_npu):
    device = resolve_device("auto")
    assert device.type == "cpu" and device.mem_get_info() is None
    device.synchronize()  # a no-op on the CPU
    with device.inference_mode():
        assert torch.is_inference_mode_enabled()


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the message on a machine without CUDA")
def test_cuda_requested_without_cuda(no_npu):
    with pytest.raises(MissingDependencyError, match="torch sees no CUDA device"):
        resolve_device("cuda")


@pytest.mark.parametrize("spec", ["gpu", "npu:x", "tpu:0"])
def test_malformed_choices(spec, no_npu):
    with pytest.raises(ConfigError, match=r"Valid:|index after"):
        resolve_device(spec)


def test_torch_npu_is_imported_only_by_the_npu_platform():
    imports = re.compile(
        r"^\s*(import torch_npu|from torch_npu)|import_module\(\"torch_npu\"\)", re.MULTILINE
    )
    importing = sorted(
        p.relative_to(REPO).as_posix()
        for folder in ("ascend_eval", "models", "kernels")
        for p in (REPO / folder).rglob("*.py")
        if imports.search(p.read_text(encoding="utf-8"))
    )
    assert importing == ["models/platforms/npu.py"]
