"""Request codecs: one per kind owns its batch key, backend call, failure, tokens and cache encoding."""

from __future__ import annotations

import sqlite3

import numpy as np
import pytest

from ascend_eval.engine import Backends, Engine, RequestCache, request_key
from ascend_eval.engine.codecs import (
    ClassifyCodec,
    CrossScoreCodec,
    EmbedCodec,
    GenerateCodec,
    codec_for,
)
from ascend_eval.models.base import (
    ClassifyRequest,
    ClassifyResult,
    CrossScoreRequest,
    EmbedRequest,
    GenerateRequest,
    GenerateResult,
    GenerationParams,
    Message,
)
from ascend_eval.models.judge.replay import ReplayJudge

CHAT = (Message("user", "Is the sky blue? 天空是蓝色的吗？"),)

# One request and one answer per kind, with the codec that must own it.
CASES = [
    (
        GenerateCodec,
        GenerateRequest(CHAT, GenerationParams(max_tokens=8), tag="statements@1"),
        GenerateResult('{"statements": ["天空是蓝色的。"]}', "stop", 17, 9),
    ),
    (
        ClassifyCodec,
        ClassifyRequest(CHAT, ("0", "1"), tag="nli@1"),
        ClassifyResult(("0", "1"), (0.125, 0.875), 21),
    ),
    (EmbedCodec, EmbedRequest("北京", "query"), np.array([0.6, -0.8, 0.0], dtype=np.float32)),
    (CrossScoreCodec, CrossScoreRequest("q", "passage"), -3.25),
]
IDS = [c.__name__ for c, _, _ in CASES]


def same(a, b) -> bool:
    if isinstance(b, np.ndarray):
        return isinstance(a, np.ndarray) and a.dtype == np.float32 and np.array_equal(a, b)
    return a == b


@pytest.mark.parametrize(("codec_type", "request_", "result"), CASES, ids=IDS)
def test_codec_for_finds_the_one_codec_of_each_kind(codec_type, request_, result):
    assert type(codec_for(request_)) is codec_type
    assert codec_for(request_) is codec_for(request_)  # stateless: one instance serves every request


def test_an_unknown_request_type_is_a_clear_error():
    with pytest.raises(TypeError, match="Unknown request type str; valid: GenerateRequest"):
        codec_for("not a request")  # type: ignore[arg-type]


@pytest.mark.parametrize(("codec_type", "request_", "result"), CASES, ids=IDS)
def test_every_kind_round_trips_through_a_real_sqlite_file(tmp_path, codec_type, request_, result):
    path = tmp_path / "c.sqlite"
    key = request_key(request_, "m")
    with RequestCache(path) as cache:
        cache.put_many([(key, request_, result)])
    with RequestCache(path) as cache:  # a fresh connection: the answer comes from the file
        got = cache.get_many([(key, request_)])[key]
    assert same(got, result)
    # The row holds exactly what the codec encodes.
    db = sqlite3.connect(path)
    [(body, blob)] = db.execute("SELECT body, blob FROM results WHERE key = ?", (key,)).fetchall()
    db.close()
    assert (body, blob) == codec_for(request_).encode(result)
    assert same(codec_for(request_).decode(request_, body, blob), result)


def test_group_keys_split_by_kind_and_params_and_label_the_stats():
    gen = GenerateCodec()
    a = GenerateRequest(CHAT, GenerationParams(max_tokens=8), tag="p@1")
    b = GenerateRequest(CHAT, GenerationParams(max_tokens=9), tag="p@1")
    assert gen.group(a)[0] != gen.group(b)[0]
    assert gen.group(a) == (("generate", a.params), "judge.generate[p@1]")
    assert gen.group(GenerateRequest(CHAT))[1] == "judge.generate[untagged]"
    # Two prompts with the same labels share one classify batch; the label still names each prompt.
    c1, c2 = ClassifyRequest(CHAT, ("0", "1"), tag="x@1"), ClassifyRequest(CHAT, ("0", "1"), tag="y@1")
    assert ClassifyCodec().group(c1)[0] == ClassifyCodec().group(c2)[0]
    assert ClassifyCodec().group(c2)[1] == "judge.classify[y@1]"
    assert EmbedCodec().group(EmbedRequest("x", "query")) == (("embed", "query"), "embedder.query")
    assert EmbedCodec().group(EmbedRequest("x")) == (("embed", "document"), "embedder.document")
    assert CrossScoreCodec().group(CrossScoreRequest("q", "p")) == (("score",), "reranker.score")
    kinds = {codec_for(r).group(r)[0][0] for _, r, _ in CASES}
    assert len(kinds) == 4  # no two kinds can ever share a batch


