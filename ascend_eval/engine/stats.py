"""What the engine reports while it runs and after: stats per plan step and per stage, kept together in
one `RunStats`, and a progress snapshot.

Plans no longer wait for each other, so a "round" is not a moment in time: round k is the k-th step of
every plan (the k-th list of requests each one yields), counted whenever that step happens. The stats of a
round are reported once no plan can reach that step any more.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field


@dataclass
class RoundStats:
    """What the k-th step of every plan asked for and what it cost.

    `requests` counts what the plans asked for; `unique` the requests not already answered or on their way
    in this run; `cache_hits` those of them the cache answered; `sent` the rest, which reached a backend.
    """

    round: int
    live_plans: int
    """Plans that reached this step."""
    requests: int = 0
    unique: int = 0
    cache_hits: int = 0
    sent: int = 0
    failed: int = 0
    tokens_in: int = 0
    tokens_out: int = 0
    seconds: float = 0.0
    """From the first request of this step to the last answer of it (steps of different plans overlap)."""
    batches: dict[str, int] = field(default_factory=dict)
    """Requests sent per prompt and role, e.g. {"judge.generate[statements@1]": 20}."""

    def line(self) -> str:
        groups = ", ".join(f"{k}: {v}" for k, v in self.batches.items()) or "none sent"
        return (
            f"round {self.round}: {self.live_plans} live plans, {self.requests} requests, "
            f"{self.unique} unique, "
            f"{self.cache_hits} cached, {self.sent} sent ({groups}), {self.failed} failed, "
            f"tokens in/out {self.tokens_in}/{self.tokens_out}, {self.seconds:.2f}s"
        )


@dataclass
class StageStats:
    """One stage (a prompt of the judge, or an embedder or reranker kind) over the whole run."""

    requests: int = 0
    unique: int = 0
    cache_hits: int = 0
    sent: int = 0
    failed: int = 0
    tokens_in: int = 0
    tokens_out: int = 0
    computed_prompt_tokens: int | None = None
    """Of `tokens_in`, those the backend computed (not served from its prefix cache), where it counts
    them (the in-process judges); a call's count is shared out by prompt tokens."""
    backend_seconds: float = 0.0
    """Seconds of backend calls spent on this stage's requests (a call's time is shared out by count;
    calls on different lanes overlap, so stages can sum to more than the wall time)."""


@dataclass
class RunStats:
    """Everything an engine counted, over all its runs: each run (`run.PlanRun`) adds to the one its
    engine holds, as it goes, so what an interrupted run counted stays counted."""

    rounds: list[RoundStats] = field(default_factory=list)
    """Stats per plan step, in step order, appended as each step closes."""
    stages: dict[str, StageStats] = field(default_factory=dict)
    """Stats per stage label (e.g. "judge.generate[statements@1]") over every run."""
    prompt_tags: set[str] = field(default_factory=set)
    """Every prompt `name@version` the plans used (cached or not), for provenance."""

    def stage(self, label: str) -> StageStats:
        """The stats of stage `label`, started at zero the first time it is asked for.

        >>> stats = RunStats()
        >>> stats.stage("embed.document").requests += 2
        >>> stats.stage("embed.document").requests, list(stats.stages)
        (2, ['embed.document'])
        """
        stage = self.stages.get(label)
        if stage is None:
            stage = self.stages[label] = StageStats()
        return stage


@dataclass(frozen=True)
class Progress:
    """A snapshot of a run, for progress bars, logs and job status files."""

    scores_done: int
    """(sample, metric) plans finished, scored or failed."""
    scores_total: int
    requests_answered: int
    """Requests answered so far: from a backend, the cache, or an identical request of this run."""
    requests_sent: int
    """Of them, those a backend answered (or failed)."""
    in_flight: int
    """Requests handed to a backend and not back yet."""
    elapsed: float

    @property
    def rate(self) -> float:
        """Scores per second so far."""
        return self.scores_done / self.elapsed if self.elapsed > 0 else 0.0

    @property
    def eta(self) -> float:
        """Seconds left at the rate so far (inf before the first score)."""
        if self.scores_done >= self.scores_total:
            return 0.0
        return (self.scores_total - self.scores_done) / self.rate if self.rate > 0 else math.inf

    def line(self) -> str:
        eta = "?" if math.isinf(self.eta) else f"{self.eta:.0f}s"
        return (
            f"{self.scores_done}/{self.scores_total} scores, {self.requests_answered} requests answered "
            f"({self.requests_sent} by a backend, {self.in_flight} in flight), "
            f"{self.rate:.2f} scores/s, {self.elapsed:.0f}s elapsed, eta {eta}"
        )
