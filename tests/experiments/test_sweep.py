"""Experiment sweeps: the grid, one run per point with a shared cache, failures kept per point, and the
files written (points.json, summary.md, per-point results, a self-contained report.html)."""

from __future__ import annotations

import base64
import io
import json
import math
import re
import zlib
from pathlib import Path

import pytest

from ascend_eval.api import evaluate
from ascend_eval.engine import RequestCache
from ascend_eval.examples import builtin_corpus, builtin_dataset
from ascend_eval.experiments import ExperimentSpec, load_experiment, point_label, run_experiment
from ascend_eval.experiments.spec import set_path
from ascend_eval.metrics.files import metric_entries
from ascend_eval.models.base import ClassifyRequest, GenerateRequest
from ascend_eval.models.errors import ConfigError, DataError
from ascend_eval.models.judge.replay import ReplayJudge
from ascend_eval.pipeline import EmbeddingMemo, PipelineConfig, build_rag_rows
from tests.conftest import NgramEmbedder

METRICS = ["nv_context_relevance", "nv_accuracy"]
IMG = re.compile(r'<img src="data:image/png;base64,([A-Za-z0-9+/=]+)"')


def ratings(request: ClassifyRequest) -> list[float]:
    """A recorded judge: ratings that depend on the whole prompt, so different contexts score differently."""
    h = zlib.crc32(request.messages[-1].content.encode())
    weights = [((h >> (7 * i)) % 89) + 1 for i in range(len(request.labels))]
    return [w / sum(weights) for w in weights]


def first_passage(request: GenerateRequest) -> str:
    """A recorded RAG model: it answers with its first context passage."""
    return request.messages[-1].content.split("[1] ", 1)[-1].split("\n", 1)[0]


class LocalRunner:
    """Runs a point in process with the real pipeline and engine (recorded models), like a job would:
    every point uses the same request cache folder."""

    def __init__(self, cache_dir: Path) -> None:
        self.cache_dir = cache_dir
        self.generator = ReplayJudge(generate_rule=first_passage, model_id="rag-replay")
        self.judge = ReplayJudge(classify_rule=ratings, model_id="judge-replay")
        self.embedder = NgramEmbedder()
        self.memo = EmbeddingMemo()
        self.specs: list[dict] = []
        self.fail_when: dict | None = None

    def __call__(self, spec: dict) -> dict:
        self.specs.append(spec)
        if self.fail_when and all(spec["metric_params"].get(k) == v for k, v in self.fail_when.items()):
            raise DataError("planted failure for this point")
        data = spec["dataset"]
        if isinstance(data, str):
            raw = json.loads(builtin_dataset(data).read_text(encoding="utf-8"))["data"]
            rows = [{"id": r["id"], "user_input": r["question"], "reference": r["ground_truth"]} for r in raw]
            corpus = builtin_corpus(data)
        else:
            rows, corpus = data["rows"], data["corpus"]
        pipeline = spec["retriever_pipeline"]
        config = PipelineConfig(
            chunk_size=pipeline["chunk_size"],
            chunk_overlap=pipeline["chunk_overlap"],
            top_k=spec["metric_params"]["top_k"],
        )
        with RequestCache(self.cache_dir / "requests.sqlite") as cache:
            rows = build_rag_rows(
                rows,
                corpus=corpus,
                config=config,
                embedder=self.embedder,
                generator=self.generator,
                cache=cache,
                memo=self.memo,
            )
        metrics = metric_entries(spec["metrics"], "metrics")  # as a job reads them
        result = evaluate(rows, metrics, judge=self.judge, cache_dir=self.cache_dir, progress=False)
        return {"aggregate_scores": result.aggregates(), "rows": result.rows()}


def base_spec() -> dict:
    return {
        "metrics": METRICS,
        "dataset": "ascend-eval/rag-mini-en",
        "retriever_pipeline": {
            "embedding_model": {"url": "local:default"},
            "chunk_size": 256,
            "chunk_overlap": 32,
        },
        "metric_params": {"top_k": 10, "judge_llm": {"model": {"url": "local:default"}}},
    }


