"""The local executor: every (sample, metric) plan of a stream of samples run by one engine, each sample
handed on, scored, in dataset order. `run_locally` is the whole run in this process (models built, scored,
result finished); `score_samples` is the scoring, which each Ray actor also runs on its batches
(`ascend_eval.executors.ray_actor`), so both score alike.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any, Literal

from ascend_eval.base.paths import cache_root
from ascend_eval.config import EngineLimits, MetricContext
from ascend_eval.data import Sample
from ascend_eval.engine import Backends, Engine, RequestCache, RunStats
from ascend_eval.engine.plan import Plan
from ascend_eval.engine.tracing import run_attributes
from ascend_eval.errors import OutputError
from ascend_eval.executors.base import RunInput
from ascend_eval.executors.provenance import devices, provenance
from ascend_eval.metrics import Metric, PlanContext
from ascend_eval.models.factory import build_models
from ascend_eval.prompts.layout import SampleBlock
from ascend_eval.results import EvaluationResult
from ascend_eval.results.records import ScoredSample
from ascend_eval.results.sink import Collector
from ascend_eval.text.language import detect_language

logger = logging.getLogger("ascend_eval")

CACHE_FILE = "requests.sqlite"
"""The request cache's file name inside a cache folder."""


def open_cache(cache_dir: str | Path | Literal[False] | None) -> RequestCache:
    """The request cache of `cache_dir` (default `~/.cache/ascend-eval/requests`); False: none."""
    if cache_dir is False:
        return RequestCache(None)
    root = cache_root() / "requests" if cache_dir is None else Path(cache_dir)
    return RequestCache(root / CACHE_FILE)


def score_samples(
    samples: Iterable[Sample],
    count: int,
    metrics: Sequence[Metric],
    backends: Backends,
    cache: RequestCache,
    emit: Callable[[ScoredSample], None],
    *,
    context: MetricContext,
    limits: EngineLimits,
    tracer: Any = None,
) -> RunStats:
    """Score `samples` (`count` of them) with every metric, handing each to `emit` as soon as all its
    metrics are done, in dataset order; return what the engine counted besides the scores.

    The samples are read as the engine starts their plans, and a plan is made only then: at most the
    engine's window of plans exists at once, so a stream of any length runs in bounded memory.
    `context.language` "auto" detects each sample's language by its share of Chinese characters; under
    `context.prompt_layout` "sample_first" each sample whose texts are long enough has its prompts
    rendered after its sample block (`prompts/layout.py`).
    """
    engine = Engine(
        backends,
        cache,
        chunk_size=limits.chunk_size,
        dedupe=limits.dedupe,
        progress=limits.progress,
        on_round=limits.on_round,
        on_progress=limits.on_progress,
        tracer=tracer,
    )
    collector = Collector([m.name for m in metrics], emit)

    def plans() -> Iterator[tuple[tuple[int, str], Plan]]:
        language = context.language
        for i, sample in enumerate(samples):
            lang = detect_language(sample.language_text()) if language == "auto" else language
            block = SampleBlock.of(sample) if context.prompt_layout == "sample_first" else None
            ctx = PlanContext(
                lang, context.ragas_compat, context.judge_mode,  # type: ignore[arg-type]
                block=block if block is not None and block.pays_off else None,
                calibration=context.calibration_method, scoring=context.scoring,
            )  # fmt: skip
            collector.expect(i, sample, lang)
            for m in metrics:
                yield (i, m.name), m.plan(sample, ctx)

    engine.run(plans(), total=count * len(metrics), on_outcome=collector.outcome)
    return engine.stats


def run_locally(run: RunInput) -> EvaluationResult:
    """The local executor: the models the metrics need, built here (and closed here, unless the caller
    passed them in built), and one engine in this process scoring every sample into `run.sink`."""
    config, cache = run.config, open_cache(run.config.cache_dir)
    roles = set().union(*(m.roles for m in run.metrics))
    built = build_models(config.model_specs(roles), memory_budget=config.memory_budget)
    ids = {role: getattr(b, "model_id", None) for role, b in built.items()}
    opened = run_attributes(
        samples=run.count,
        source=run.stream.source,
        metrics=run.names,
        judge_mode=config.judge_mode,
        language=config.language,
    )
    with run.tracer.run(opened) as run_span:
        run_span.set_models(ids)
        done, used = _score(run, built, cache)
        result = _finish(
            run, done, provenance(run, ids, done.prompt_tags, devices=used, cache=cache.path), cache
        )
        if run.tracer.enabled:  # the scores of a stored run are read from disk only when a span wants them
            run_span.finished({m: result[m] for m in run.names}, done.stages)
    return result


def _score(run: RunInput, built: dict[str, Any], cache: RequestCache) -> tuple[RunStats, dict[str, Any]]:
    """Score the run into its sink; close the cache and the models built here whatever happens. Returns
    what the engine left and where each local model ran (read before the models close)."""
    # Backends built here are closed here (HTTP pools); objects the caller passed in stay theirs.
    given = {id(choice.value) for choice in run.config.models.values()}
    backends = Backends(
        judge=built.get("judge"), embedder=built.get("embedder"), reranker=built.get("reranker")
    )
    try:
        done = score_samples(
            run.stream, run.count, run.metrics, backends, cache, run.sink.add,
            context=run.config.context, limits=run.config.limits, tracer=run.tracer,
        )  # fmt: skip
        run.sink.close()  # the last rows are written here, where a full disk is reported as below
    except (KeyboardInterrupt, OutputError) as stopped:
        # A full disk under `out` stops the run as an interrupt does: what was answered is cached.
        if cache.enabled:
            logger.warning(
                "%s %d answered requests are cached in %s; run the same call again to resume from there.",
                "Interrupted." if isinstance(stopped, KeyboardInterrupt) else "Stopped.",
                len(cache),
                cache.path,
            )
        raise
    finally:
        try:
            run.sink.close()
        finally:
            cache.close()
            used = devices(built)  # before the models are closed
            close_built(built, given)
    return done, used


def close_built(built: Mapping[str, Any], given: set[int]) -> None:
    """Close the models built for a run (their HTTP pools, engines), but none whose id is in `given`: an
    object the caller passed in built stays the caller's."""
    for backend in built.values():
        close = getattr(backend, "close", None)
        if close is not None and id(backend) not in given:
            close()


def _finish(run: RunInput, done: RunStats, record: dict[str, Any], cache: RequestCache) -> EvaluationResult:
    try:
        return run.sink.finish(
            rounds=done.rounds,
            stages=done.stages,
            provenance=record,
            wall_seconds=time.perf_counter() - run.started,
        )
    except OutputError:
        if cache.path is not None and cache.failure is None:
            logger.warning(
                "Every answer of this run is cached in %s; run the same call again to write the "
                "results without asking the models again.",
                cache.path,
            )
        raise