def test_errors_and_tokens():
    assert GenerateCodec().error(GenerateResult.failed("HTTP 500")) == "HTTP 500"
    assert GenerateCodec().error(GenerateResult("x", "stop")) is None
    assert ClassifyCodec().error(ClassifyResult.failed(("0", "1"), "oom")) == "oom"
    assert GenerateCodec().tokens(GenerateResult("x", "stop", 11, 3)) == (11, 3)
    assert ClassifyCodec().tokens(ClassifyResult(("0", "1"), (0.5, 0.5), 7)) == (7, 0)
    assert EmbedCodec().error(np.zeros(2, np.float32)) is None
    assert EmbedCodec().tokens(np.zeros(2, np.float32)) == (0, 0)
    assert CrossScoreCodec().tokens(0.5) == (0, 0)


def test_calls_return_one_result_per_request_in_order():
    class Embedder:
        model_id = "e"

        def embed(self, texts, *, kind="document"):
            assert kind == "query"
            return np.array([[len(t), 0.0] for t in texts], dtype=np.float64)

    class Reranker:
        model_id = "r"

        def score(self, pairs):
            return np.array([len(q) + len(p) for q, p in pairs], dtype=np.float32)

    rows = EmbedCodec().call(Embedder(), [EmbedRequest("a", "query"), EmbedRequest("abc", "query")])
    assert [r.dtype for r in rows] == [np.float32, np.float32] and [r[0] for r in rows] == [1.0, 3.0]
    scores = CrossScoreCodec().call(Reranker(), [CrossScoreRequest("q", "pp"), CrossScoreRequest("", "")])
    assert scores == [3.0, 0.0] and all(type(s) is float for s in scores)
    judge = ReplayJudge(lambda r: r.messages[-1].content[:3], lambda r: [0.25, 0.75])
    [text] = GenerateCodec().call(judge, [GenerateRequest(CHAT)])
    assert text.text == "Is "
    [probs] = ClassifyCodec().call(judge, [ClassifyRequest(CHAT, ("0", "1"))])
    assert probs.probs == (0.25, 0.75)


def test_a_wrong_result_count_fails_that_batch_only():
    class Short:
        model_id = "short"

        def embed(self, texts, *, kind="document"):
            if kind == "query":
                return np.ones((len(texts) - 1, 2), dtype=np.float32)  # one row missing
            return np.ones((len(texts), 2), dtype=np.float32)

    def plan(request):
        [vector] = yield [request]
        return float(vector.sum())

    engine = Engine(Backends(embedder=Short()))
    out = engine.run({"q": plan(EmbedRequest("x", "query")), "d": plan(EmbedRequest("x"))})
    assert out["q"].reason == "backend_error: Short returned 0 results for 1 requests"
    assert out["d"] == 2.0
    assert engine.rounds[0].failed == 1 and engine.rounds[0].batches == {
        "embedder.query": 1,
        "embedder.document": 1,
    }


def test_stats_count_tokens_through_the_codecs():
    judge = ReplayJudge(
        lambda r: GenerateResult("ok", "stop", 10, 2),
        lambda r: ClassifyResult(r.labels, (0.5, 0.5), 7),
        model_id="tokens",
    )

    def plan():
        yield [GenerateRequest(CHAT, tag="a@1"), ClassifyRequest(CHAT, ("0", "1"), tag="b@1")]
        return 1.0

    engine = Engine(Backends(judge=judge))
    assert engine.run({0: plan()}) == {0: 1.0}
    stats = engine.rounds[0]
    assert (stats.tokens_in, stats.tokens_out, stats.sent) == (17, 2, 2)
    assert stats.batches == {"judge.generate[a@1]": 1, "judge.classify[b@1]": 1}
