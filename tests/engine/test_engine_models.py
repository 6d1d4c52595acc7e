"""The models by role (`Backends`): what the engine routes requests with, and what the RAG pipeline reads
to name, load and inspect them. A local model is named without loading and loads only when its runtime is
asked for."""

from __future__ import annotations

import pytest

from ascend_eval.engine import Backends
from ascend_eval.models.errors import ConfigError
from ascend_eval.models.factory import resolve
from ascend_eval.models.lazy import LazyEmbedder


def test_models_by_role_are_named_without_loading(rule_judge) -> None:
    embedder = resolve("all-minilm-l6-v2", "embedder", device="cpu")
    assert isinstance(embedder, LazyEmbedder)
    backends = Backends(judge=rule_judge, embedder=embedder)
    assert backends.has("judge") and backends.has("embedder") and not backends.has("reranker")
    assert backends.model_id("judge") == "rules-v1" and backends.model_id("embedder") == embedder.model_id
    assert backends.loaded("judge") and not backends.loaded("embedder")  # an instance is ready as it is
    assert backends.runtime("judge") is rule_judge
    runtime = backends.runtime("embedder")
    assert type(runtime).__name__ == "TorchEmbedder" and runtime.model_id == embedder.model_id
    assert backends.loaded("embedder") and runtime.tokenizer is not None
    with pytest.raises(ConfigError, match="No reranker is configured"):
        backends.model_id("reranker")
    embedder.close()
