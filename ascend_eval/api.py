"""`evaluate()`: the whole flow of one evaluation.

dataset -> validated samples -> one plan per (sample, metric) -> the engine (batched, deduplicated,
cached) -> scores -> `EvaluationResult`. Everything that can be wrong with the input is checked before
any model loads: the settings when `EvaluationConfig` is built, the samples as the stream is checked.
Then the executor the settings name scores them (`ascend_eval.executors`).
"""

from __future__ import annotations

import time
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from ascend_eval.config import EvaluationConfig
from ascend_eval.data.stream import check_samples, open_samples
from ascend_eval.engine.tracing import tracer_for
from ascend_eval.examples import builtin_dataset
from ascend_eval.executors import EXECUTORS, RunInput
from ascend_eval.metrics import Metric, resolve_metrics
from ascend_eval.results import EvaluationResult, check_output_dir
from ascend_eval.results.sink import FileSink, MemorySink


def evaluate(
    dataset: Any,
    metrics: Iterable[str | Metric] | str | Metric | None = None,
    config: EvaluationConfig | None = None,
    **settings: Any,
) -> EvaluationResult:
    """Score a RAG dataset with RAGAS metrics on local (or endpoint) models.

    Args:
        dataset: a built-in dataset name ("bilingual-example"), a ragas columnar dict, a list of rows,
            a path to JSON/JSONL/CSV/Parquet, a pandas DataFrame, a Hugging Face `datasets.Dataset` or a
            RAGAS `EvaluationDataset`; or a `SampleStream` (`open_samples`), which is not checked again
            where it has passed a check for these metrics already (`SampleStream.checked_count`).
        metrics: names (RAGAS's or NeMo Evaluator's, e.g. "system/rag-faithfulness"), `Metric`
            instances, or None for every available metric.
        config: the run's settings (`EvaluationConfig`); default: every default.
        **settings: any setting of `EvaluationConfig` by name, over `config`: the models (`judge`,
            `embedder`, `cross_encoder` and their `_backend`s, `device`, `memory_budget`), the metric
            context (`language`, `ragas_compat`, `judge_mode`, `calibration`, `scoring`,
            `prompt_layout`), `column_map`, the engine (`chunk_size`, `dedupe`, `progress`, `on_round`,
            `on_progress`), `trace`, `cache_dir`, `out` (a results folder written as samples are scored;
            the result is then read back from it lazily) and the executor (`executor`, `ray_address`,
            `num_workers`). `EvaluationConfig` documents each.

    Returns:
        An `EvaluationResult` with a score or a NaN reason for every (sample, metric); with `out`, a
        `StoredResult` (the same interface) read from that folder.

    Raises:
        TypeError: a setting that does not exist (the message names the closest one).
        DataError: the dataset is malformed or lacks a column a metric needs (before any model loads).
        ConfigError: an unknown metric, model or setting value, or a model of another role (an embedder
            given as the judge), before any model loads.
        MissingDependencyError: tracing is on and opentelemetry is not installed (before any model loads).
        OutputError: a file under `out` could not be written (a full disk): the run stops there, what was
            answered stays in the request cache, and no half-written file is left.
    """
    started = time.perf_counter()
    config = EvaluationConfig.of(config, **settings)
    if isinstance(dataset, str) and (builtin := builtin_dataset(dataset)) is not None:
        dataset = builtin
    stream = open_samples(dataset, column_map=config.column_map)
    chosen = resolve_metrics(metrics)
    requirements = {m.name: m.needs for m in chosen}
    count = stream.checked_count(requirements)  # a job's stream is checked once, by the job
    if count is None:
        count = check_samples(stream, requirements)
    inputs = [stream.origin] if isinstance(stream.origin, str | Path) else []
    folder = None if config.out is None else check_output_dir(config.out, inputs=inputs, what="out")
    tracer = tracer_for(config.trace)
    names = [m.name for m in chosen]
    sink = MemorySink(names) if folder is None else FileSink(folder, names)
    run = RunInput(stream, count, chosen, config, sink, tracer, started)
    return EXECUTORS[config.executor](run)
