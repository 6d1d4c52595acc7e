"""`build_rag_rows`: retrieval order and top_k, reranking, batched and cached answer generation, complete
rows left alone, and the errors raised before any model loads."""

from __future__ import annotations

import json

import numpy as np
import pytest

from ascend_eval.engine import RequestCache
from ascend_eval.examples import builtin_corpus, builtin_dataset
from ascend_eval.models.base import GenerateRequest
from ascend_eval.models.errors import ConfigError, DataError
from ascend_eval.models.judge.replay import ReplayJudge
from ascend_eval.pipeline import (
    ANSWER_TAG,
    CONTEXT_IDS,
    EmbeddingMemo,
    PipelineConfig,
    build_rag_rows,
    chunk_corpus,
)
from tests.conftest import NgramEmbedder

CORPUS = builtin_corpus("ascend-eval/rag-mini-en")


def questions(name: str = "ascend-eval/rag-mini-en") -> list[dict]:
    data = json.loads(builtin_dataset(name).read_text(encoding="utf-8"))["data"]
    return [{"id": r["id"], "user_input": r["question"], "reference": r["ground_truth"]} for r in data]


def answer_rule(request: GenerateRequest) -> str:
    """A recorded 'model' whose answer names the question and how many passages it saw."""
    user = request.messages[-1].content
    question = user.split("Question: ")[-1].split("问题：")[-1].split("\n")[0]
    return f" Answer to {question!r} from {user.count(chr(10) + '[')} passages. "


@pytest.fixture
def generator() -> ReplayJudge:
    return ReplayJudge(generate_rule=answer_rule, model_id="replay-rag")


class LengthReranker:
    """A deterministic reranker: longer passages score higher. Records its calls."""

    model_id = "length-reranker"

    def __init__(self) -> None:
        self.calls: list[int] = []

    def score(self, pairs):
        self.calls.append(len(pairs))
        return np.array([len(p) for _, p in pairs], dtype=np.float32)


def test_complete_rows_pass_through_without_touching_a_model(generator) -> None:
    embedder = NgramEmbedder()
    rows = [
        {"user_input": "q", "retrieved_contexts": ["c"], "response": "a", "reference": "r", "extra": 1},
        {"question": "q2", "contexts": ["c2"], "answer": "a2"},  # legacy names count too
    ]
    out = build_rag_rows(rows, corpus=None, config=PipelineConfig(), embedder=embedder, generator=generator)
    assert out == rows and out[0] is not rows[0]
    assert embedder.calls == [] and generator.calls == []


def test_retrieval_order_and_top_k_match_brute_force(generator) -> None:
    config = PipelineConfig(chunk_size=200, chunk_overlap=20, top_k=3)
    rows = [{k: v for k, v in r.items()} | {"response": "given"} for r in questions()[:5]]
    embedder = NgramEmbedder()
    out = build_rag_rows(
        rows, corpus=CORPUS, config=config, embedder=embedder, generator=generator, memo=EmbeddingMemo()
    )
    chunks = chunk_corpus(CORPUS, size=200, overlap=20)
    matrix = embedder.embed([c.text for c in chunks])
    for row in out:
        sims = matrix @ embedder.embed([row["user_input"]], kind="query")[0]
        best = np.argsort(-sims, kind="stable")[:3]
        assert row["retrieved_contexts"] == [chunks[j].text for j in best]
        assert row[CONTEXT_IDS] == [f"{chunks[j].doc_id}#{chunks[j].index}" for j in best]
        assert row["response"] == "given"  # an answer already there is kept
    assert generator.calls == []  # nothing to generate
    # One embed call per kind, every chunk once; each text embedded only once.
    assert sorted(embedder.calls[:2]) == [("document", len(chunks)), ("query", 5)]


def test_top_k_larger_than_the_corpus_returns_every_chunk(generator) -> None:
    corpus = [{"id": "a", "text": "Cats purr."}, {"id": "b", "text": "Dogs bark."}]
    out = build_rag_rows(
        [{"user_input": "Do cats purr?"}],
        corpus=corpus,
        config=PipelineConfig(chunk_size=100, chunk_overlap=0, top_k=10),
        embedder=NgramEmbedder(),
        generator=generator,
        memo=EmbeddingMemo(),
    )
    assert out[0]["retrieved_contexts"] == ["Cats purr.", "Dogs bark."]


