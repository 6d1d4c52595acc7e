"""The seed's example specs pointed at local models instead of remote endpoints: a tiny Llama judge and RAG
model built in the session, the shipped MiniLM embedder and a tiny BERT cross-encoder; one run on the
shipped default models (slow)."""

from __future__ import annotations

import copy
import json

import pytest

from tests.jobs.conftest import nemo_spec
from tests.tiny_models import minilm_dir, save_tiny_bert

CORPUS = [
    {"id": "paris", "text": "Paris is the capital city of France. It lies on the Seine."},
    {"id": "shakespeare", "text": "William Shakespeare wrote Romeo and Juliet in the 1590s."},
    {"id": "tea", "text": "Green tea is grown in the hills of the town."},
]


@pytest.fixture(scope="module")
def tiny_cross_encoder(tmp_path_factory):
    transformers = pytest.importorskip("transformers")
    return save_tiny_bert(
        tmp_path_factory.mktemp("tiny-ce"), transformers.BertForSequenceClassification, num_labels=1
    )


def _local(spec, judge_dir, *, max_tokens=8):
    spec = copy.deepcopy(spec)
    judge = spec["metric_params"]["judge_llm"]
    judge["model"]["url"] = f"local:{judge_dir}"  # name and api_key_secret stay as NeMo wrote them
    judge["inference_params"] = {"max_tokens": max_tokens}
    return spec


def _check_scored_or_explained(results, metric):
    for row in results["rows"]:
        # a random tiny judge writes no valid JSON: a NaN with its reason, never a crash
        assert row[metric] is not None or row[f"{metric}_reason"], row


@pytest.mark.parametrize("source", ["inline", "file"])
def test_the_inline_example_on_a_local_judge(jobs, tiny_llama_dir, tmp_path, source):
    spec = _local(nemo_spec("inline"), tiny_llama_dir)
    if source == "file":
        path = tmp_path / "data.json"
        path.write_text(json.dumps(spec["dataset"]["rows"][0]), encoding="utf-8")
        spec["dataset"] = str(path)
    job = jobs.create(spec).run()
    assert job.status() == "completed"
    results = job.results()
    assert results["aggregate_scores"][0]["name"] == "faithfulness"
    assert len(results["rows"]) == 2
    _check_scored_or_explained(results, "faithfulness")
    log = (job.directory / "job.log").read_text()
    assert "do not apply" in log  # the secret name and endpoint settings of a local judge are noted


@pytest.mark.parametrize("with_reranker", [False, True], ids=["no-reranker", "reranker"])
def test_the_rag_pipeline_on_local_models(jobs, tiny_llama_dir, tiny_cross_encoder, with_reranker):
    pytest.importorskip("ascend_eval.pipeline")
    spec = _local(nemo_spec("reranker" if with_reranker else "basic"), tiny_llama_dir)
    spec["model"]["url"] = f"local:{tiny_llama_dir}"
    spec["model"]["inference_params"] = {"max_tokens": 8}  # our extension: short answers from a random model
    spec["retriever_pipeline"]["embedding_model"]["url"] = f"local:{minilm_dir()}"
    if with_reranker:
        spec["retriever_pipeline"]["reranker_model"]["url"] = f"local:{tiny_cross_encoder}"
    spec["metric_params"]["top_k"] = 2
    spec["dataset"] = {
        "rows": [{"question": ["What is the capital of France?", "Who wrote Romeo and Juliet?"],
                  "ground_truth": ["Paris", "William Shakespeare"]}],
        "corpus": CORPUS,
    }  # fmt: skip
    job = jobs.create(spec).run()
    rows = job.results()["rows"]
    texts = {d["text"] for d in CORPUS}
    for row in rows:
        assert len(row["retrieved_contexts"]) == 2 and set(row["retrieved_contexts"]) <= texts
        assert isinstance(row["response"], str)
    if not with_reranker:  # MiniLM finds each question's own document first
        assert [r["retrieved_contexts"][0] for r in rows] == [CORPUS[0]["text"], CORPUS[1]["text"]]
    _check_scored_or_explained(job.results(), "faithfulness")


@pytest.mark.slow
def test_the_judge_embeddings_example_on_the_shipped_default_models(jobs):
    from ascend_eval.models.weights.registry import DEFAULTS, SHIPPED

    for role in ("judge", "embedder"):
        model = SHIPPED[DEFAULTS[role]]
        if not model.installed:
            pytest.skip(f"the default {role} is not installed: {model.package}")
    spec = copy.deepcopy(nemo_spec("judge_embeddings"))
    spec["dataset"] = nemo_spec("inline")["dataset"]
    spec["metric_params"]["judge_llm"]["model"]["url"] = "local:default"
    spec["metric_params"]["judge_llm"]["inference_params"] = {"max_tokens": 64}
    spec["metric_params"]["judge_embeddings"]["model"]["url"] = "local:default"
    job = jobs.create(spec).run()
    results = job.results()
    assert results["aggregate_scores"][0]["name"] == "answer_relevancy"
    _check_scored_or_explained(results, "answer_relevancy")
    provenance = json.loads((job.directory / "results" / "results.json").read_text())["provenance"]
    assert provenance["models"]["judge"].startswith("SmolLM2-135M-Instruct")
    assert provenance["models"]["embedder"].startswith("multilingual-e5-small")
