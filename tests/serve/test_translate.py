"""NeMo's RAG evaluation configs and targets as our job spec, and every refusal with its field path."""

from __future__ import annotations

import copy

import pytest

from ascend_eval.jobs import load_spec
from ascend_eval.serve.nemo import BodyError, files_dataset, nemo_results, translate_spec, translate_v1

JUDGE = {"api_endpoint": {"url": "http://judge/v1/chat/completions", "model_id": "judge-m", "api_key": "k1"}}
EMBED = {"api_endpoint": {"url": "http://embed/v1", "model_id": "e5", "format": "nim"}}
CONFIG = {
    "type": "rag",
    "tasks": {
        "t": {
            "type": "ragas",
            "dataset": {"files_url": "hf://datasets/org/qa/data/test.json"},
            "metrics": {"f": {"type": "faithfulness"}, "rel": {"type": "answer_relevancy"}},
            "params": {
                "judge_llm": JUDGE,
                "judge_embeddings": EMBED,
                "judge_timeout": 30,
                "judge_max_retries": 2,
                "judge_max_workers": 8,
            },
        }
    },
    "params": {"max_tokens": 64, "temperature": 0.0},
}
PIPELINE = {
    "type": "rag",
    "rag": {
        "pipeline": {
            "model": {"api_endpoint": {"url": "http://llm/v1/chat/completions", "model_id": "llama"}},
            "retriever": {
                "pipeline": {
                    "query_embedding_model": EMBED,
                    "index_embedding_model": EMBED,
                    "reranker_model": {"api_endpoint": {"url": "http://rank/v1/ranking", "model_id": "r"}},
                    "top_k": 3,
                }
            },
        }
    },
}


def _error(config, target, **kwargs) -> tuple[list, str]:
    with pytest.raises(BodyError) as error:
        translate_v1(config, target, job_id="eval-1", **kwargs)
    [(loc, msg)] = error.value.errors
    return list(loc), msg


def test_a_rag_pipeline_target_becomes_the_seed_spec():
    t = translate_v1(CONFIG, PIPELINE, job_id="eval-1")
    assert t.task == "t" and t.metrics == {"f": "faithfulness", "rel": "answer_relevancy"}
    assert t.keys == {"eval-1.judge-llm": "k1"}  # the key becomes a secret; the spec names it
    spec = t.spec
    assert spec["metrics"] == ["faithfulness", "answer_relevancy"]
    assert spec["model"] == {
        "url": "http://llm/v1/chat/completions",
        "name": "llama",
        "inference_params": {"max_tokens": 64, "temperature": 0.0},
    }
    assert spec["retriever_pipeline"] == {
        "embedding_model": {"url": "http://embed/v1", "name": "e5", "format": "nim"},
        "reranker_model": {"url": "http://rank/v1/ranking", "name": "r"},
    }
    judge = spec["metric_params"]["judge_llm"]
    assert judge == {
        "model": {
            "url": "http://judge/v1/chat/completions",
            "name": "judge-m",
            "api_key_secret": "eval-1.judge-llm",
        },
        "request_timeout": 30,
        "max_retries": 2,
        "parallelism": 8,
    }
    assert spec["metric_params"]["top_k"] == 3
    assert spec["dataset"] == {
        "storage": {"type": "huggingface", "repo_id": "org/qa", "repo_type": "dataset"},
        "path": "data/test.json",
    }
    load_spec(spec)  # a valid job spec


def test_cached_outputs_and_rows_bring_their_data():
    config = copy.deepcopy(CONFIG)
    del config["tasks"]["t"]["dataset"]
    for target, expected in [
        ({"type": "cached_outputs", "cached_outputs": {"files_url": "file:///d/out.json"}}, "/d/out.json"),
        ({"type": "rag", "rag": {"cached_outputs": {"files_url": "/d/out.json"}}}, "/d/out.json"),
        ({"type": "dataset", "dataset": {"files_url": "ascend-eval/rag-mini-en"}}, "ascend-eval/rag-mini-en"),
        ({"type": "rows", "rows": [{"question": "q"}]}, {"rows": [{"question": "q"}]}),
    ]:
        t = translate_v1(config, target, job_id="eval-1")
        assert t.spec["dataset"] == expected and "model" not in t.spec


def test_a_corpus_param_joins_the_dataset():
    config = copy.deepcopy(CONFIG)
    config["tasks"]["t"]["dataset"] = {"files_url": "file:///d/questions.json"}
    config["tasks"]["t"]["params"]["corpus"] = "/d/corpus.jsonl"
    t = translate_v1(config, PIPELINE, job_id="eval-1")
    assert t.spec["dataset"] == {"path": "/d/questions.json", "corpus": "/d/corpus.jsonl"}


