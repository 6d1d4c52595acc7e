"""The Ray Data side of the Ray executor: the actor that scores one batch of rows, and the columns it hands
back (`ascend_eval.executors.ray_data` is the driver side).

Each actor builds its model runtimes once, in `__init__`, and scores every batch it is given with our own
engine (`ascend_eval.executors.local.score_samples`, as `evaluate()` runs it, with the runtimes it built
and the node's request cache), so a batch scores exactly as the same samples would in one local run. A
batch is a block of raw rows as our readers give them (`ascend_eval.data.blocks`); the actor turns them
into samples with the same cell conversion `load_dataset` uses (`make_sample`), and hands back, per row,
the row itself (pickled, so the driver rebuilds the sample with its dataset position), the prompt language
and every metric's score, reason and details; the first row of a batch also carries the batch's stage
stats and prompt tags. Everything else is left out, so the driver streams results without the dataset's
text crossing the cluster twice in another form.
"""

from __future__ import annotations

import contextlib
import json
import os
import pickle
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import asdict
from typing import Any

from ascend_eval.config import EvaluationConfig
from ascend_eval.data.blocks import arrow_rows
from ascend_eval.data.cells import make_sample
from ascend_eval.engine import Backends
from ascend_eval.errors import AscendEvalError
from ascend_eval.executors.local import open_cache, score_samples
from ascend_eval.metrics import resolve_metrics
from ascend_eval.models.factory import build_models
from ascend_eval.results.records import ScoredSample

ROW, LANGUAGE, STAGES, PROMPTS, MODELS = "row", "language", "stages", "prompts", "models"
WORKER, NODE, PID, RESTARTED = "worker", "node", "pid", "restarted"
"""Columns of every scored batch besides the metrics' own (`score_column` and friends)."""

KINDS = ("arrow", "pickled")
"""How a batch holds its rows: Arrow tables (a Parquet file, read by Ray's Parquet reader), made rows by
`arrow_rows` as our Parquet reader makes them; or pickled rows (a `ROW` column), as our readers gave them
(a `.jsonl` or `.csv` file read on the cluster; anything the driver read)."""


def score_column(metric: str) -> str:
    return f"score:{metric}"


def reason_column(metric: str) -> str:
    return f"reason:{metric}"


def details_column(metric: str) -> str:
    return f"details:{metric}"


def batch_rows(kind: str, batch: Any) -> list[dict[str, Any]]:
    """The rows of a batch as `open_samples`'s readers give them (`KINDS`)."""
    if kind == "arrow":
        return arrow_rows(batch)
    if kind == "pickled":
        return [pickle.loads(blob) for blob in batch.column(ROW).to_pylist()]
    raise ValueError(f"unknown batch kind {kind!r}; one of {KINDS}")


def merge_stage(total: dict[str, Any], part: Mapping[str, Any]) -> dict[str, Any]:
    """Two stage-stat dicts (`StageStats` as dicts) summed field by field; a count that one side does not
    have (None) takes the other side's."""
    out = dict(total)
    for name, value in part.items():
        if value is None:
            continue
        out[name] = value if out.get(name) is None else out[name] + value
    return out


