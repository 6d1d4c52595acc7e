"""TEIEmbedder and TEIReranker against a TEI stand-in on 127.0.0.1: TEI's request and response shapes, its
batch and payload limits, its errors, and the factory recognising a URL that ends in /embed or /rerank."""

from __future__ import annotations

import logging

import numpy as np
import pytest

from ascend_eval.models.embedder.tei import TEIEmbedder
from ascend_eval.models.errors import BackendError, ConfigError
from ascend_eval.models.factory import build, resolve
from ascend_eval.models.http import EndpointConfig
from ascend_eval.models.reranker.tei import TEIReranker
from ascend_eval.models.spec import ModelSpec
from ascend_eval.models.tei_api import tei_base, tei_route
from tests.models.loopback_server import EMBEDDINGS, Reply
from tests.models.tei_standin import EMBED, INFO, RERANK, TeiStandIn, overlap, trigram_vector


@pytest.fixture
def tei(loopback):
    return TeiStandIn(loopback).install()


def _config(tei: TeiStandIn, **overrides) -> EndpointConfig:
    settings = {
        "url": tei.url,
        "model": tei.model_id,
        "under_v1": False,
        "request_timeout": 5.0,
        "max_retries": 1,
        "backoff_base": 0.01,
        "backoff_max": 0.02,
    }
    return EndpointConfig(**{**settings, **overrides})


def test_embed_sends_tei_shape_and_returns_vectors_in_input_order(tei):
    texts = ["短", "a much longer text than the others", "中等长度的文本", "mid text"]
    with TEIEmbedder(_config(tei, parallelism=1), batch_size=2, query_prefix="query: ") as embedder:
        vectors = embedder.embed(texts, kind="query")
    expected = np.array([trigram_vector("query: " + t, tei.dim) for t in texts], dtype=np.float32)
    np.testing.assert_allclose(vectors, expected, atol=1e-6)
    assert vectors.dtype == np.float32 and vectors.shape == (4, tei.dim)
    bodies = tei.server.bodies(EMBED)
    assert [len(b["inputs"]) for b in bodies] == [2, 2]
    assert all(b["normalize"] is True and b["truncate"] is True for b in bodies)
    assert set(bodies[0]) == {"inputs", "normalize", "truncate"}  # TEI's fields, no OpenAI "model"/"input"
    assert bodies[0]["inputs"][0] == "query: a much longer text than the others"  # longest first


def test_rerank_sends_tei_shape_and_puts_scores_back_in_pair_order(tei):
    pairs = [("猫", "猫在睡觉"), ("猫", "狗在跑"), ("dog", "a dog runs"), ("猫", "小猫")]
    with TEIReranker(_config(tei, parallelism=1), batch_size=8) as reranker:
        scores = reranker.score(pairs)
    np.testing.assert_allclose(scores, [overlap(q, t) for q, t in pairs], atol=1e-6)
    bodies = tei.server.bodies(RERANK)
    assert [b["query"] for b in bodies] == ["猫", "dog"]  # grouped by query, first appearance first
    texts = ["猫在睡觉", "狗在跑", "小猫"]
    assert bodies[0] == {"query": "猫", "texts": texts, "raw_scores": False, "truncate": True}


def test_batches_over_the_servers_limit_are_split_to_it_and_later_calls_start_there(tei, caplog):
    tei.max_client_batch_size = 3
    embedder = TEIEmbedder(_config(tei), batch_size=8)
    with caplog.at_level(logging.WARNING):
        first = embedder.embed([f"text {i}" for i in range(8)])
    # refused once with 422, then at the limit TEI named (the three retries in any order: in parallel)
    assert tei.batches[0] == 8 and sorted(tei.batches[1:]) == [2, 3, 3]
    assert embedder.batch_size == 3 and "sending at most 3 per request" in caplog.text
    np.testing.assert_allclose(first[5], trigram_vector("text 5", tei.dim), atol=1e-6)
    embedder.embed(["x"] * 4)
    assert sorted(tei.batches[4:]) == [1, 3]


def test_a_body_over_the_payload_limit_is_halved_until_it_fits(tei):
    tei.payload_limit = 700
    texts = [f"{i:03d} " + "字" * 40 for i in range(8)]  # ~130 bytes each: 8 do not fit, 4 do
    with TEIReranker(_config(tei), batch_size=8) as reranker:
        scores = reranker.score([("字", t) for t in texts])
    assert tei.batches == [8, 4, 4] and np.allclose(scores, 1.0)  # two 4s: the order does not matter


def test_a_single_text_over_the_payload_limit_is_a_clear_error(tei):
    tei.payload_limit = 100
    with TEIEmbedder(_config(tei)) as embedder, pytest.raises(BackendError, match="payload-limit"):
        embedder.embed(["字" * 200])