def test_files_urls():
    assert files_dataset("file:///a/b.json", ("x",)) == "/a/b.json"
    assert files_dataset("bilingual-example", ("x",)) == "bilingual-example"
    with pytest.raises(BodyError, match="hf://datasets/ORG/NAME/PATH"):
        files_dataset("hf://datasets/org", ("x",))
    with pytest.raises(BodyError, match="data store"):
        files_dataset("nds://ns/ds/file.json", ("x",))


@pytest.mark.parametrize(
    ("change", "loc", "message"),
    [
        (lambda c, t: c.update(type="custom-x"), ["body", "config", "type"], "must be 'rag'"),
        (lambda c, t: c["tasks"]["t"].update(type="beir"), ["body", "config", "tasks", "t", "type"], "BEIR"),
        (lambda c, t: c["tasks"].update(u=c["tasks"]["t"]), ["body", "config", "tasks"], "exactly one task"),
        (
            lambda c, t: c["tasks"]["t"]["metrics"].update(r={"type": "recall_5"}),
            ["body", "config", "tasks", "t", "metrics", "r", "type"],
            "retrieval",
        ),
        (
            lambda c, t: c["tasks"]["t"]["params"].update(judge_timout=3),
            ["body", "config", "tasks", "t", "params", "judge_timout"],
            "Did you mean 'judge_timeout'",
        ),
        (
            lambda c, t: c["tasks"]["t"]["params"]["judge_llm"]["api_endpoint"].pop("url"),
            ["body", "config", "tasks", "t", "params", "judge_llm", "api_endpoint", "url"],
            "required",
        ),
        (
            lambda c, t: c["tasks"]["t"]["params"].pop("judge_embeddings"),
            ["body", "config", "tasks", "t", "params"],
            "judge_embeddings is required",
        ),
        (
            lambda c, t: t["rag"]["pipeline"]["retriever"]["pipeline"].update(
                index_embedding_model={"api_endpoint": {"url": "http://other/v1", "model_id": "x"}}
            ),
            ["body", "target", "rag", "pipeline", "retriever", "pipeline", "index_embedding_model"],
            "same model",
        ),
        (
            lambda c, t: t["rag"]["pipeline"].update(model="my-org/llama"),
            ["body", "target", "rag", "pipeline", "model"],
            "model registry",
        ),
        (
            lambda c, t: c["tasks"]["t"]["params"]["judge_llm"]["api_endpoint"].update(format="grpc"),
            ["body", "config", "tasks", "t", "params", "judge_llm", "api_endpoint", "format"],
            "'nim' or 'openai'",
        ),
    ],
)
def test_refusals_name_the_field(change, loc, message):
    config, target = copy.deepcopy(CONFIG), copy.deepcopy(PIPELINE)
    change(config, target)
    got_loc, got = _error(config, target)
    assert got_loc == loc and message in got


def test_by_name_configs_and_targets_are_refused():
    assert _error("my-org/my-config", PIPELINE)[0] == ["body", "config"]
    assert _error(CONFIG, "my-org/my-target")[0] == ["body", "target"]
    assert _error("my-org/my-config", PIPELINE, loc=("body", "spec"))[0] == ["body", "spec", "config"]  # v2


def test_seed_spec_errors_have_their_paths():
    with pytest.raises(BodyError) as error:
        translate_spec({"metric": "faithfulness", "dataset": {"rows": [], "path": "x"}}, loc=("body", "spec"))
    locs = [list(loc) for loc, _ in error.value.errors]
    assert ["body", "spec", "dataset"] in locs or ["body", "spec"] in locs


def test_results_in_nemo_shape():
    job_results = {
        "aggregate_scores": [
            {"name": "faithfulness", "count": 2, "mean": 0.5, "min": 0.0, "max": 1.0, "nan_count": 1}
        ],
        "rows": [{"faithfulness": 0.0}, {"faithfulness": 1.0}, {"faithfulness": float("nan")}],
    }
    tasks = nemo_results(job_results, "t", {"f": "faithfulness"})
    score = tasks["t"]["metrics"]["f"]["scores"]["faithfulness"]
    assert score["value"] == 0.5
    assert score["stats"] == {
        "count": 2,
        "mean": 0.5,
        "min": 0.0,
        "max": 1.0,
        "nan_count": 1,
        "sum": 1.0,
        "sum_squared": 1.0,
        "variance": 0.25,
        "stddev": 0.5,
        "stderr": pytest.approx(0.3535533),
    }


def test_a_seed_spec_keys_a_users_criterion_by_its_name():
    criterion = {"criterion": {"name": "polite", "definition": "Is the answer polite?"}}
    judge = {"model": {"url": "http://127.0.0.1:9/v1/chat/completions", "name": "j"}}
    rows = {"rows": [{"question": "q"}]}
    spec = {"metric": "system/rag-faithfulness", "metrics": [criterion], "dataset": rows,
            "metric_params": {"judge_llm": judge}}  # fmt: skip
    translation = translate_spec(spec, loc=("body", "spec"))
    assert translation.metrics == {"system/rag-faithfulness": "faithfulness", "polite": "polite"}
