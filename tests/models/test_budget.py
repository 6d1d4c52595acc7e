"""One device memory budget per run: two vLLM engines and a torch model on one NPU never ask for more than
the whole device, the setting reaches the engines from `evaluate()` and the CLI, and a run records where
each model ran and in which dtype."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ascend_eval.cli.main import build_parser, parse_engine_settings
from ascend_eval.models import vllm_runtime
from ascend_eval.models.budget import TORCH_RESERVE, split_memory
from ascend_eval.models.errors import ConfigError
from ascend_eval.models.factory import resolve_models
from ascend_eval.models.spec import ModelSpec
from tests.models.standins import StandinNpu, StandinVllm


def test_two_engines_and_a_torch_model_on_one_npu_fit_in_the_device(
    standin_npu: StandinNpu, tiny_llama_dir: Path, tiny_bert_dirs, monkeypatch: pytest.MonkeyPatch
) -> None:
    """docs/devices.md's `--judge-backend vllm --embedder-backend vllm` beside a torch cross-encoder: each
    engine asks for its part of the budget, and the parts with the torch reserve stay within the device."""
    monkeypatch.delenv("VLLM_ENABLE_V1_MULTIPROCESSING", raising=False)
    monkeypatch.setattr(vllm_runtime, "vllm_installed", lambda: True)
    vllm = StandinVllm("npu").install(monkeypatch)
    embedder_dir, reranker_dir = tiny_bert_dirs
    models = resolve_models(
        {"judge": str(tiny_llama_dir), "embedder": str(embedder_dir), "reranker": str(reranker_dir)},
        backends={"judge": "vllm", "embedder": "vllm"},
        device="npu:0",
    )
    models["judge"].load()
    models["embedder"].load()
    shares = [call.kwargs["gpu_memory_utilization"] for call in vllm.named("LLM")]
    assert len(shares) == 2
    assert sum(shares) + TORCH_RESERVE["reranker"] <= 0.9 < 1.0
    assert shares[0] > shares[1]  # the judge's KV cache gets the larger part


def test_the_budget_and_explicit_shares_are_honoured() -> None:
    judge = ModelSpec(model="/m/j", role="judge", backend="vllm", device="npu:1")
    embedder = ModelSpec(model="/m/e", role="embedder", backend="vllm", device="npu:1")
    split = split_memory({"judge": judge, "embedder": embedder.replace(gpu_memory_utilization=0.3)}, 0.8)
    assert (split["judge"].gpu_memory_utilization, split["embedder"].gpu_memory_utilization) == (0.5, 0.3)
    apart = split_memory({"judge": judge, "embedder": embedder.replace(device="npu:0")}, 0.8)
    assert apart["judge"].gpu_memory_utilization == apart["embedder"].gpu_memory_utilization == 0.8
    on_cpu = split_memory({"judge": judge.replace(device="cpu")})
    assert on_cpu["judge"].gpu_memory_utilization is None  # the CPU has no budget
    with pytest.raises(ConfigError, match=r"leaving nothing for the other vLLM engines.*Raise memory_budget"):
        split_memory({"judge": judge, "embedder": embedder.replace(gpu_memory_utilization=0.8)}, 0.8)
    with pytest.raises(ConfigError, match=r"memory_budget=1.5: the share of each accelerator"):
        split_memory({"judge": judge}, 1.5)


_ROLES = ("judge", "embedder", "reranker")


@st.composite
def _runs(draw: st.DrawFn) -> dict[str, ModelSpec]:
    specs = {}
    for role in draw(st.lists(st.sampled_from(_ROLES), min_size=1, max_size=3, unique=True)):
        backend = draw(st.sampled_from(["torch", "vllm"]))
        device = draw(st.sampled_from([None, "auto", "npu", "npu:0", "npu:1", "cuda:0"]))
        extra = {}
        if backend == "vllm":
            extra["tensor_parallel_size"] = draw(st.integers(1, 2))
            if draw(st.booleans()):
                extra["gpu_memory_utilization"] = draw(st.sampled_from([0.05, 0.1, 0.2]))
        specs[role] = ModelSpec(model=f"/m/{role}", role=role, backend=backend, device=device, **extra)
    return specs


@settings(max_examples=200, deadline=None)
@given(_runs(), st.sampled_from([0.5, 0.8, 0.9, 1.0]))
def test_no_device_is_asked_for_more_than_the_budget(specs: dict[str, ModelSpec], budget: float) -> None:
    try:
        split = split_memory(specs, budget)
    except ConfigError:
        return  # explicit shares and reserves that leave the others nothing: refused, never over-asked
    used: dict[int, float] = {}
    for role, spec in split.items():
        index = int(spec.device.partition(":")[2] or 0) if spec.device else 0
        size = spec.tensor_parallel_size or 1 if spec.local_backend == "vllm" else 1
        share = TORCH_RESERVE[role] if spec.local_backend == "torch" else spec.gpu_memory_utilization
        for slot in range(index, index + size):
            used[slot] = used.get(slot, 0.0) + share
    assert all(total <= budget + 1e-9 for total in used.values()), (used, budget)


def test_cli_carries_the_budget_and_the_engine_settings() -> None:
    argv = ["evaluate", "data.json", "--out", "out", "--memory-budget", "0.8"]
    args = build_parser().parse_args([*argv, "--judge-engine", "gpu_memory_utilization=0.5", "dtype=float16"])
    assert args.memory_budget == 0.8
    assert parse_engine_settings("judge", args.judge_engine) == {
        "gpu_memory_utilization": 0.5,
        "dtype": "float16",
    }
    with pytest.raises(ConfigError, match=r"--embedder-engine 'vram=3': write NAME=VALUE"):
        parse_engine_settings("embedder", ["vram=3"])


def test_evaluate_refuses_a_budget_that_is_not_a_share() -> None:
    from ascend_eval.api import evaluate

    with pytest.raises(ConfigError, match="memory_budget=0"):
        evaluate("bilingual-example", ["answer_similarity"], memory_budget=0, cache_dir=False, progress=False)


def test_provenance_records_each_models_device_and_dtype(tiny_llama_dir: Path) -> None:
    from ascend_eval.api import evaluate

    data = {
        "user_input": ["Where is Paris?"],
        "response": ["Paris is in France."],
        "retrieved_contexts": [["Paris is the capital of France."]],
    }
    result = evaluate(
        data, ["faithfulness"], judge=str(tiny_llama_dir), device="cpu", cache_dir=False, progress=False
    )
    judge = result.provenance["devices"]["judge"]
    assert judge["device"] == "cpu" and judge["dtype"] in ("float32", "bfloat16")
    assert "CPU" in judge["dtype_reason"]