def test_points_share_the_cache_where_inputs_are_identical(tmp_path: Path) -> None:
    runner = LocalRunner(tmp_path / "cache")
    calls: list[tuple[int, int, int]] = []

    def counted(spec: dict) -> dict:
        out = runner(spec)
        calls.append((len(runner.generator.calls), len(runner.judge.calls), len(runner.embedder.calls)))
        return out

    # `note` is a dotted path the runner ignores: points that differ only there have identical inputs.
    spec = {**base_spec(), "sweep": {"top_k": [2, 4], "note": ["a", "b"]}, "name": "share"}
    result = run_experiment(spec, tmp_path / "out", run_point=counted)
    assert [(p.params["top_k"], p.params["note"]) for p in result.points] == [
        (2, "a"),
        (2, "b"),
        (4, "a"),
        (4, "b"),
    ]
    assert [s["metric_params"]["top_k"] for s in runner.specs] == [2, 2, 4, 4]
    assert [s["note"] for s in runner.specs] == ["a", "b", "a", "b"]
    # (generate calls, judge calls, embed calls) after each point: repeated inputs reach no model.
    first, second, third, fourth = calls
    assert first[0] == 1 and second == first
    assert third[0] == 2 and third[1] > first[1] and fourth == third
    assert first[2] == 2 and third[2] == 2  # chunks and questions embedded once, for every point
    by_params = {tuple(p.params.values()): p for p in result.points}
    for k in (2, 4):
        assert by_params[(k, "a")].aggregates == by_params[(k, "b")].aggregates
        assert all(len(r["retrieved_contexts"]) == k for r in by_params[(k, "a")].rows)


def test_outputs_table_plots_and_summary(tmp_path: Path) -> None:
    spec = {**base_spec(), "sweep": {"chunk_size": [128, 256], "top_k": [1, 3]}, "name": "grid"}
    result = run_experiment(spec, tmp_path / "out", run_point=LocalRunner(tmp_path / "cache"), limit=5)
    assert result.metrics == METRICS and all(p.status == "completed" for p in result.points)
    for point in result.points:
        assert len(point.rows) == 5
        for agg in point.aggregates:  # the table's means are the rows' means
            scores = [r[agg["name"]] for r in point.rows if r[agg["name"]] is not None]
            assert math.isclose(agg["mean"], sum(scores) / len(scores))
        saved = json.loads((tmp_path / "out" / "points" / point.label / "results.json").read_text("utf-8"))
        assert saved["aggregate_scores"] == point.aggregates and len(saved["rows"]) == 5

    points = json.loads((tmp_path / "out" / "points.json").read_text("utf-8"))
    assert points["sweep"] == {"chunk_size": [128, 256], "top_k": [1, 3]} and len(points["points"]) == 4
    assert points["points"][0]["spec"]["retriever_pipeline"]["chunk_size"] == 128

    summary = (tmp_path / "out" / "summary.md").read_text("utf-8")
    assert "| chunk_size | top_k | nv_context_relevance | nv_accuracy | seconds |" in summary
    assert summary.count("\n| 1") + summary.count("\n| 2") == 4
    assert f"best `nv_accuracy`: {result.best('nv_accuracy').label}" in summary

    page = result.paths["report"].read_text("utf-8")
    images = IMG.findall(page)
    assert len(images) == 2 * len(METRICS)  # mean vs top_k, and the per-sample distribution, per metric
    assert (
        not re.search(r"(?:src|href)=\"(?!data:)", page) and "http://" not in page and "https://" not in page
    )
    Image = pytest.importorskip("PIL.Image")
    for data in images:
        png = Image.open(io.BytesIO(base64.b64decode(data)))
        assert png.format == "PNG" and png.width > 300 and png.height > 200
    assert (
        "nv_context_relevance: mean vs top_k" in page and "nv_accuracy: per-sample scores per point" in page
    )
    assert page.count("<tr>") >= 1 + 4  # header and one row per point in the scores table


