"""The engine: the only code that calls models.

Metrics are plans: generators that yield lists of typed requests and receive the results. The engine
starts plans in order (every sample x every metric), drops duplicate requests, answers what it can from
the cache, and streams the rest to the backends through one lane per backend (`lanes.py`), where requests
of one batch group and the same kind queue in plan order and go out in large calls. A plan moves on as soon
as its own answers are back. A 1,000-sample, 12-metric run is a stream of large batches, never tens of
thousands of single calls, and never a wait for the slowest request of a round.

`Engine` is what callers hold: its settings, its models (`backends.Backends`), its request cache, and what
its runs counted (`stats.RunStats`). Each `run` is one `run.PlanRun`, which keeps the state of that run.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any

from ascend_eval.engine.backends import Backends
from ascend_eval.engine.cache import RequestCache
from ascend_eval.engine.plan import Plan, PlanId
from ascend_eval.engine.run import PlanRun
from ascend_eval.engine.stats import Progress, RoundStats, RunStats, StageStats
from ascend_eval.engine.tracing import NO_TRACE, NoTrace
from ascend_eval.errors import ConfigError

__all__ = ["Engine"]


class Engine:
    """Runs plans to completion, streaming their requests to the backends.

    A plan advances as soon as its own answers are back: there is no round barrier, so a slow request
    holds back only its own plan, and every backend (and every batch group of one) is busy at once.
    Requests queue in plan order, and plans start in the order given (sample by sample), at most
    `max_live_plans` at a time: a sample's requests reach the backend together and memory stays bounded
    on any dataset size. Identical requests run once. Every answer is committed to the cache by the lane
    thread that received it, before this thread sees it (`lanes.Lane`), so a killed run loses only what
    was in flight, however busy this thread was.

    Args:
        backends: the model runtimes.
        cache: answered requests by content hash; `RequestCache(None)` disables it.
        chunk_size: at most this many requests per backend call.
        dedupe: send identical requests once (turned off only to measure what deduplication saves).
        progress: show a progress bar over (sample, metric) scores.
        on_round: called with each round's stats once no plan can reach that round any more (benchmarks
            and the CLI use it). Round k is the k-th step of every plan.
        on_progress: called with a `Progress` snapshot at least every `progress_interval` seconds while
            the run goes on, and once at its end.
        max_live_plans: how many plans may be started and unfinished at once.
        max_pending: no new plan starts while this many requests are asked for and not answered yet
            (queued or in flight): the backends always have work queued, and memory holds at most about
            this many prompts whatever the dataset's size. Plans already started always go on.
        tracer: the tracing hooks (`ascend_eval.engine.tracing`); default off.
    """

    def __init__(
        self,
        backends: Backends,
        cache: RequestCache | None = None,
        *,
        chunk_size: int = 1024,
        dedupe: bool = True,
        progress: bool = False,
        on_round: Callable[[RoundStats], None] | None = None,
        on_progress: Callable[[Progress], None] | None = None,
        progress_interval: float = 1.0,
        max_live_plans: int = 2048,
        max_pending: int = 4096,
        tracer: NoTrace | None = None,
    ) -> None:
        if chunk_size < 1:
            raise ConfigError(f"chunk_size must be >= 1, got {chunk_size}.")
        if max_live_plans < 1:
            raise ConfigError(f"max_live_plans must be >= 1, got {max_live_plans}.")
        if max_pending < 1:
            raise ConfigError(f"max_pending must be >= 1, got {max_pending}.")
        self.backends = backends
        self.cache = cache if cache is not None else RequestCache(None)
        self.chunk_size = chunk_size
        self.dedupe = dedupe
        self.progress = progress
        self.on_round = on_round
        self.on_progress = on_progress
        self.progress_interval = progress_interval
        self.max_live_plans = max_live_plans
        self.max_pending = max_pending
        self.tracer = NO_TRACE if tracer is None else tracer
        self.stats = RunStats()
        """What every run of this engine counted (each run adds to it as it goes)."""

    @property
    def rounds(self) -> list[RoundStats]:
        """Stats per plan step, in step order, appended as each step closes (`RunStats.rounds`)."""
        return self.stats.rounds

    @property
    def stages(self) -> dict[str, StageStats]:
        """Stats per stage label (e.g. "judge.generate[statements@1]") over every run (`RunStats.stages`)."""
        return self.stats.stages

    @property
    def prompt_tags(self) -> set[str]:
        """Every prompt `name@version` the plans used (cached or not), for provenance."""
        return self.stats.prompt_tags

    def run(
        self,
        plans: Mapping[PlanId, Plan] | Iterable[tuple[PlanId, Plan]],
        *,
        total: int | None = None,
        on_outcome: Callable[[PlanId, Any], None] | None = None,
    ) -> dict[PlanId, Any]:
        """Advance every plan until it returns.

        Args:
            plans: plan id -> plan, or an iterable of (id, plan) pairs that is consumed only as plans
                start (at most `max_live_plans` are alive at once), so a generator over a dataset read
                as a stream never holds more than that many plans.
            total: how many plans an iterable yields (for progress; a mapping knows its length).
            on_outcome: called with (id, outcome) as each plan finishes; with it, outcomes are handed
                over and not kept, and the returned dict is empty.

        Returns:
            Each plan's return value, or a `PlanError`, by id (empty when `on_outcome` is given).
        """
        from tqdm.auto import tqdm

        if isinstance(plans, Mapping):
            total, items = len(plans), iter(plans.items())
        else:
            items = iter(plans)
        # disable=None lets tqdm switch itself off when stderr is not a terminal (logs, CI, pipes).
        bar = tqdm(
            total=total,
            desc="evaluating",
            unit="score",
            disable=None if self.progress else True,
            leave=False,
        )
        run = PlanRun(
            items,
            backends=self.backends,
            cache=self.cache,
            stats=self.stats,
            tracer=self.tracer,
            chunk_size=self.chunk_size,
            dedupe=self.dedupe,
            max_live_plans=self.max_live_plans,
            max_pending=self.max_pending,
            progress_interval=self.progress_interval,
            on_round=self.on_round,
            on_progress=self.on_progress,
            total=total,
            on_outcome=on_outcome,
            bar=bar,
        )
        try:
            run.go()
        finally:
            run.shut_down()
            bar.close()
            self.tracer.end_stages(self.stats.stages)
        return run.outcomes
