"""What a job does: read the data, fill missing contexts and answers with the RAG pipeline, judge.

Everything that can be wrong with the spec or the data is found before any model loads: the dataset,
the columns the metrics need, the models the pipeline needs, and every secret, including one that the
spec would send to an endpoint it is not bound to (`check_spec_secrets`), before any request.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Callable
from dataclasses import asdict
from pathlib import Path
from typing import Any

from ascend_eval.data import Column, Dataset, load_dataset
from ascend_eval.data.stream import open_samples
from ascend_eval.errors import ConfigError
from ascend_eval.jobs.datasets import job_source, truncate_contexts
from ascend_eval.jobs.runtimes import JobModels
from ascend_eval.jobs.secrets import SecretStore, check_spec_secrets
from ascend_eval.jobs.spec import JobSpec
from ascend_eval.metrics import resolve_metrics
from ascend_eval.text.truncate import NIM_CHARACTER_LIMIT

logger = logging.getLogger("ascend_eval.jobs")

# The columns the RAG pipeline can fill; every other column must come with the data.
_PIPELINE_COLUMNS = {Column.RETRIEVED_CONTEXTS, Column.RESPONSE}

Report = Callable[[dict[str, Any]], None]


def _missing(dataset: Dataset, column: Column) -> int:
    return sum(1 for sample in dataset if not sample.get(column))


def round_progress(total_scores: int, report: Report) -> tuple[Callable[[Any], None], Callable[[Any], None]]:
    """The `on_round` and `on_progress` hooks that keep the job's progress file current: the engine's
    round stats summed, and the scores done and requests answered about every second."""
    counted = ("rounds", "requests", "unique", "cache_hits", "sent", "failed")
    totals: dict[str, Any] = dict.fromkeys(counted, 0)
    latest: dict[str, Any] = {"scores_done": 0}

    def write() -> None:
        report({"stage": "evaluating", "scores_total": total_scores, **latest, **totals})

    def on_round(stats: Any) -> None:
        data = asdict(stats)
        totals["rounds"] = stats.round
        for key in ("requests", "unique", "cache_hits", "sent", "failed"):
            totals[key] += data[key]
        write()

    def on_progress(snapshot: Any) -> None:
        latest.update(
            scores_done=snapshot.scores_done,
            requests_answered=snapshot.requests_answered,
            in_flight=snapshot.in_flight,
            eta_seconds=None if math.isinf(snapshot.eta) else round(snapshot.eta, 1),
        )
        write()

    return on_round, on_progress


def execute(
    spec: JobSpec, *, cache_dir: Path, secrets: SecretStore, report: Report, out: Path | None = None
) -> Any:
    """Run one job spec to an `EvaluationResult`.

    Args:
        spec: the validated spec.
        cache_dir: the request cache folder (answers of the pipeline's RAG model and of the judge).
        secrets: where the spec's secret names resolve.
        report: receives progress dicts (stage, counts) as the job goes.
        out: a results folder that each scored sample is written to as it is scored (`evaluate`'s
            `out`); the result then reads from it. None keeps every result in memory.
    """
    from ascend_eval.api import evaluate

    check_spec_secrets(spec, secrets)
    report({"stage": "loading data"})
    found = job_source(spec.dataset, secrets)
    metrics = resolve_metrics(spec.metric_list())
    params = spec.metric_params
    # One check of the data, before any model loads: every column the metrics need, except those the RAG
    # pipeline fills, which may be missing (`lacking`). With nothing to fill, evaluate() takes the checked
    # stream as it is; otherwise it checks the samples the pipeline made.
    requirements = {m.name: m.needs for m in metrics}
    dataset: Dataset | None = None
    if isinstance(found.source, Path) and not params.truncate_long_documents:
        # A file evaluate() can read as it goes: its samples are never all in memory, unless the
        # pipeline has some to fill (it works on the whole dataset).
        stream = open_samples(found.source)
    else:
        dataset = load_dataset(found.source)
        if params.truncate_long_documents:
            dataset, cut = truncate_contexts(dataset, params.truncate_long_documents)
            if cut:
                logger.info(
                    "cut %d contexts to %s characters (truncate_long_documents=%s)",
                    cut,
                    f"{NIM_CHARACTER_LIMIT:,}",
                    params.truncate_long_documents,
                )
        stream = open_samples(dataset)
    count = stream.check(requirements, may_lack=_PIPELINE_COLUMNS)
    fill = set(stream.lacking)
    source: Any = stream
    if fill and dataset is None:
        dataset = load_dataset(found.source)
    logger.info(
        "dataset %s: %d samples%s; metrics %s",
        found.where,
        count,
        " (read as the evaluation goes)" if stream.kind != "dataset" and not fill else "",
        [m.name for m in metrics],
    )

    models = JobModels(secrets)
    # Specs, checked now (secrets resolved, local paths allowed): evaluate builds them through the model
    # registry within the run's memory budget, here or in each Ray actor; local ones load on first use.
    judge = models.judge_spec(params.judge_llm) if params.judge_llm else None
    embedder = models.embedder_spec(params.judge_embeddings.model) if params.judge_embeddings else None
    if fill:
        assert dataset is not None
        source = _run_pipeline(spec, dataset, found.corpus, models, cache_dir, report)
    total = count * len(metrics)
    report({"stage": "evaluating", "scores_total": total, "scores_done": 0})
    on_round, on_progress = round_progress(total, report)
    result = evaluate(
        source,
        metrics,
        judge=judge,
        embedder=embedder,
        cache_dir=cache_dir,
        progress=False,
        on_round=on_round,
        on_progress=on_progress,
        executor=spec.executor.type,
        ray_address=spec.executor.address,
        num_workers=spec.executor.num_workers,
        out=out,
    )
    report({"stage": "done", "scores_done": total})
    return result


def _run_pipeline(
    spec: JobSpec,
    dataset: Dataset,
    corpus: list[dict[str, str]] | None,
    models: JobModels,
    cache_dir: Path,
    report: Report,
) -> Dataset:
    """Retrieve contexts and generate answers where the data has none (the RAG pipeline)."""
    no_contexts = _missing(dataset, Column.RETRIEVED_CONTEXTS)
    no_answers = _missing(dataset, Column.RESPONSE)
    retriever = spec.retriever_pipeline
    if no_contexts and retriever is None:
        raise ConfigError(
            f"{no_contexts} sample(s) have no contexts, so the job must retrieve them: add "
            "`retriever_pipeline` with an `embedding_model` (and a dataset `corpus` to retrieve from), or "
            "give `contexts` in the data."
        )
    if no_answers and spec.model is None:
        raise ConfigError(
            f"{no_answers} sample(s) have no answer, so the job must generate them: add `model` (the RAG "
            "model), or give `answer` in the data."
        )
    try:
        from ascend_eval.pipeline import PipelineConfig, build_rag_samples
    except ModuleNotFoundError as e:
        if e.name != "ascend_eval.pipeline":
            raise
        raise ConfigError(
            "This dataset lacks contexts or answers and this installation has no RAG pipeline "
            "(ascend_eval.pipeline). Give contexts and answers in the data."
        ) from e
    from ascend_eval.engine import RequestCache
    from ascend_eval.executors.local import CACHE_FILE, close_built
    from ascend_eval.models.factory import build_models

    settings: dict[str, Any] = {"top_k": spec.metric_params.top_k}
    if spec.metric_params.truncate_long_documents:
        settings["truncate_long_documents"] = spec.metric_params.truncate_long_documents
    if retriever is not None:
        for field in ("chunk_size", "chunk_overlap", "chunk_unit", "rerank_candidates"):
            value = getattr(retriever, field)
            if value is not None:
                settings[field] = value
    answer = spec.model.inference_params if spec.model else None
    if answer is not None and answer.max_tokens is not None:
        settings["answer_max_tokens"] = answer.max_tokens
    if answer is not None and answer.temperature is not None:
        settings["answer_temperature"] = answer.temperature
    config = PipelineConfig(**settings)

    def progress(stage: str, done: int, total: int) -> None:
        report({"stage": f"pipeline: {stage}", "pipeline_done": done, "pipeline_total": total})

    logger.info(
        "RAG pipeline for %d samples without contexts, %d without answers: %s",
        no_contexts,
        no_answers,
        config,
    )
    # Built through the registry within one memory budget, and closed before the evaluation's models load.
    built = build_models(models.pipeline_specs(spec))
    try:
        with RequestCache(cache_dir / CACHE_FILE) as cache:
            samples = build_rag_samples(
                dataset,
                corpus=corpus,
                config=config,
                embedder=built.get("embedder"),
                generator=built.get("judge"),
                reranker=built.get("reranker"),
                cache=cache,
                progress=progress,
            )
    finally:
        close_built(built, set())
    return dataset.with_samples(samples)