def test_retrieval_finds_the_source_document_on_the_builtin_corpus(generator) -> None:
    rows = [r | {"response": "-"} for r in questions()]
    data = json.loads(builtin_dataset("ascend-eval/rag-mini-en").read_text(encoding="utf-8"))["data"]
    out = build_rag_rows(
        rows,
        corpus=CORPUS,
        config=PipelineConfig(chunk_size=256, chunk_overlap=32, top_k=4),
        embedder=NgramEmbedder(dim=4096),
        generator=generator,
        memo=EmbeddingMemo(),
    )
    hits = [
        any(i.split("#")[0] in source["source_documents"] for i in row[CONTEXT_IDS])
        for row, source in zip(out, data, strict=True)
    ]
    assert sum(hits) >= 9  # character trigrams alone find most sources: the questions share their words


def test_reranker_reorders_the_candidates_and_keeps_top_k(generator) -> None:
    rows = [r | {"response": "-"} for r in questions()[:4]]
    base = PipelineConfig(chunk_size=150, chunk_overlap=0, top_k=8)
    candidates = build_rag_rows(
        rows, corpus=CORPUS, config=base, embedder=NgramEmbedder(), generator=generator
    )
    reranker = LengthReranker()
    config = PipelineConfig(chunk_size=150, chunk_overlap=0, top_k=3, rerank_candidates=8)
    out = build_rag_rows(
        rows, corpus=CORPUS, config=config, embedder=NgramEmbedder(), generator=generator, reranker=reranker
    )
    assert reranker.calls == [4 * 8]  # every (question, candidate) pair in one call
    for got, cands in zip(out, candidates, strict=True):
        expected = sorted(cands["retrieved_contexts"], key=len, reverse=True)[:3]
        assert got["retrieved_contexts"] == expected
        assert got["retrieved_contexts"] != cands["retrieved_contexts"][:3]  # the order really changed


def test_reranking_with_a_real_tiny_cross_encoder(tmp_path, generator) -> None:
    transformers = pytest.importorskip("transformers")
    pytest.importorskip("sentence_transformers")
    from ascend_eval.models.reranker.cross_encoder import TorchReranker, TorchRerankerConfig
    from tests.tiny_models import save_tiny_bert

    path = save_tiny_bert(tmp_path / "ce", transformers.BertForSequenceClassification, num_labels=1)
    reranker = TorchReranker(TorchRerankerConfig(path, device="cpu"))
    rows = [r | {"response": "-"} for r in questions()[:3]]
    config = PipelineConfig(chunk_size=200, chunk_overlap=0, top_k=2, rerank_candidates=6)
    out = build_rag_rows(
        rows, corpus=CORPUS, config=config, embedder=NgramEmbedder(), generator=generator, reranker=reranker
    )
    wide = build_rag_rows(
        rows,
        corpus=CORPUS,
        config=PipelineConfig(chunk_size=200, chunk_overlap=0, top_k=6),
        embedder=NgramEmbedder(),
        generator=generator,
    )
    for got, cands in zip(out, wide, strict=True):
        scores = reranker.score([(got["user_input"], c) for c in cands["retrieved_contexts"]])
        best = np.argsort(-scores, kind="stable")[:2]
        assert got["retrieved_contexts"] == [cands["retrieved_contexts"][j] for j in best]


