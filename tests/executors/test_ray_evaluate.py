"""The Ray executor through every way users reach it: `evaluate(executor="ray")`, the CLI's `--ray` and a
job spec's `executor` field, each giving the local executor's results."""

from __future__ import annotations

import json

import pytest

import ascend_eval
from ascend_eval.cli.main import main
from ascend_eval.jobs import Jobs
from ascend_eval.results import StoredResult
from tests.executors.conftest import METRICS, dataset_rows, specs, write_jsonl
from tests.jobs.conftest import inline_spec_for


def _without_run_facts(summary: dict) -> dict:
    return {k: v for k, v in summary.items() if k not in ("engine", "provenance")}


def test_evaluate_on_ray_streams_into_the_same_folder_as_a_local_run(tmp_path, local_ray, rule_server):
    data = str(write_jsonl(dataset_rows(), tmp_path / "data.jsonl"))
    models = specs(*rule_server)
    local = ascend_eval.evaluate(data, METRICS, **models, cache_dir=False, progress=False, out=tmp_path / "a")
    ray = ascend_eval.evaluate(
        data, METRICS, **models, cache_dir=tmp_path / "cache", progress=False, out=tmp_path / "b",
        executor="ray", num_workers=2,
    )  # fmt: skip
    assert isinstance(ray, StoredResult)
    assert ray.aggregates() == local.aggregates() and ray.intervals() == local.intervals()
    assert ray.rows(details=True) == local.rows(details=True)
    assert _without_run_facts(ray.summary()) == _without_run_facts(local.summary())
    assert ray.provenance["executor"] == "ray" and local.provenance["executor"] == "local"
    assert ray.provenance["ray"]["workers"] >= 1 and ray.provenance["models"] == local.provenance["models"]
    assert ray.provenance["prompts"] == local.provenance["prompts"]
    # every request of the run went to the judge once (no batch shares a request with another)
    assert sum(s.requests for s in ray.stages.values()) == sum(s.requests for s in local.stages.values())
    for name in ("results.json", "samples.jsonl", "scores.csv", "summary.json", "report.html"):
        assert (tmp_path / "b" / name).is_file(), name
    # kept in memory (no folder) it is the same run too
    kept = ascend_eval.evaluate(
        data, METRICS, **models, cache_dir=tmp_path / "cache", progress=False, executor="ray"
    )
    assert kept.aggregates() == local.aggregates() and not isinstance(kept, StoredResult)


def test_the_command_line_runs_on_ray_with_ray(tmp_path, local_ray, rule_server, capsys):
    data = write_jsonl(dataset_rows(), tmp_path / "data.jsonl")
    server, judge = rule_server
    argv = ["evaluate", str(data), "--metrics", *METRICS, "--judge", judge.url, "--judge-set",
            "served_model_name=rules", "parallelism=8", "--embedder", server.url + "/v1/embeddings",
            "--embedder-set", "served_model_name=ngram", "--cache-dir", str(tmp_path / "cache"),
            "-q"]  # fmt: skip
    assert main([*argv, "--out", str(tmp_path / "local")]) == 0
    assert main([*argv, "--out", str(tmp_path / "ray"), "--ray", "--num-workers", "2"]) == 0
    config = (tmp_path / "ray" / "config.yaml").read_text(encoding="utf-8")
    assert "executor: ray" in config and "num_workers: 2" in config
    local, ray = (
        json.loads((tmp_path / d / "summary.json").read_text(encoding="utf-8")) for d in ("local", "ray")
    )
    assert ray["aggregate_scores"] == local["aggregate_scores"]
    assert ray["provenance"]["executor"] == "ray"
    assert "faithfulness" in capsys.readouterr().out


@pytest.mark.parametrize("executor", [{"type": "ray", "num_workers": 2}])
def test_a_job_spec_runs_on_ray_with_its_executor_field(tmp_path, local_ray, rule_server, executor):
    _, judge = rule_server
    jobs = Jobs(tmp_path / "jobs")
    local = jobs.create(inline_spec_for(judge.url, secret=None), name="local").run()
    spec = {**inline_spec_for(judge.url, secret=None), "executor": executor}
    ray = jobs.create(spec, name="ray").run()
    assert ray.status() == local.status() == "completed"
    assert ray.results()["aggregate_scores"] == local.results()["aggregate_scores"]
    assert ray.results()["rows"] == local.results()["rows"]


def test_tiny_real_models_built_in_the_actors_score_as_they_do_here(tmp_path, local_ray, tiny_llama_dir):
    """Local checkpoints instead of endpoints: each actor loads a tiny random Llama judge and the shipped
    MiniLM embedder itself (float32, as here: the actors are other processes) and scores as this process
    does."""
    from ascend_eval.models.spec import ModelSpec
    from ascend_eval.models.weights.shipped import minilm_path

    data = str(write_jsonl(dataset_rows()[:4], tmp_path / "data.jsonl"))
    models = {
        "judge": ModelSpec(model=str(tiny_llama_dir), dtype="float32", max_tokens=24),
        "embedder": ModelSpec(model=str(minilm_path())),
    }
    metrics = ["faithfulness", "answer_similarity"]
    local = ascend_eval.evaluate(data, metrics, **models, cache_dir=False, progress=False, device="cpu")
    ray = ascend_eval.evaluate(
        data, metrics, **models, cache_dir=tmp_path / "cache", progress=False, device="cpu",
        executor="ray", num_workers=2,
    )  # fmt: skip
    assert ray.provenance["models"] == local.provenance["models"]
    assert ray["answer_similarity"] == pytest.approx(local["answer_similarity"], abs=1e-6)
    assert ray["faithfulness"] == pytest.approx(local["faithfulness"], abs=1e-6, nan_ok=True)
    assert [ray.nan_reasons(m) for m in metrics] == [local.nan_reasons(m) for m in metrics]