def test_a_failed_point_is_reported_and_the_others_run(tmp_path: Path) -> None:
    runner = LocalRunner(tmp_path / "cache")
    runner.fail_when = {"top_k": 4}
    spec = {**base_spec(), "sweep": {"top_k": [2, 4]}}
    result = run_experiment(spec, tmp_path / "out", run_point=runner, limit=3)
    assert [p.status for p in result.points] == ["completed", "failed"]
    assert "planted failure" in result.points[1].error
    assert "failed: DataError: planted failure" in result.paths["report"].read_text("utf-8")
    assert "point top_k=4 failed" in result.paths["summary"].read_text("utf-8")
    assert len(IMG.findall(result.paths["report"].read_text("utf-8"))) == 2 * len(METRICS)


def test_limit_keeps_the_first_samples_and_the_corpus(tmp_path: Path) -> None:
    pytest.importorskip("ascend_eval.jobs")
    seen: list[dict] = []

    def capture(spec: dict) -> dict:
        seen.append(spec)
        return {"aggregate_scores": [], "rows": []}

    run_experiment({**base_spec(), "sweep": {"top_k": [2]}, "limit": 3}, tmp_path / "out", run_point=capture)
    dataset = seen[0]["dataset"]
    assert dataset["rows"][0]["user_input"].startswith("In which year was the Lindqvist")
    assert len(dataset["rows"]) == 3 and len(dataset["corpus"]) == 14


def test_experiment_file_yaml_relative_paths_and_point_specs(tmp_path: Path) -> None:
    (tmp_path / "docs.json").write_text(json.dumps([{"id": "a", "text": "Alpha."}]), encoding="utf-8")
    (tmp_path / "sweep.yaml").write_text(
        "sweep:\n  chunk_size: [64, 128]\n  metric_params.judge_llm.inference_params.max_tokens: [16]\n"
        "dataset: {rows: [{question: Q}], corpus: docs.json}\nmetric: faithfulness\n",
        encoding="utf-8",
    )
    experiment = load_experiment(tmp_path / "sweep.yaml")
    assert experiment.name == "sweep" and experiment.base["dataset"]["corpus"] == str(tmp_path / "docs.json")
    specs = [experiment.point_spec(p) for p in experiment.points()]
    assert [s["retriever_pipeline"]["chunk_size"] for s in specs] == [64, 128]
    assert specs[0]["metric_params"] == {"judge_llm": {"inference_params": {"max_tokens": 16}}}
    assert "retriever_pipeline" not in experiment.base  # points are copies
    assert point_label({"chunk_size": 64, "a.b": "x/y z"}) == "chunk_size=64,a.b=x_y_z"


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ({"metric": "faithfulness"}, "no `sweep`"),
        ({"sweep": {}}, "must map parameters"),
        ({"sweep": {"top_k": 4}}, "non-empty list"),
        ({"sweep": {"top_k": [2, 2]}}, "repeats a value"),
        ({"sweep": {"top_k": [2]}, "limit": 0}, "limit=0"),
    ],
)
def test_malformed_experiments_are_config_errors(data: dict, message: str) -> None:
    with pytest.raises(ConfigError, match=re.escape(message)):
        load_experiment(data)


def test_a_sweep_path_through_a_value_is_an_error() -> None:
    with pytest.raises(ConfigError, match="'dataset' is 'x', not an object"):
        set_path({"dataset": "x"}, "dataset.path", "y")
    with pytest.raises(ConfigError, match="Cannot read experiment file"):
        load_experiment("/nonexistent/sweep.yaml")
    assert ExperimentSpec({}, {"a": [1], "b": [2, 3]}).points() == [{"a": 1, "b": 2}, {"a": 1, "b": 3}]


def test_a_users_criterion_is_scored_and_compared_at_every_point(tmp_path: Path) -> None:
    harbour = {
        "name": "mentions_harbour",
        "definition": "Does the answer mention the harbour?",
        "reads": ["answer"],
    }
    spec = {**base_spec(), "metrics": ["nv_accuracy", {"criterion": harbour}], "sweep": {"top_k": [1, 3]}}
    result = run_experiment(spec, tmp_path / "out", run_point=LocalRunner(tmp_path / "cache"), limit=3)
    assert result.metrics == ["nv_accuracy", "mentions_harbour"]
    assert all(p.status == "completed" and p.mean("mentions_harbour") is not None for p in result.points)
    assert (
        "| top_k | nv_accuracy | mentions_harbour | seconds |"
        in (tmp_path / "out" / "summary.md").read_text()
    )
