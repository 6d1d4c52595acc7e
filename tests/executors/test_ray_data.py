"""`score_on_ray` on a local Ray against the loopback rule judge: every source format scores exactly as
`evaluate()` does locally, in dataset order; stats and prompt tags add up over the batches; an actor's
error is ours again in the driver; without Ray the error says what to install."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest

import ascend_eval
from ascend_eval.config import EvaluationConfig
from ascend_eval.executors import RAY_INSTALL, score_on_ray
from ascend_eval.metrics import Criterion
from ascend_eval.models.errors import ConfigError, MissingDependencyError
from ascend_eval.models.spec import ModelSpec
from tests.executors.conftest import (
    METRICS,
    assert_same_as_local,
    dataset_rows,
    roles_of,
    specs,
    write_csv,
    write_jsonl,
    write_parquet,
)


def _source(kind: str, tmp_path: Path) -> Any:
    rows = dataset_rows()
    if kind == "jsonl":
        return str(write_jsonl(rows, tmp_path / "data.jsonl"))
    if kind == "csv":
        return write_csv(rows, tmp_path / "data.csv")
    if kind == "parquet":
        return str(write_parquet(rows, tmp_path / "data.parquet"))
    if kind == "dataframe":
        import pandas as pd

        return pd.DataFrame(rows)
    if kind == "huggingface":
        import datasets

        return datasets.Dataset.from_list(rows)
    if kind == "columnar":
        return {name: [row[name] for row in rows] for name in rows[0]}
    return rows


@pytest.mark.parametrize("kind", ["jsonl", "csv", "parquet", "dataframe", "rows", "huggingface", "columnar"])
def test_every_format_scores_as_the_local_run(kind, tmp_path, local_ray, rule_server):
    source = _source(kind, tmp_path)
    models = specs(*rule_server)
    local = ascend_eval.evaluate(source, METRICS, **models, cache_dir=False, progress=False)
    roles, count = roles_of(source)
    run = score_on_ray(
        source,
        roles=roles,
        count=count,
        metrics=METRICS,
        config=EvaluationConfig.of(**models, cache_dir=tmp_path / "cache"),
        num_workers=2,
        batch_size=3,
    )
    scored = list(run)
    assert_same_as_local(scored, local)
    assert any(s.sample.id == "s-0" for s in scored) and scored[1].sample.id == "1"
    assert {s.language for s in scored} == {"en", "zh"}
    # which actors get batches is Ray Data's choice (the first one up may take them all); none restarted
    assert len(run.nodes) == 1 and 1 <= run.workers <= 2
    assert run.processes == run.workers and not run.restarted
    assert run.prompt_tags == set(local.provenance["prompts"])
    # every request of the run, counted once per batch; the batches share nothing the engine could dedupe
    assert set(run.stages) == set(local.stages)
    for label, stats in local.stages.items():
        assert run.stages[label].requests == stats.requests, label
    assert local_ray.is_initialized()  # the module's Ray: used, and left running


def test_a_model_an_actor_cannot_build_is_our_error_in_the_driver(tmp_path, local_ray, rule_server):
    rows = dataset_rows()[:2]
    roles, count = roles_of(rows)
    run = score_on_ray(
        rows,
        roles=roles,
        count=count,
        metrics=["faithfulness"],
        config=EvaluationConfig(judge=ModelSpec(model=str(tmp_path / "no-such-model")), cache_dir=False),
        num_workers=1,
    )
    with pytest.raises(ConfigError, match="no-such-model"):
        list(run)


def test_more_actors_than_the_cluster_holds_is_refused_before_the_run(local_ray, rule_server):
    rows = dataset_rows()[:2]
    roles, count = roles_of(rows)
    with pytest.raises(ConfigError, match=r"num_workers=3 actors need 3 CPU and the Ray cluster has 2"):
        score_on_ray(
            rows,
            roles=roles,
            count=count,
            metrics=["faithfulness"],
            config=EvaluationConfig.of(**specs(*rule_server)),
            num_workers=3,
        )


def test_without_ray_the_error_names_the_extra(monkeypatch):
    monkeypatch.setitem(sys.modules, "ray", None)  # `import ray` now fails as if it were not installed
    rows = dataset_rows()[:1]
    roles, count = roles_of(rows)
    with pytest.raises(MissingDependencyError) as info:
        score_on_ray(rows, roles=roles, count=count, metrics=["faithfulness"], config=EvaluationConfig())
    assert RAY_INSTALL in str(info.value) == str(info.value)
    assert RAY_INSTALL == "pip install 'ascend-eval[ray]'"


def test_a_users_criterion_travels_to_the_actors_and_scores_as_locally(tmp_path, local_ray, rule_server):
    models = specs(*rule_server)
    rows = dataset_rows()
    figures = Criterion("gives_figures", "Does the reference give a figure?", reads=["answer", "reference"])
    metrics = ["faithfulness", figures]
    local = ascend_eval.evaluate(rows, metrics, **models, cache_dir=False, progress=False)
    assert sorted({round(s, 6) for s in local["gives_figures"]}) == [0.3, 0.8]
    roles, count = roles_of(rows)
    config = EvaluationConfig.of(**models, cache_dir=tmp_path / "cache")
    run = score_on_ray(rows, roles=roles, count=count, metrics=metrics, config=config, num_workers=1)
    assert_same_as_local(list(run), local)
