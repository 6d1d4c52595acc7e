"""Jobs whose datasets lack contexts or answers run the RAG pipeline first (retrieve, rerank, generate),
with every model behind a loopback endpoint: fast, and the requests are real HTTP."""

from __future__ import annotations

import pytest

pytest.importorskip("ascend_eval.pipeline")

from tests.conftest import SUPPORT_RULE_YES
from tests.jobs.conftest import inline_spec_for
from tests.models.loopback_server import RANKING, ranking_reply

CORPUS = [
    {"id": "paris", "text": "Paris is the capital city of France. It lies on the Seine."},
    {"id": "shakespeare", "text": "William Shakespeare wrote Romeo and Juliet in the 1590s."},
    {"id": "tea", "text": "Green tea is grown in the hills of the town."},
]


def _pipeline_spec(server, **dataset):
    spec = inline_spec_for(server.url, secret=None)
    spec["model"] = {"url": server.url, "name": "rag-model"}
    spec["retriever_pipeline"] = {
        "embedding_model": {"url": server.server.url + "/v1", "name": "embedder", "format": "nim"},
        "chunk_size": 64,
        "chunk_overlap": 0,
    }
    spec["metric_params"]["top_k"] = 1
    spec["dataset"] = dataset
    return spec


def test_missing_contexts_and_answers_are_built_then_judged(jobs, judge_server):
    rows = [
        {
            "question": ["What is the capital of France?", "Who wrote Romeo and Juliet?"],
            "ground_truth": ["Paris", "Shakespeare"],
        }
    ]
    job = jobs.create(_pipeline_spec(judge_server, rows=rows, corpus=CORPUS)).run()
    results = job.results()
    got = [(r["retrieved_contexts"], r["response"]) for r in results["rows"]]
    assert got == [([CORPUS[0]["text"]], CORPUS[0]["text"]), ([CORPUS[1]["text"]], CORPUS[1]["text"])]
    # each answer is its own context: supported, calibrated and scored as expected (tests/conftest.py)
    assert results["aggregate_scores"][0]["mean"] == pytest.approx(SUPPORT_RULE_YES)
    embeds = judge_server.server.bodies("/v1/embeddings")
    assert embeds and all(b.get("input_type") in ("query", "passage") for b in embeds)  # format: nim
    assert "pipeline" in (job.directory / "job.log").read_text()


def test_a_reranker_endpoint_reorders_the_candidates(jobs, judge_server):
    # The reranker prefers the tea document whatever the question: top_k=1 keeps what it ranks first.
    judge_server.server.route(
        RANKING, lambda body: ranking_reply([5.0 if "tea" in p["text"] else 0.0 for p in body["passages"]])
    )
    spec = _pipeline_spec(
        judge_server,
        rows=[{"question": ["What is the capital of France?"], "ground_truth": ["Paris"]}],
        corpus=CORPUS,
    )
    spec["retriever_pipeline"]["reranker_model"] = {
        "url": judge_server.server.url + "/v1/ranking", "name": "reranker", "format": "nim",
    }  # fmt: skip
    [row] = jobs.create(spec).run().results()["rows"]
    assert row["retrieved_contexts"] == ["Green tea is grown in the hills of the town."]
    assert judge_server.server.bodies(RANKING)


def test_a_built_in_rag_dataset_runs_with_its_corpus(jobs, judge_server):
    spec = _pipeline_spec(judge_server)
    spec["dataset"] = "ascend-eval/rag-mini-en"
    spec["metrics"] = ["context_recall"]
    job = jobs.create(spec).run()
    rows = job.results()["rows"]
    assert len(rows) == 12 and all(r["retrieved_contexts"] and r["response"] for r in rows)


def test_the_data_is_parsed_once_and_stays_samples(jobs, judge_server, monkeypatch):
    import ascend_eval.data.loaders as loaders

    parsed = []
    make_sample = loaders.make_sample

    def counting(index, row, roles):
        parsed.append(index)
        return make_sample(index, row, roles)

    monkeypatch.setattr(loaders, "make_sample", counting)
    rows = [
        {
            "question": ["What is the capital of France?", "Who wrote Romeo and Juliet?", "Tea?"],
            "ground_truth": ["Paris", "Shakespeare", "hills"],
            "answer": [None, "Shakespeare wrote it.", None],
        }
    ]
    spec = _pipeline_spec(judge_server, rows=rows, corpus=CORPUS)
    spec["metric_params"]["truncate_long_documents"] = "end"
    results = jobs.create(spec).run().results()
    assert parsed == [0, 1, 2]  # one parse per sample: no round trip through dicts anywhere
    assert [r["response"] for r in results["rows"]][1] == "Shakespeare wrote it."
    assert all(r["retrieved_contexts"] for r in results["rows"])
