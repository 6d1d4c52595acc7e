"""The first run on an Ascend NPU or a CUDA GPU, without one: engine start (spawn, visible devices, the
CUDA query order), the dtype policy per chip, and the device calls of the torch runtimes, against the
recording stand-ins of `tests/models/standins.py` (torch_npu as it behaves in v2.10; vLLM's `LLM` on a
platform that cannot run here)."""

from __future__ import annotations

import importlib.abc
import importlib.util
import os
import sys
from pathlib import Path

import pytest
import torch
from torch.utils._python_dispatch import TorchDispatchMode

from ascend_eval.models.device import DeviceInfo, Precision, resolve_device
from ascend_eval.models.errors import ConfigError
from ascend_eval.models.vllm_runtime import VllmEngineConfig, start_engine
from tests.models.standins import StandinNpu, StandinVllm


@pytest.fixture
def checkpoint(tmp_path: Path) -> Path:
    (tmp_path / "config.json").write_text("{}", encoding="utf-8")
    return tmp_path


@pytest.fixture(scope="module")
def tiny_cross_encoder_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A tiny random BERT with MiniLM's tokenizer (what the embedder reads before vLLM starts)."""
    import transformers

    from tests.tiny_models import save_tiny_bert

    return save_tiny_bert(tmp_path_factory.mktemp("tiny-bert"), transformers.BertModel)


@pytest.fixture
def engine_process(monkeypatch: pytest.MonkeyPatch) -> None:
    """vLLM's default: the engine in a process of its own (the vllm tests' conftest turns it off)."""
    monkeypatch.delenv("VLLM_ENABLE_V1_MULTIPROCESSING", raising=False)


# ------------------------------------------------------------------ finding 2: spawn after the NPU started


