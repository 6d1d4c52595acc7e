"""`build(spec)` and `resolve(value, role)`: from what users pass to model runtimes, with local models
loading only when a request needs them, and a model of the wrong role refused before anything loads."""

from __future__ import annotations

import numpy as np
import pytest

import ascend_eval
from ascend_eval.models.base import Embedder, GenerateRequest, GenerationParams, Judge, Message, Reranker
from ascend_eval.models.errors import ConfigError
from ascend_eval.models.factory import build, check, local_path, resolve
from ascend_eval.models.lazy import LazyEmbedder, LazyJudge, LazyReranker
from ascend_eval.models.spec import ModelSpec
from ascend_eval.models.weights.paths import local_model_id
from ascend_eval.models.weights.shipped import minilm_path
from tests.models.loopback_server import (
    CHAT,
    EMBEDDINGS,
    RANKING,
    chat_reply,
    embeddings_reply,
    ranking_reply,
)

DATA = {"question": ["Q?"], "answer": ["A holds."], "contexts": [["A holds"]]}


def test_instances_pass_through(rule_judge, ngram_embedder) -> None:
    assert resolve(rule_judge, "judge") is rule_judge
    assert resolve(ngram_embedder, "embedder") is ngram_embedder
    with pytest.raises(ConfigError, match=r"judge_backend='vllm' chooses the runtime .* ReplayJudge inst"):
        resolve(rule_judge, "judge", backend="vllm")


def test_bad_models_name_the_options(tmp_path) -> None:
    with pytest.raises(ConfigError, match="not an existing path, an http"):
        resolve("/no/such/dir", "judge")
    with pytest.raises(ConfigError, match="shipped embedder, not a judge"):
        resolve("all-minilm-l6-v2", "judge")
    with pytest.raises(ConfigError, match="needs a cross-encoder"):
        resolve(None, "reranker")
    with pytest.raises(ConfigError, match=r"neither config\.json nor modules\.json"):
        resolve(str(tmp_path), "embedder")
    with pytest.raises(ConfigError, match="has no role"):
        build(ModelSpec(model=str(tmp_path)))
    with pytest.raises(ConfigError, match="is a server URL; a local model is needed"):
        local_path(ModelSpec(model="http://127.0.0.1:9", role="judge"))


def test_local_embedder_loads_on_first_use_with_the_same_identity() -> None:
    embedder = resolve("all-minilm-l6-v2", "embedder")
    assert isinstance(embedder, LazyEmbedder) and isinstance(embedder, Embedder) and not embedder.loaded
    assert not isinstance(embedder, Judge) and not isinstance(embedder, Reranker)  # its own role only
    vectors = embedder.embed(["a cat sat on the mat"])
    assert embedder.loaded and vectors.shape == (1, 384)
    assert embedder.load().model_id == embedder.model_id
    same = [
        resolve(str(minilm_path()), "embedder"),
        build(ModelSpec(model="local:all-minilm-l6-v2", role="embedder")),
    ]
    assert {e.model_id for e in same} == {embedder.model_id}  # name, path or local:NAME: one id
    embedder.close()
    assert not embedder.loaded


def test_the_keyword_settings_fill_what_a_spec_leaves_open() -> None:
    embedder = resolve(ModelSpec(model=minilm_path()), "embedder", backend="torch", device="cpu")
    assert embedder.load().config.device == "cpu"
    embedder.close()
    with pytest.raises(ConfigError, match="embedder_backend='torch' but the embedder's ModelSpec says"):
        resolve(ModelSpec(model=minilm_path(), backend="vllm"), "embedder", backend="torch")


def test_local_judge_is_lazy_and_the_engine_settings_reach_its_config(tiny_llama_dir) -> None:
    judge = build(ModelSpec(model=tiny_llama_dir, role="judge", device="cpu", batch_size=4, max_model_len=64))
    assert isinstance(judge, LazyJudge) and not judge.loaded
    assert judge.model_id == local_model_id(tiny_llama_dir)
    assert judge.generate([]) == [] and not judge.loaded  # nothing to do loads nothing
    config = judge.load().config
    assert (config.max_batch_size, config.max_model_len, config.device) == (4, 64, "cpu")
    judge.close()


