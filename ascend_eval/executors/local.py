"""The local executor: every (sample, metric) plan of a stream of samples run by one engine, each sample
handed on, scored, in dataset order. `evaluate()` runs it in this process; each Ray actor runs it on its
batches (`ascend_eval.executors.ray_actor`), so both score alike.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from ascend_eval.data import Sample
from ascend_eval.engine import Backends, Engine, RequestCache, RoundStats
from ascend_eval.engine.scheduler import Plan
from ascend_eval.engine.stats import StageStats
from ascend_eval.metrics import Metric, PlanContext
from ascend_eval.models.weights.paths import cache_root
from ascend_eval.prompts.layout import SampleBlock
from ascend_eval.results.records import ScoredSample
from ascend_eval.results.sink import Collector
from ascend_eval.text.language import detect_language

CACHE_FILE = "requests.sqlite"
"""The request cache's file name inside a cache folder."""


def open_cache(cache_dir: str | Path | Literal[False] | None) -> RequestCache:
    """The request cache of `cache_dir` (default `~/.cache/ascend-eval/requests`); False: none."""
    if cache_dir is False:
        return RequestCache(None)
    root = cache_root() / "requests" if cache_dir is None else Path(cache_dir)
    return RequestCache(root / CACHE_FILE)


@dataclass
class LocalRun:
    """What an engine run leaves besides the scores."""

    rounds: list[RoundStats] = field(default_factory=list)
    stages: dict[str, StageStats] = field(default_factory=dict)
    prompt_tags: set[str] = field(default_factory=set)


def score_samples(
    samples: Iterable[Sample],
    count: int,
    metrics: Sequence[Metric],
    backends: Backends,
    cache: RequestCache,
    emit: Callable[[ScoredSample], None],
    *,
    language: str = "auto",
    ragas_compat: bool = False,
    judge_mode: str = "classify",
    calibration: str | None = None,
    scoring: str = "threshold",
    prompt_layout: str = "task_first",
    chunk_size: int = 1024,
    dedupe: bool = True,
    progress: bool = False,
    on_round: Callable[[RoundStats], None] | None = None,
    on_progress: Callable[[Any], None] | None = None,
    tracer: Any = None,
) -> LocalRun:
    """Score `samples` (`count` of them) with every metric, handing each to `emit` as soon as all its
    metrics are done, in dataset order.

    The samples are read as the engine starts their plans, and a plan is made only then: at most the
    engine's window of plans exists at once, so a stream of any length runs in bounded memory.
    `language` is "auto" (per sample, by its share of Chinese characters), "en" or "zh"; `calibration`
    and `scoring` are `PlanContext`'s; `prompt_layout` "sample_first" renders the prompts of each sample
    whose texts are long enough after its sample block (`prompts/layout.py`), "task_first" renders all
    of them task first.
    """
    done = LocalRun()

    def record(stats: RoundStats) -> None:
        done.rounds.append(stats)
        if on_round is not None:
            on_round(stats)

    engine = Engine(
        backends,
        cache,
        chunk_size=chunk_size,
        dedupe=dedupe,
        progress=progress,
        on_round=record,
        on_progress=on_progress,
        tracer=tracer,
    )
    collector = Collector([m.name for m in metrics], emit)

    def plans() -> Iterator[tuple[tuple[int, str], Plan]]:
        for i, sample in enumerate(samples):
            lang = detect_language(sample.language_text()) if language == "auto" else language
            block = SampleBlock.of(sample) if prompt_layout == "sample_first" else None
            ctx = PlanContext(
                lang, ragas_compat, judge_mode,  # type: ignore[arg-type]
                block=block if block is not None and block.pays_off else None,
                calibration=calibration, scoring=scoring,  # type: ignore[arg-type]
            )  # fmt: skip
            collector.expect(i, sample, lang)
            for m in metrics:
                yield (i, m.name), m.plan(sample, ctx)

    try:
        engine.run(plans(), total=count * len(metrics), on_outcome=collector.outcome)
    finally:
        done.stages = dict(engine.stages)
        done.prompt_tags = set(engine.prompt_tags)
    return done