def test_engine_starts_by_spawn_once_the_npu_is_initialised(
    standin_npu: StandinNpu, checkpoint: Path, engine_process: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    vllm = StandinVllm("npu").install(monkeypatch)
    # With the dtype set, nothing here touches the NPU: vLLM's own choice (fork) stands.
    start_engine(VllmEngineConfig(checkpoint, device="npu:0", dtype="float16"), "test")
    assert "VLLM_WORKER_MULTIPROC_METHOD" not in vllm.named("LLM")[0].environ
    DeviceInfo("npu", 0).activate()  # as a torch embedder does before it moves to the NPU
    assert standin_npu.is_initialized()
    start_engine(VllmEngineConfig(checkpoint, device="npu:0", dtype="float16"), "test")
    assert vllm.named("LLM")[1].environ["VLLM_WORKER_MULTIPROC_METHOD"] == "spawn"
    assert "VLLM_WORKER_MULTIPROC_METHOD" not in os.environ  # restored once the engine started


def test_a_forked_child_of_an_initialised_process_cannot_use_the_npu(standin_npu: StandinNpu) -> None:
    """What the stand-in reproduces of torch_npu, and why the spawn above is needed."""
    standin_npu.forked = True
    with pytest.raises(RuntimeError, match="Cannot re-initialize NPU in forked subprocess"):
        DeviceInfo("npu", 0).activate()


def test_start_method_is_checked_and_can_be_forced(
    standin_npu: StandinNpu, checkpoint: Path, engine_process: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    with pytest.raises(ConfigError, match=r"start_method='thread'; valid: \['auto', 'spawn', 'fork'\]"):
        VllmEngineConfig(checkpoint, start_method="thread")
    vllm = StandinVllm("npu").install(monkeypatch)
    start_engine(VllmEngineConfig(checkpoint, device="npu:0", start_method="spawn"), "test")
    assert vllm.named("LLM")[0].environ["VLLM_WORKER_MULTIPROC_METHOD"] == "spawn"


# ------------------------------------------------------------------ finding 4: visible devices restored


def test_an_engine_on_npu_1_leaves_every_npu_visible(
    standin_npu: StandinNpu, checkpoint: Path, engine_process: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    vllm = StandinVllm("npu").install(monkeypatch)
    _, device, _ = start_engine(VllmEngineConfig(checkpoint, device="npu:1"), "test")
    assert vllm.named("LLM")[0].environ["ASCEND_RT_VISIBLE_DEVICES"] == "5"  # the engine saw its NPU only
    assert os.environ["ASCEND_RT_VISIBLE_DEVICES"] == "4,5"
    assert device.describe() == "npu:1 (ASCEND_RT_VISIBLE_DEVICES=4,5)"
    assert resolve_device("npu:1").torch_device == "npu:1"  # the next model still sees both
    start_engine(VllmEngineConfig(checkpoint, device="npu:1"), "test")  # and a second engine too
    assert vllm.named("LLM")[1].environ["ASCEND_RT_VISIBLE_DEVICES"] == "5"


def test_an_in_process_engine_cannot_move_to_another_npu(
    standin_npu: StandinNpu, checkpoint: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    StandinVllm("npu").install(monkeypatch)
    monkeypatch.setenv("VLLM_ENABLE_V1_MULTIPROCESSING", "0")
    with pytest.raises(ConfigError, match=r"in-process vLLM engine.*cannot be moved to npu:1"):
        start_engine(VllmEngineConfig(checkpoint, device="npu:1"), "test")
    assert os.environ["ASCEND_RT_VISIBLE_DEVICES"] == "4,5"
    start_engine(VllmEngineConfig(checkpoint, device="npu:0"), "test")  # its first device is fine


# ------------------------------------------------------------------ finding 3: vLLM before any CUDA query


class _RecordingImport(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Serves the stand-in `vllm` modules on import, and records each import."""

    def __init__(self, vllm: StandinVllm, events: list[str]) -> None:
        self.vllm, self.events = vllm, events

    def find_spec(self, name: str, path: object = None, target: object = None) -> object:
        return importlib.util.spec_from_loader(name, self) if name in self.vllm.modules else None

    def create_module(self, spec: object) -> object:
        self.events.append(f"import {spec.name}")  # type: ignore[attr-defined]
        return self.vllm.modules[spec.name]  # type: ignore[attr-defined]

    def exec_module(self, module: object) -> None:
        return None


def test_vllm_embedder_imports_vllm_before_asking_about_cuda(
    tiny_cross_encoder_dir: Path, engine_process: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    from ascend_eval.models.embedder.vllm import VllmEmbedder, VllmEmbedderConfig

    events: list[str] = []
    vllm = StandinVllm("cuda", capability=(9, 0))
    for name in vllm.modules:  # absent now, and absent again after the test
        monkeypatch.setitem(sys.modules, name, None)
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.setattr(sys, "meta_path", [_RecordingImport(vllm, events), *sys.meta_path])
    # torch.cuda.is_available() initialises the CUDA driver unless vLLM's NVML check is on; device_count()
    # asks NVML first. Both are recorded, with whether vLLM was imported by then.
    monkeypatch.setattr(torch.cuda, "is_available", lambda: events.append("cuda.is_available") or True)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: events.append("cuda.device_count") or 2)
    embedder = VllmEmbedder(VllmEmbedderConfig(tiny_cross_encoder_dir, device="cuda:0"))
    assert events[0] == "import vllm", events
    assert "cuda.is_available" not in events
    assert embedder.precision == Precision("bfloat16", "CUDA compute capability 9.0 >= 8.0: native bfloat16")
    assert vllm.named("LLM")[0].kwargs["dtype"] == "bfloat16"


# ------------------------------------------------------------------ finding 5: the dtype policy per chip


@pytest.mark.parametrize(
    ("soc", "dtype"),
    [("Ascend910B3", "bfloat16"), ("Ascend910_9391", "bfloat16"), ("Ascend310P3", "float16")],
)
def test_npu_dtype_follows_the_soc(standin_npu: StandinNpu, soc: str, dtype: str) -> None:
    standin_npu.soc = soc
    precision = DeviceInfo("npu", 0).precision()
    assert precision.dtype == dtype and soc in precision.reason


def test_npu_without_the_bf16_query_goes_by_the_soc_name(
    standin_npu: StandinNpu, monkeypatch: pytest.MonkeyPatch
) -> None:
    standin_npu.soc = "Ascend910ProA"
    monkeypatch.delattr(StandinNpu, "is_bf16_supported")
    assert DeviceInfo("npu", 0).precision() == Precision(
        "float16", "Ascend910ProA is not known to compute bfloat16"
    )


@pytest.mark.parametrize(
    ("capability", "dtype"), [((7, 5), "float16"), ((8, 0), "bfloat16"), ((9, 0), "bfloat16")]
)
def test_cuda_dtype_follows_the_compute_capability(
    capability: tuple[int, int], dtype: str, monkeypatch
) -> None:
    assert DeviceInfo("cuda", 0).precision(capability).dtype == dtype
    monkeypatch.setattr(torch.cuda, "get_device_capability", lambda index=0: capability)
    assert DeviceInfo("cuda", 0).default_dtype == dtype  # asked of torch when vLLM has not said


def test_vllm_on_a_310p_computes_in_float16(
    standin_npu: StandinNpu, checkpoint: Path, engine_process: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    standin_npu.soc = "Ascend310P3"
    vllm = StandinVllm("npu").install(monkeypatch)
    _, _, precision = start_engine(VllmEngineConfig(checkpoint, device="npu:0"), "test")
    assert vllm.named("LLM")[0].kwargs["dtype"] == precision.dtype == "float16"
    assert "Ascend310P3 has no bfloat16" in precision.reason


# ---------------------------------------------------------- finding 7: the torch runtimes' device calls


def test_synchronize_waits_for_its_own_device(standin_npu: StandinNpu) -> None:
    DeviceInfo("npu", 1, "4,5").synchronize()
    assert standin_npu.calls[-1] == "synchronize:npu:1"
    DeviceInfo("npu", 1, "4,5").activate()
    assert standin_npu.calls[-1] == "set_device:1"


def test_torch_judge_sets_its_device_before_moving_the_model(
    tiny_llama_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from ascend_eval.models.judge.torch import TorchJudge, TorchJudgeConfig
    from ascend_eval.models.judge.torch import judge as judge_module

    events: list[str] = []

    class Recording(DeviceInfo):
        def activate(self) -> None:
            events.append("activate")

    monkeypatch.setattr(judge_module, "resolve_device", lambda spec=None: Recording("cpu"))
    move = torch.nn.Module.to
    monkeypatch.setattr(
        torch.nn.Module, "to", lambda self, *a, **k: events.append("to") or move(self, *a, **k)
    )
    TorchJudge(TorchJudgeConfig(tiny_llama_dir, device="cpu"))
    assert "activate" in events and events.index("activate") < events.index("to"), events


class _DeviceOps(TorchDispatchMode):
    """Records every aten op that touches a tensor outside the CPU."""

    def __init__(self) -> None:
        super().__init__()
        self.ops: list[str] = []

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        flat = [a for a in [*args, *(kwargs or {}).values()] if isinstance(a, torch.Tensor)]
        if any(t.device.type != "cpu" for t in flat):
            self.ops.append(func.overloadpacket.__name__)
        return func(*args, **(kwargs or {}))


def test_grammar_mask_runs_only_masked_fill_on_the_device(tiny_llama_dir: Path) -> None:
    """The scores on the meta device stand for the NPU: every op of the mask that is not the move of the
    finished mask or the `masked_fill` runs on the CPU (the right shift above all)."""
    from ascend_eval.models.base import GenerationParams
    from ascend_eval.models.judge.torch import TorchJudge, TorchJudgeConfig
    from ascend_eval.models.judge.torch.processors import GrammarMask

    judge = TorchJudge(TorchJudgeConfig(tiny_llama_dir, device="cpu"))
    schema = GenerationParams.schema_text({"type": "object", "properties": {"v": {"type": "integer"}}})
    grammar = judge.compile_schema(schema)
    vocab = grammar.tokenizer_info.vocab_size
    on_cpu = GrammarMask(grammar)
    on_cpu.add(2)
    expected = on_cpu.mask(torch.zeros(2, vocab + 3))
    mask = GrammarMask(grammar)
    mask.add(2)
    recorder = _DeviceOps()
    with recorder:
        out = mask.mask(torch.zeros(2, vocab + 3, device="meta"))
    assert out.device.type == "meta" and out.shape == expected.shape
    assert set(recorder.ops) <= {"_to_copy", "copy_", "empty_strided", "masked_fill"}, recorder.ops
    assert torch.isinf(expected[:, vocab:]).all() and not torch.isinf(expected).all()  # the CPU path is right