def test_server_errors_fail_the_call_with_the_servers_message(tei):
    tei.server.enqueue(EMBED, Reply({"error": "model backend failed", "error_type": "Backend"}, status=424))
    with TEIEmbedder(_config(tei)) as embedder, pytest.raises(BackendError, match="model backend failed"):
        embedder.embed(["a"])


def test_overload_is_retried(tei):
    tei.server.enqueue(EMBED, Reply({"error": "overloaded", "error_type": "Overloaded"}, status=429))
    with TEIEmbedder(_config(tei)) as embedder:
        assert embedder.embed(["a"]).shape == (1, tei.dim)


@pytest.mark.parametrize(
    ("raw", "match"),
    [
        ('{"data": []}', "expected a JSON array"),  # an OpenAI-shaped body is not TEI's
        ("[[0.1, 0.2], [0.3]]", "differ in size"),
        ("[[0.1, NaN], [0.2, 0.3]]", "NaN or infinity"),
        ("[]", "non-empty array"),
        ("<html>502 Bad Gateway</html>", "not valid JSON"),
    ],
)
def test_malformed_embed_responses_are_errors(tei, raw, match):
    tei.server.enqueue(EMBED, Reply(raw))
    with TEIEmbedder(_config(tei)) as embedder, pytest.raises(BackendError, match=match):
        embedder.embed(["a", "b"])


def test_wrong_count_of_vectors_is_an_error(tei):
    tei.server.enqueue(EMBED, Reply([[1.0, 0.0]]))
    with TEIEmbedder(_config(tei)) as embedder, pytest.raises(BackendError, match="1 vectors for the 2"):
        embedder.embed(["a", "b"])


@pytest.mark.parametrize(
    "body", [[{"index": 0, "score": 0.5}, {"index": 0, "score": 0.1}], [{"index": 0}], {"rankings": []}]
)
def test_malformed_rerank_responses_are_errors(tei, body):
    tei.server.enqueue(RERANK, Reply(body))
    with TEIReranker(_config(tei)) as reranker, pytest.raises(BackendError, match="/rerank"):
        reranker.score([("q", "a"), ("q", "b")])


def test_clients_refuse_a_config_under_v1(tei):
    with pytest.raises(ConfigError, match="under_v1=False"):
        TEIEmbedder(EndpointConfig(url=tei.url, model="m"))


def test_urls_ending_in_a_tei_route_are_recognised():
    assert tei_route("http://10.0.0.1:8080/embed") == "/embed"
    assert tei_route("http://10.0.0.1:8080/rerank/") == "/rerank"
    assert tei_route("http://10.0.0.1:8000/v1/rerank") is None  # another API's rerank route
    assert tei_route("http://10.0.0.1:8000/v1/embeddings") is None
    assert tei_base("https://proxy.example/tei/embed") == "https://proxy.example/tei"


def test_a_tei_embed_url_builds_a_tei_embedder_that_posts_to_embed_not_v1_embeddings(tei):
    embedder = resolve(tei.url + "/embed", "embedder")
    assert isinstance(embedder, TEIEmbedder)
    assert embedder.model_id == f"tei:{tei.model_id}@{tei.url}"
    assert embedder.batch_size == tei.max_client_batch_size  # read from GET /info
    embedder.embed(["你好"])
    paths = [r.path for r in tei.server.requests]
    assert paths == [INFO, EMBED] and EMBEDDINGS not in paths and "/embed/v1/embeddings" not in paths


def test_a_tei_rerank_url_builds_a_tei_reranker(tei):
    reranker = resolve(tei.url + "/rerank", "reranker")
    assert isinstance(reranker, TEIReranker)
    assert reranker.score([("猫", "猫")]).tolist() == [1.0]


def test_a_named_model_skips_the_info_probe(tei):
    spec = ModelSpec(model=tei.url + "/embed", role="embedder", served_model_name="bge")
    embedder = build(spec)
    assert embedder.model_id == f"tei:bge@{tei.url}" and tei.server.requests == []


def test_a_server_without_info_is_a_clear_error_before_any_request(loopback):
    with pytest.raises(BackendError, match=r"GET http://127\.0\.0\.1:\d+/info .*served_model_name"):
        resolve(loopback.url + "/embed", "embedder")


def test_a_404_on_embed_is_an_error_naming_the_tei_url_shape(tei):
    spec = ModelSpec(model=tei.url + "/wrong/embed", role="embedder", served_model_name="bge")
    with pytest.raises(BackendError, match=r"HTTP 404.*ends in the route it serves"):
        build(spec).embed(["a"])


def test_a_tei_url_given_for_another_role_is_refused(tei):
    with pytest.raises(ConfigError, match=r"ends in /rerank.*Pass it as the cross_encoder"):
        resolve(tei.url + "/rerank", "embedder")
    with pytest.raises(ConfigError, match="ends in /embed"):
        resolve(tei.url + "/embed", "judge")