def test_a_model_of_another_role_is_refused_before_it_loads(tiny_llama_dir, rule_judge) -> None:
    embedder = resolve("all-minilm-l6-v2", "embedder")
    with pytest.raises(
        ConfigError, match=r"judge= got LazyEmbedder \('.*minilm.*'\), which is an embedder, where a judge"
    ):
        ascend_eval.evaluate(DATA, ["faithfulness"], judge=embedder, cache_dir=False, progress=False)
    with pytest.raises(ConfigError, match=r"A ModelSpec for a judge .* where an embedder is wanted"):
        # Checked even where the role is not needed (faithfulness embeds nothing).
        ascend_eval.evaluate(
            DATA, ["faithfulness"], judge=rule_judge, embedder=ModelSpec(model=tiny_llama_dir, role="judge")
        )
    reranker = build(ModelSpec(model=minilm_path(), role="reranker"))
    assert isinstance(reranker, LazyReranker) and not isinstance(reranker, Embedder)
    with pytest.raises(ConfigError, match="cross_encoder= got LazyEmbedder"):
        check(embedder, "reranker")
    with pytest.raises(ConfigError, match="which is no model runtime"):
        check(object(), "embedder")
    assert not embedder.loaded and not reranker.loaded


def test_a_fully_cached_run_loads_no_model(tiny_llama_dir, tmp_path) -> None:
    run = {"cache_dir": tmp_path, "progress": False}
    spec = ModelSpec(model=tiny_llama_dir, max_tokens=8)  # a random tiny judge: short answers
    first = ascend_eval.evaluate(DATA, ["faithfulness"], judge=spec, **run)
    judge = resolve(spec, "judge")
    assert judge.model_id == local_model_id(tiny_llama_dir) + "+max_tokens=8"
    again = ascend_eval.evaluate(DATA, ["faithfulness"], judge=judge, **run)
    assert not judge.loaded  # every request came from the cache, keyed by the id known without loading
    assert again.rows() == first.rows()
    assert first.provenance["models"] == again.provenance["models"] == {"judge": judge.model_id}


def test_an_endpoint_spec_reaches_the_client(loopback) -> None:
    loopback.enqueue("/v1/models", {"object": "list", "data": [{"id": "served-judge"}]})
    judge = build(ModelSpec(model=loopback.url + "/v1/chat/completions", role="judge", request_timeout=5,
                            max_retries=0, parallelism=2))  # fmt: skip
    assert judge.model_id == f"openai:served-judge@{loopback.url}/v1"  # discovered, path trimmed
    assert (judge.config.request_timeout, judge.config.max_retries, judge.config.parallelism) == (5, 0, 2)
    judge.close()

    loopback.route(CHAT, lambda body: chat_reply("ok", prompt_tokens=3, completion_tokens=1))
    tuned = build(
        ModelSpec(model=loopback.url, role="judge", served_model_name="m", max_tokens=7, temperature=0)
    )
    assert tuned.model_id == f"openai:m@{loopback.url}/v1+max_tokens=7,temperature=0.0"
    request = GenerateRequest((Message("user", "hi"),), GenerationParams(max_tokens=300, temperature=0.5))
    assert tuned.generate([request])[0].text == "ok"
    [body] = loopback.bodies(CHAT)
    assert (body["max_tokens"], body["temperature"], body["model"]) == (7, 0.0, "m")
    tuned.close()


def test_embedding_and_ranking_endpoints(loopback) -> None:
    loopback.route(EMBEDDINGS, lambda body: embeddings_reply([[1.0, 0.0]] * len(body["input"])))
    loopback.route(RANKING, lambda body: ranking_reply([0.5] * len(body["passages"])))
    embedder = build(ModelSpec(model=loopback.url + "/v1/embeddings", role="embedder", served_model_name="e",
                               send_input_type=True))  # fmt: skip
    assert embedder.embed(["q"], kind="query").shape == (1, 2)
    assert loopback.bodies(EMBEDDINGS)[0]["input_type"] == "query"  # NIM's field, asked for
    loopback.enqueue("/v1/models", {"data": [{"id": "r"}]})
    reranker = resolve(loopback.url + "/v1/ranking", "reranker", device="npu:0")  # device: local models only
    assert reranker.model_id == f"openai:r@{loopback.url}/v1"
    np.testing.assert_allclose(reranker.score([("q", "p")]), [0.5])  # NIM's raw logit
    embedder.close()
    reranker.close()
