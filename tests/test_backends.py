"""Building backends from what users pass, and loading local models only when a request needs them."""

from __future__ import annotations

import pytest

import ascend_eval
from ascend_eval.backends import Deferred, build_embedder, build_judge, build_reranker
from ascend_eval.models.base import Embedder, Judge
from ascend_eval.models.errors import ConfigError
from ascend_eval.models.weights.shipped import minilm_path


def test_instances_pass_through(rule_judge, ngram_embedder):
    assert build_judge(rule_judge) is rule_judge
    assert build_embedder(ngram_embedder) is ngram_embedder


def test_bad_specs_name_the_options(tmp_path):
    with pytest.raises(ConfigError, match="not an existing path, an http"):
        build_judge("/no/such/dir")
    with pytest.raises(ConfigError, match="shipped embedder, not a judge"):
        build_judge("all-minilm-l6-v2")
    with pytest.raises(ConfigError, match="needs a cross-encoder"):
        build_reranker(None)
    with pytest.raises(ConfigError, match=r"neither config\.json nor modules\.json"):
        build_embedder(str(tmp_path))


def test_local_embedder_loads_on_first_use_with_the_same_identity():
    embedder = build_embedder("all-minilm-l6-v2")
    assert isinstance(embedder, Deferred) and isinstance(embedder, Embedder) and not embedder.loaded
    vectors = embedder.embed(["a cat sat on the mat"])
    assert embedder.loaded and vectors.shape == (1, 384)
    assert embedder.backend().model_id == embedder.model_id
    assert embedder.model_id == build_embedder(str(minilm_path())).model_id  # name or path: one id


def test_local_judge_is_deferred(tiny_llama_dir):
    judge = build_judge(str(tiny_llama_dir))
    assert isinstance(judge, Judge) and not judge.loaded
    assert judge.generate([]) == [] and not judge.loaded  # nothing to do loads nothing


def test_a_fully_cached_run_loads_no_model(tiny_llama_dir, tmp_path, monkeypatch):
    data = {"question": ["Q?"], "answer": ["A holds."], "contexts": [["A holds"]]}
    first = ascend_eval.evaluate(data, ["faithfulness"], judge=str(tiny_llama_dir), cache_dir=tmp_path,
                                 progress=False)
    built = []
    real_backend = Deferred.backend

    def spy(self):
        built.append(self.model_id)
        return real_backend(self)

    monkeypatch.setattr(Deferred, "backend", spy)
    again = ascend_eval.evaluate(data, ["faithfulness"], judge=str(tiny_llama_dir), cache_dir=tmp_path,
                                 progress=False)
    assert built == []
    assert again.rows() == first.rows()