def test_answers_are_one_batched_generate_call_and_cached(tmp_path) -> None:
    rows = [
        r | {"retrieved_contexts": [f"Passage for {r['id']}.", "Another passage."]} for r in questions()[:6]
    ]
    cache_path = tmp_path / "requests.sqlite"
    first = ReplayJudge(generate_rule=answer_rule, model_id="replay-rag")
    with RequestCache(cache_path) as cache:
        out = build_rag_rows(
            rows, corpus=None, config=PipelineConfig(), embedder=None, generator=first, cache=cache
        )
        assert len(cache) == 6
    assert first.calls == [("generate", 6)]
    assert all(
        r["response"].startswith("Answer to ") and r["response"].endswith("from 2 passages.") for r in out
    )
    assert out[0]["response"] == f"Answer to {rows[0]['user_input']!r} from 2 passages."

    again = ReplayJudge(generate_rule=answer_rule, model_id="replay-rag")
    with RequestCache(cache_path) as cache:
        rerun = build_rag_rows(
            rows, corpus=None, config=PipelineConfig(), embedder=None, generator=again, cache=cache
        )
    assert again.calls == [] and rerun == out  # answered from the cache

    hotter = ReplayJudge(generate_rule=answer_rule, model_id="replay-rag")
    with RequestCache(cache_path) as cache:
        build_rag_rows(
            rows,
            corpus=None,
            config=PipelineConfig(answer_max_tokens=64),
            embedder=None,
            generator=hotter,
            cache=cache,
        )
    assert hotter.calls == [("generate", 6)]  # other generation parameters are other requests


def test_answer_prompt_language_and_params(generator) -> None:
    seen: list[GenerateRequest] = []

    def rule(request: GenerateRequest) -> str:
        seen.append(request)
        return "ok"

    rows = [
        {"user_input": "迎仙桥建于哪一年？", "retrieved_contexts": ["迎仙桥始建于1612年。"]},
        {"user_input": "When was it built?", "retrieved_contexts": ["It was built in 1612."]},
    ]
    config = PipelineConfig(answer_max_tokens=32, answer_temperature=0.5)
    build_rag_rows(rows, corpus=None, config=config, embedder=None, generator=ReplayJudge(generate_rule=rule))
    zh, en = seen
    assert "参考资料" in zh.messages[1].content and "[1] 迎仙桥始建于1612年。" in zh.messages[1].content
    assert "Context passages" in en.messages[1].content and en.tag == ANSWER_TAG
    assert en.params.max_tokens == 32 and en.params.temperature == 0.5
    seen.clear()
    build_rag_rows(
        rows,
        corpus=None,
        config=PipelineConfig(language="en"),
        embedder=None,
        generator=ReplayJudge(generate_rule=rule),
    )
    assert all("Context passages" in r.messages[1].content for r in seen)


def test_embeddings_are_memoised_between_points_with_the_same_chunking(generator) -> None:
    memo = EmbeddingMemo()
    rows = [r | {"response": "-"} for r in questions()[:3]]
    embedder = NgramEmbedder()
    for top_k in (2, 4):
        config = PipelineConfig(chunk_size=256, chunk_overlap=32, top_k=top_k)
        build_rag_rows(rows, corpus=CORPUS, config=config, embedder=embedder, generator=generator, memo=memo)
    assert len(embedder.calls) == 2  # the second point embedded nothing
    build_rag_rows(
        rows, corpus=CORPUS, config=PipelineConfig(chunk_size=128, chunk_overlap=0), embedder=embedder,
        generator=generator, memo=memo,
    )  # fmt: skip
    assert [kind for kind, _ in embedder.calls[2:]] == ["document"]  # new chunks; the questions are known


def test_contexts_given_but_answer_missing_uses_the_given_contexts(generator) -> None:
    embedder = NgramEmbedder()
    rows = [{"user_input": "Who?", "retrieved_contexts": ["Ann.", "Bob.", "Cy."]}]
    out = build_rag_rows(rows, corpus=CORPUS, config=PipelineConfig(), embedder=embedder, generator=generator)
    assert out[0]["response"] == "Answer to 'Who?' from 3 passages."
    assert embedder.calls == [] and CONTEXT_IDS not in out[0]


