"""Run a job once per point of a parameter grid and compare the points.

Every point is a job (`ascend_eval.jobs`) with the same request cache folder, so what the points share is
computed once: chunk embeddings for points with the same chunking, answers for points that retrieve the
same contexts for a question, judge verdicts for identical (question, contexts, answer) triples.
"""

from __future__ import annotations

import json
import logging
import re
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from ascend_eval.errors import ConfigError
from ascend_eval.experiments.report import write_report
from ascend_eval.experiments.results import ExperimentResult, PointResult
from ascend_eval.experiments.spec import ExperimentSpec, load_experiment

logger = logging.getLogger("ascend_eval.experiments")

RunPoint = Callable[[dict[str, Any]], dict[str, Any]]
"""Runs one point's job spec; returns `{"aggregate_scores": [...], "rows": [...]}` as `Job.results()`."""


def point_label(params: Mapping[str, Any]) -> str:
    """A short, file-name-safe name for a point.

    >>> point_label({"chunk_size": 256, "top_k": 4, "model.url": "local:x/y"})
    'chunk_size=256,top_k=4,model.url=local_x_y'
    """
    return ",".join(f"{k}={re.sub(r'[^A-Za-z0-9._-]+', '_', str(v))}" for k, v in params.items())


def limit_dataset(spec: dict[str, Any], limit: int) -> dict[str, Any]:
    """The spec with its dataset replaced by its first `limit` samples as inline rows (corpus kept).

    Reads the dataset the way a job does (`ascend_eval.jobs`), so any form a job accepts can be limited.
    """
    from ascend_eval.jobs import load_spec
    from ascend_eval.jobs.datasets import load_job_data
    from ascend_eval.jobs.secrets import SecretStore

    data = load_job_data(load_spec(spec).dataset, SecretStore())
    dataset: dict[str, Any] = {"rows": data.rows()[:limit]}
    if data.corpus is not None:
        dataset["corpus"] = data.corpus
    return {**spec, "dataset": dataset}


def _jobs_runner(out: Path, name: str) -> Callable[[dict[str, Any], str], dict[str, Any]]:
    """Runs each point as a job under `out/jobs`, all sharing the request cache `out/cache`."""
    from ascend_eval.jobs import Jobs

    jobs = Jobs(out / "jobs")
    cache = out / "cache"

    def run(spec: dict[str, Any], label: str) -> dict[str, Any]:
        job = jobs.create(spec, name=f"{name}/{label}", cache_dir=cache).run()
        return {**job.results(), "job": {"id": job.id, "directory": str(job.directory)}}

    return run


def run_experiment(
    spec: str | Path | Mapping[str, Any] | ExperimentSpec,
    out_dir: str | Path,
    *,
    run_point: RunPoint | None = None,
    limit: int | None = None,
    progress: Callable[[str], None] | None = None,
) -> ExperimentResult:
    """Run one job per sweep point, then write the comparison.

    Args:
        spec: an experiment file (YAML/JSON), dict or `ExperimentSpec`: a job spec plus `sweep`.
        out_dir: gets `report.html` (self-contained: plots as embedded PNGs), `summary.md`, `points.json`,
            `points/<label>/results.json` per point, and (with the default runner) `jobs/` and `cache/`.
        run_point: runs one point's spec and returns its results; default: a job per point, all sharing
            `out_dir/cache`.
        limit: only the first `limit` samples (overrides the file's `limit`).
        progress: receives one line per point as it starts and ends.

    Returns:
        The points' results and the written paths. A point that fails is recorded with its error and
        the others still run.

    Raises:
        ConfigError: the experiment is malformed, or (default runner) a point's job spec is invalid;
            checked for every point before any runs.
    """
    started = time.perf_counter()
    experiment = load_experiment(spec)
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    base = experiment.base
    limit = limit if limit is not None else experiment.limit
    if limit is not None:
        base = limit_dataset(base, limit)
    experiment = ExperimentSpec(base, experiment.sweep, experiment.name, None, experiment.source)
    grid = experiment.points()
    specs = [experiment.point_spec(params) for params in grid]
    labels = [point_label(params) for params in grid]
    if run_point is None:
        _check_specs(specs, labels)
        runner = _jobs_runner(out, experiment.name)
    else:
        runner = lambda s, _label: run_point(s)  # noqa: E731
    say = progress or (lambda line: logger.info(line))
    points = []
    for i, (params, point_spec, label) in enumerate(zip(grid, specs, labels, strict=True), 1):
        say(f"point {i}/{len(grid)} {label}: running")
        points.append(_run_one(runner, params, point_spec, label))
        done = points[-1]
        outcome = f"done in {done.seconds:.1f}s" if done.status == "completed" else f"FAILED: {done.error}"
        say(f"point {i}/{len(grid)} {label}: {outcome}")
        _write_point(out, done)
    result = ExperimentResult(
        experiment.name, experiment.sweep, points, out, wall_seconds=time.perf_counter() - started
    )
    result.paths = write_report(result)
    return result


def _check_specs(specs: list[dict[str, Any]], labels: list[str]) -> None:
    from ascend_eval.jobs import load_spec

    for point_spec, label in zip(specs, labels, strict=True):
        try:
            load_spec(point_spec)
        except ConfigError as e:
            raise ConfigError(f"Experiment point {label}: {e}") from None


def _run_one(
    runner: Callable[[dict[str, Any], str], dict[str, Any]],
    params: dict[str, Any],
    spec: dict[str, Any],
    label: str,
) -> PointResult:
    t0 = time.perf_counter()
    try:
        results = runner(spec, label)
    except Exception as e:  # one bad point (an endpoint down, a model error) must not lose the rest
        logger.error("experiment point %s failed: %s", label, e)
        return PointResult(
            label, params, spec, "failed", time.perf_counter() - t0, error=f"{type(e).__name__}: {e}"
        )
    return PointResult(
        label,
        params,
        spec,
        "completed",
        time.perf_counter() - t0,
        aggregates=list(results.get("aggregate_scores", [])),
        rows=list(results.get("rows", [])),
        job=results.get("job"),
    )


def _write_point(out: Path, point: PointResult) -> None:
    folder = out / "points" / point.label
    folder.mkdir(parents=True, exist_ok=True)
    data = {
        "params": point.params,
        "aggregate_scores": point.aggregates,
        "rows": point.rows,
        "error": point.error,
    }
    (folder / "results.json").write_text(json.dumps(data, ensure_ascii=False, indent=2), encoding="utf-8")