class BatchScorer:
    """The Ray Data actor: models built once, then `evaluate()` per batch (see the module docstring).

    Args:
        kind: how batches hold their rows (`KINDS`).
        roles: source column -> role, as the driver resolved them (`column_roles`).
        metrics: the metric names (or objects) of the run.
        models: role -> what to build for it, only the roles the metrics need: the driver's
            `EvaluationConfig.model_specs`, each placed on this actor (`for_actor`), built as they are.
        config: the run's settings as the driver hands them to actors (`EvaluationConfig.for_actors`): the
            metric context and engine limits of each batch, the cache folder, and `memory_budget` for
            building the models.

    A model that cannot be built is an error of the run, not of this process: it is raised from the first
    batch (where Ray Data fails the run with it), not from `__init__` (where Ray would start a replacement
    actor that fails the same way).
    """

    def __init__(
        self,
        *,
        kind: str,
        roles: Mapping[str, str],
        metrics: Sequence[Any],
        models: Mapping[str, Any],
        config: EvaluationConfig,
    ) -> None:
        import ray

        self.kind = kind
        self.roles = dict(roles)
        self.metrics = list(metrics)
        self.config = config
        self.failure: AscendEvalError | None = None
        self.models: dict[str, Any] = {}
        self.chosen: list[Any] = []
        self.names: list[str] = []
        try:
            self.chosen = resolve_metrics(self.metrics)
            self.names = [m.name for m in self.chosen]
            self.models = build_models(models, memory_budget=config.memory_budget)
        except AscendEvalError as exc:
            self.failure = exc
        context = ray.get_runtime_context()
        self.worker = context.get_actor_id() or ""
        self.node = context.get_node_id()
        self.pid = os.getpid()
        self.restarted = False
        with contextlib.suppress(Exception), warnings.catch_warnings():
            # A question to the cluster's state, only informative; Ray 2.60's own code for it warns about
            # a deprecated call it makes.
            warnings.simplefilter("ignore")
            self.restarted = bool(context.was_current_actor_reconstructed)

    def __call__(self, batch: Any) -> Any:
        import pyarrow as pa

        if self.failure is not None:
            raise self.failure
        rows = batch_rows(self.kind, batch)
        columns: dict[str, list[Any]] = {ROW: [], LANGUAGE: [], STAGES: [], PROMPTS: [], MODELS: []}
        fields = [pa.field(ROW, pa.binary()), pa.field(LANGUAGE, pa.string())]
        fields += [pa.field(name, pa.string()) for name in (STAGES, PROMPTS, MODELS)]
        if rows:
            samples = [make_sample(i, row, self.roles) for i, row in enumerate(rows)]
            scored: list[ScoredSample] = []
            backends = Backends(
                judge=self.models.get("judge"),
                embedder=self.models.get("embedder"),
                reranker=self.models.get("reranker"),
            )
            # This node's request cache, opened per batch: Ray calls the actor from another thread than
            # the one that built it, and a SQLite connection stays on its thread.
            with open_cache(self.config.cache_dir) as cache:
                done = score_samples(
                    samples, len(samples), self.chosen, backends, cache, scored.append,
                    context=self.config.context, limits=self.config.limits,
                )  # fmt: skip
            columns[ROW] = [pickle.dumps(row, protocol=pickle.HIGHEST_PROTOCOL) for row in rows]
            columns[LANGUAGE] = [s.language for s in scored]
            stages = {label: asdict(stats) for label, stats in done.stages.items()}
            columns[STAGES] = [json.dumps(stages)] + [""] * (len(rows) - 1)
            columns[PROMPTS] = [json.dumps(sorted(done.prompt_tags))] + [""] * (len(rows) - 1)
            ids = {role: getattr(model, "model_id", None) for role, model in self.models.items()}
            columns[MODELS] = [json.dumps(ids)] + [""] * (len(rows) - 1)
            for name in self.names:
                outcomes = [s.results[name] for s in scored]
                columns[score_column(name)] = [r.score for r in outcomes]
                columns[reason_column(name)] = [json.dumps(r.reason) for r in outcomes]
                details = [json.dumps(r.details, ensure_ascii=False, default=str) for r in outcomes]
                columns[details_column(name)] = details
        for name in self.names:
            columns.setdefault(score_column(name), [])
            columns.setdefault(reason_column(name), [])
            columns.setdefault(details_column(name), [])
            fields.append(pa.field(score_column(name), pa.float64()))
            fields.append(pa.field(reason_column(name), pa.string()))
            fields.append(pa.field(details_column(name), pa.string()))
        columns[WORKER] = [self.worker] * len(rows)
        columns[NODE] = [self.node] * len(rows)
        columns[PID] = [self.pid] * len(rows)
        columns[RESTARTED] = [self.restarted] * len(rows)
        fields += [pa.field(WORKER, pa.string()), pa.field(NODE, pa.string()), pa.field(PID, pa.int64())]
        fields.append(pa.field(RESTARTED, pa.bool_()))
        return pa.table(columns, schema=pa.schema(fields))

    def __del__(self) -> None:
        # Ray Data drops the actor's callable when the run ends: close what this actor built (HTTP pools,
        # engines). A killed actor never gets here; its operating system does the rest.
        for model in getattr(self, "models", {}).values():
            close = getattr(model, "close", None)
            if close is not None:
                with contextlib.suppress(Exception):  # shutting down: nothing left to report to
                    close()