def test_missing_pieces_are_data_errors_before_any_model_loads(generator) -> None:
    embedder = NgramEmbedder()
    rows = [{"id": "q1", "user_input": "Who?", "response": "x"}]
    with pytest.raises(DataError, match=r"row 0 \(id 'q1'\).*no corpus"):
        build_rag_rows(rows, corpus=None, config=PipelineConfig(), embedder=embedder, generator=generator)
    with pytest.raises(DataError, match="no embedding model"):
        build_rag_rows(rows, corpus=CORPUS, config=PipelineConfig(), embedder=None, generator=generator)
    with pytest.raises(DataError, match="no RAG model"):
        build_rag_rows(
            [{"user_input": "Who?", "retrieved_contexts": ["c"]}],
            corpus=None, config=PipelineConfig(), embedder=None, generator=None,
        )  # fmt: skip
    with pytest.raises(DataError, match="no question"):
        build_rag_rows(
            [{"reference": "r"}],
            corpus=CORPUS,
            config=PipelineConfig(),
            embedder=embedder,
            generator=generator,
        )
    with pytest.raises(DataError, match="text"):
        build_rag_rows(
            rows, corpus=[{"id": "a"}], config=PipelineConfig(), embedder=embedder, generator=generator
        )
    with pytest.raises(ConfigError, match="tokenizer"):
        build_rag_rows(
            rows,
            corpus=CORPUS,
            config=PipelineConfig(chunk_unit="tokens"),
            embedder=embedder,
            generator=generator,
        )
    assert embedder.calls == [] and generator.calls == []


def test_progress_reports_each_stage(generator) -> None:
    seen: list[tuple[str, int, int]] = []
    build_rag_rows(
        questions()[:2],
        corpus=CORPUS,
        config=PipelineConfig(chunk_size=300, chunk_overlap=0, top_k=2),
        embedder=NgramEmbedder(),
        generator=generator,
        progress=lambda stage, done, total: seen.append((stage, done, total)),
        memo=EmbeddingMemo(),
    )
    assert [s for s, d, t in seen if d == t] == ["chunk", "embed", "generate"]
    assert ("generate", 2, 2) in seen and ("chunk", 14, 14) in seen


def test_token_chunks_come_from_a_lazy_local_embedders_own_tokenizer(generator) -> None:
    from ascend_eval.models.factory import resolve

    embedder = resolve("all-minilm-l6-v2", "embedder", device="cpu")
    assert not embedder.loaded  # loaded by the pipeline when it needs the tokenizer, not before
    config = PipelineConfig(chunk_unit="tokens", chunk_size=32, chunk_overlap=0, top_k=1)
    [row] = build_rag_rows(
        questions()[:1],
        corpus=CORPUS,
        config=config,
        embedder=embedder,
        generator=generator,
        memo=EmbeddingMemo(),
    )
    tokenizer = embedder.load().tokenizer
    assert embedder.loaded and len(row["retrieved_contexts"]) == 1
    assert len(tokenizer(row["retrieved_contexts"][0], add_special_tokens=False)["input_ids"]) <= 32
    embedder.close()


def test_samples_in_samples_out_agree_with_rows(generator) -> None:
    from ascend_eval.data import Sample, load_dataset
    from ascend_eval.pipeline import build_rag_samples

    rows = [r | {"response": "-"} for r in questions()[:2]] + [
        {"id": "given", "user_input": "Who?", "retrieved_contexts": ["Ann."], "response": "Ann."},
        {"id": "ask", "user_input": "Who?", "retrieved_contexts": ["Ann.", "Bob."]},
    ]
    config = PipelineConfig(chunk_size=200, chunk_overlap=0, top_k=2)
    dataset = load_dataset(rows)
    kwargs = dict(corpus=CORPUS, config=config, embedder=NgramEmbedder(), generator=generator)
    samples = build_rag_samples(dataset, memo=EmbeddingMemo(), **kwargs)
    as_rows = build_rag_rows(rows, memo=EmbeddingMemo(), **kwargs)
    assert all(isinstance(s, Sample) for s in samples)
    assert samples[2] is dataset[2]  # complete: the very same sample
    assert samples == list(load_dataset(as_rows))  # the same contexts, ids and answers either way
    assert samples[0].metadata[CONTEXT_IDS] and CONTEXT_IDS not in samples[3].metadata
    assert samples[3].response == "Answer to 'Who?' from 2 passages."


def test_sample_errors_name_the_sample(generator) -> None:
    from ascend_eval.data import load_dataset
    from ascend_eval.pipeline import build_rag_samples

    dataset = load_dataset([{"user_input": "q", "response": "a"}, {"id": "x", "reference": "r"}])
    with pytest.raises(DataError, match=r"Sample 1 \(id 'x'\) has no question"):
        build_rag_samples(
            dataset, corpus=CORPUS, config=PipelineConfig(), embedder=NgramEmbedder(), generator=None
        )
