"""The engine's public view of its models by role: what the RAG pipeline reads instead of reaching into
the engine's backends. A local model is named without loading and loads only when its runtime is asked for."""

from __future__ import annotations

import pytest

from ascend_eval.engine import Backends, Engine
from ascend_eval.models.errors import ConfigError
from ascend_eval.models.factory import resolve
from ascend_eval.models.lazy import LazyEmbedder


def test_models_by_role_are_named_without_loading(rule_judge) -> None:
    embedder = resolve("all-minilm-l6-v2", "embedder", device="cpu")
    assert isinstance(embedder, LazyEmbedder)
    engine = Engine(Backends(judge=rule_judge, embedder=embedder))
    assert engine.has("judge") and engine.has("embedder") and not engine.has("reranker")
    assert engine.model_id("judge") == "rules-v1" and engine.model_id("embedder") == embedder.model_id
    assert engine.loaded("judge") and not engine.loaded("embedder")  # an instance is ready as it is
    assert engine.runtime("judge") is rule_judge
    runtime = engine.runtime("embedder")
    assert type(runtime).__name__ == "TorchEmbedder" and runtime.model_id == embedder.model_id
    assert engine.loaded("embedder") and runtime.tokenizer is not None
    with pytest.raises(ConfigError, match="No reranker is configured"):
        engine.model_id("reranker")
    embedder.close()
