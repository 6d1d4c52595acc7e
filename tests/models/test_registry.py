"""The backend registry: every (role, backend) the factory has always built is registered, next to its
runtime class, and `build` makes that class from it; importing the registry and every backend imports no
engine."""

from __future__ import annotations

import importlib
import json
import subprocess
import sys

import pytest

from ascend_eval.models.backends import BUILDERS
from ascend_eval.models.factory import build
from ascend_eval.models.lazy import LazyEmbedder, LazyJudge, LazyReranker
from ascend_eval.models.registry import register
from ascend_eval.models.spec import ModelSpec

URL = "http://127.0.0.1:9"
ENDPOINTS = {
    # (role, backend): (module, runtime class, the URL that reaches it)
    ("judge", "openai"): ("judge.openai", "OpenAIJudge", f"{URL}/v1"),
    ("embedder", "openai"): ("embedder.openai", "OpenAIEmbedder", f"{URL}/v1"),
    ("reranker", "openai"): ("reranker.openai", "OpenAIReranker", f"{URL}/v1/ranking"),
    ("embedder", "tei"): ("embedder.tei", "TEIEmbedder", f"{URL}/embed"),
    ("reranker", "tei"): ("reranker.tei", "TEIReranker", f"{URL}/rerank"),
}
LOCAL = {
    # (role, backend): (module, runtime class, its config class)
    ("judge", "torch"): ("judge.torch.judge", "TorchJudge", "TorchJudgeConfig"),
    ("judge", "vllm"): ("judge.vllm", "VllmJudge", "VllmJudgeConfig"),
    ("embedder", "torch"): ("embedder.sentence_transformers", "TorchEmbedder", "TorchEmbedderConfig"),
    ("embedder", "vllm"): ("embedder.vllm", "VllmEmbedder", "VllmEmbedderConfig"),
    ("reranker", "torch"): ("reranker.cross_encoder", "TorchReranker", "TorchRerankerConfig"),
    ("reranker", "vllm"): ("reranker.vllm", "VllmReranker", "VllmRerankerConfig"),
}
LAZY = {"judge": LazyJudge, "embedder": LazyEmbedder, "reranker": LazyReranker}


def _module(name):
    return importlib.import_module(f"ascend_eval.models.{name}")


def test_every_backend_the_factory_had_is_registered_in_its_runtimes_module():
    assert set(BUILDERS) == set(ENDPOINTS) | set(LOCAL)
    for pair, (module, *_) in {**ENDPOINTS, **LOCAL}.items():
        assert BUILDERS[pair].__module__ == f"ascend_eval.models.{module}", pair


@pytest.mark.parametrize("pair", sorted(ENDPOINTS))
def test_an_endpoint_builds_its_client(pair):
    role, _ = pair
    module, runtime, url = ENDPOINTS[pair]
    built = build(ModelSpec(model=url, role=role, served_model_name="m"))  # named: nothing is asked
    try:
        assert type(built) is getattr(_module(module), runtime)
    finally:
        built.close()


@pytest.mark.parametrize("pair", sorted(LOCAL))
def test_a_local_model_builds_its_runtime_on_first_use(pair, monkeypatch, tmp_path, request):
    role, backend = pair
    module, runtime, config = LOCAL[pair]
    if role == "judge":
        model = request.getfixturevalue("tiny_llama_dir")
    else:
        (tmp_path / "config.json").write_text(json.dumps({"architectures": ["BertModel"]}), encoding="utf-8")
        model = tmp_path
    monkeypatch.setattr("ascend_eval.models.vllm_runtime.vllm_installed", lambda: True)
    made = []

    class Loaded:  # stands in for the runtime: records the config it is loaded from
        def __init__(self, config):
            made.append(config)
            self.model_id = lazy.model_id

    monkeypatch.setattr(_module(module), runtime, Loaded)
    lazy = build(ModelSpec(model=str(model), role=role, backend=backend, device="cpu"))
    assert type(lazy) is LAZY[role] and not made  # nothing loads before the first request
    assert isinstance(lazy.load(), Loaded)
    assert type(made[0]) is getattr(_module(module), config)


def test_a_second_builder_for_a_pair_is_refused():
    with pytest.raises(ValueError, match=r"\('judge', 'torch'\) is already built by"):
        register("judge", "torch")(lambda spec: None)


def test_the_registry_and_every_backend_import_no_engine():
    code = (
        "import sys, ascend_eval.models.registry, ascend_eval.models.backends; "
        "engines = ('torch', 'vllm', 'torch_npu', 'transformers', 'sentence_transformers', 'ray'); "
        "print([m for m in engines if m in sys.modules])"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
