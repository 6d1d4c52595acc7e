"""One `Engine.run` as it happens: the plans alive, the open request slots, the lanes, and the counts.

`engine.Engine` is what callers hold, with its settings, its models and its stats; each call to its `run`
builds one `PlanRun` here from them and drives it to the end. The run adds what it counts to the engine's
`RunStats` as it goes.
"""

from __future__ import annotations

import logging
import queue
import time
from collections import OrderedDict, defaultdict, deque
from collections.abc import Callable, Hashable, Iterator
from dataclasses import dataclass, field
from typing import Any

from ascend_eval.engine.backends import Backends
from ascend_eval.engine.cache import RequestCache, request_key
from ascend_eval.engine.codecs import Codec, Result, codec_for
from ascend_eval.engine.lanes import Done, Job, Lane, dispatch_limits
from ascend_eval.engine.plan import Plan, PlanError, PlanId
from ascend_eval.engine.stats import Progress, RoundStats, RunStats
from ascend_eval.engine.tracing import NoTrace
from ascend_eval.errors import BACKEND_ERROR
from ascend_eval.models.base import Request

logger = logging.getLogger("ascend_eval.engine")


@dataclass
class _Slot:
    """One request to answer in this run, and the plans waiting for it."""

    key: str
    """The content key (cache key); with dedupe off a slot is one occurrence, and keys repeat."""
    request: Request
    round: int
    codec: Codec[Any, Any]
    group: Hashable
    """The batch group the request joins (`Codec.group`)."""
    label: str
    waiters: list[tuple[PlanId, int]] = field(default_factory=list)


@dataclass
class _Live:
    """A started plan waiting for the answers of its current step."""

    plan: Plan
    order: int
    step: int = 0
    answers: list[Any] = field(default_factory=list)
    missing: int = 0


class PlanRun:
    """The state of one `Engine.run`: live plans, open slots, lanes, and the stats being counted.

    Everything here runs on the caller's thread; only the lanes' workers run elsewhere, and they talk to
    it through one completion queue.
    """

    def __init__(
        self,
        plans: Iterator[tuple[PlanId, Plan]],
        *,
        backends: Backends,
        cache: RequestCache,
        stats: RunStats,
        tracer: NoTrace,
        chunk_size: int,
        dedupe: bool,
        max_live_plans: int,
        max_pending: int,
        progress_interval: float,
        on_round: Callable[[RoundStats], None] | None,
        on_progress: Callable[[Progress], None] | None,
        total: int | None,
        on_outcome: Callable[[PlanId, Any], None] | None,
        bar: Any,
    ) -> None:
        """Args as `Engine`'s and `Engine.run`'s, with the engine's `stats` to add to and the progress
        `bar`."""
        self.backends = backends
        self.cache = cache
        self.stats = stats
        self.tracer = tracer
        self.chunk_size = chunk_size
        self.dedupe = dedupe
        self.max_live_plans = max_live_plans
        self.max_pending = max_pending
        self.progress_interval = progress_interval
        self.on_round = on_round
        self.on_progress = on_progress
        self.total = total
        self.on_outcome = on_outcome
        self.bar = bar
        self.outcomes: dict[PlanId, Any] = {}
        self.finished = 0
        self.exhausted = False
        """Every plan has been taken from `pending`."""
        self.live: dict[PlanId, _Live] = {}
        self.slots: dict[str, _Slot] = {}
        self.memo: OrderedDict[str, Result] = OrderedDict()
        self.ready: deque[PlanId] = deque()
        self.lookups: list[str] = []
        self.lanes: dict[int, Lane] = {}
        self.done_queue: queue.Queue[Done] = queue.Queue()
        self.pending = plans
        self.admitted = 0
        self.at_step: dict[int, int] = defaultdict(int)
        self.round_stats: dict[int, RoundStats] = {}
        self.round_started: dict[int, float] = {}
        self.closed = 0
        self.answered = 0
        self.sent = 0
        self.occurrence = 0
        self.seq = 0
        self.started = time.perf_counter()
        self.last_progress = 0.0
        self.unsticks = 0

    # The loop

    def go(self) -> None:
        while True:
            if not self.live:
                # Starts the next plans, unless the window is full of answers that no plan waits for any
                # more (every plan that wanted them failed): then wait below for those to come back.
                self._settle()
                if not self.live and self.exhausted:
                    break
            try:
                done = self.done_queue.get(timeout=min(0.5, self.progress_interval))
            except queue.Empty:
                self._report_progress()
                if self._stalled():
                    self._unstick()
                continue
            self._receive(done)
            while True:  # everything that is back already, before the plans move on
                try:
                    self._receive(self.done_queue.get_nowait())
                except queue.Empty:
                    break
            self._settle()
            self._report_progress()
        self._close_rounds(final=True)
        self._report_progress(force=True)

    def shut_down(self) -> None:
        """Stop every lane; after an interrupt nothing waits for a call still in progress."""
        finished = not self.live
        for lane in self.lanes.values():
            lane.stop(wait=finished)
        if not finished:
            for live in self.live.values():
                live.plan.close()

    def _stalled(self) -> bool:
        """Nothing can arrive any more, yet the run is not over: every lane is idle (its answers already
        on the queue, which is empty) while plans wait or a full window keeps new plans out. That is a
        bug of the engine's own bookkeeping; `_unstick` gets the run going again instead of waiting on
        an empty queue for ever."""
        if not self.live and (self.exhausted or not self.slots):
            return False
        lanes_idle = all(lane.idle() for lane in self.lanes.values())
        return lanes_idle and self.done_queue.empty() and not self.ready and not self.lookups

    def _unstick(self) -> None:
        """End with an engine_error each live plan that waits for an answer no open request will give;
        send again, through the cache, every open request a live plan waits for; and drop the open
        requests that no live plan waits for (their plans failed). Logged as an error with the counts, so
        that the bug behind it can be found. After `_MAX_UNSTICKS` recoveries the live plans end with an
        engine_error instead: a run never waits for ever."""
        self.unsticks += 1
        asked = {waiter for slot in self.slots.values() for waiter in slot.waiters}
        lost = [
            pid
            for pid, live in self.live.items()
            if self.unsticks > _MAX_UNSTICKS
            or any(a is None and (pid, i) not in asked for i, a in enumerate(live.answers))
        ]
        for pid in lost:
            live = self.live[pid]
            self.at_step[live.step] -= 1
            live.plan.close()
            self._finish(pid, PlanError("engine_error: the engine lost a request this score waited for"))
        waited = {(pid, i) for slot in self.slots.values() for pid, i in slot.waiters if pid in self.live}
        resend = [sid for sid, slot in self.slots.items() if any(w in waited for w in slot.waiters)]
        orphans = [sid for sid in self.slots if sid not in resend]
        logger.error(
            "The engine had nothing in flight while plans waited: %d ended with an engine_error, %d open "
            "requests sent again, %d dropped that no plan waits for (recovery %d)",
            len(lost), len(resend), len(orphans), self.unsticks,
        )  # fmt: skip
        for slot_id in orphans:
            del self.slots[slot_id]
        self.lookups.extend(resend)
        self._settle()

    def _settle(self) -> None:
        """Advance every plan whose answers are all in, start new plans in their place, look up what they
        ask for in the cache and queue the rest, until nothing moves without a backend."""
        self._admit()
        self._look_up()
        while self.ready or self.lookups:
            while self.ready:
                pid = self.ready.popleft()
                live = self.live[pid]
                self._advance(pid, live, live.answers)
            self._admit()
            self._look_up()
        self._close_rounds(final=False)

    def _admit(self) -> None:
        while len(self.live) < self.max_live_plans and len(self.slots) < self.max_pending:
            item = next(self.pending, None)
            if item is None:
                self.exhausted = True
                return
            pid, plan = item
            live = _Live(plan, self.admitted)
            self.admitted += 1
            self.live[pid] = live
            self._advance(pid, live, None)

    def _advance(self, pid: PlanId, live: _Live, answers: list[Any] | None) -> None:
        """Send `answers` (None to start) and park the plan on its next requests, or record its outcome."""
        if live.step:
            self.at_step[live.step] -= 1
        try:
            requests = next(live.plan) if answers is None else live.plan.send(answers)
            while not requests:  # a plan that asks for nothing this step just continues
                requests = live.plan.send([])
        except StopIteration as stop:
            self._finish(pid, stop.value)
            return
        except Exception as e:  # a bug in one metric's plan must not lose the other scores
            logger.exception("plan %r raised", pid)
            self._finish(pid, PlanError(f"plan_error: {type(e).__name__}: {e}"))
            return
        live.step += 1
        self.at_step[live.step] += 1
        stats = self._round(live.step)
        stats.live_plans += 1
        live.answers = [None] * len(requests)
        live.missing = len(requests)
        for index, request in enumerate(requests):
            self._ask(pid, live, index, request, stats)

    def _ask(self, pid: PlanId, live: _Live, index: int, request: Request, stats: RoundStats) -> None:
        key = request_key(request, self.backends.for_request(request).model_id)
        if getattr(request, "tag", ""):
            self.stats.prompt_tags.add(request.tag)  # type: ignore[union-attr]
        codec = codec_for(request)
        group, label = codec.group(request)
        self.tracer.stage_started(label, request)
        stage = self.stats.stage(label)
        stats.requests += 1
        stage.requests += 1
        if self.dedupe:
            slot_id = key
            if key in self.memo:  # answered earlier in this run
                self.memo.move_to_end(key)
                self.tracer.stage_answered(label)
                self._answer(pid, live, index, self.memo[key])
                return
        else:
            slot_id = f"{key}#{self.occurrence}"
            self.occurrence += 1
        slot = self.slots.get(slot_id)
        if slot is None:
            slot = self.slots[slot_id] = _Slot(key, request, live.step, codec, group, label)
            self.lookups.append(slot_id)
            stats.unique += 1
            stage.unique += 1
        slot.waiters.append((pid, index))

    def _look_up(self) -> None:
        """Answer the new slots the cache has, and queue the others on their backends' lanes."""
        if not self.lookups:
            return
        new, self.lookups = self.lookups, []
        wanted = {self.slots[s].key: self.slots[s].request for s in new}
        hits = self.cache.get_many(list(wanted.items()))
        jobs: dict[Lane, list[tuple[Hashable, Codec[Any, Any], Job]]] = defaultdict(list)
        for slot_id in new:
            slot = self.slots[slot_id]
            if slot.key in hits:
                self._round(slot.round).cache_hits += 1
                self.stats.stage(slot.label).cache_hits += 1
                self._resolve(slot_id, hits[slot.key])
                continue
            order = min((self.live[pid].order for pid, _ in slot.waiters if pid in self.live), default=0)
            lane = self._lane(slot.request)
            self.seq += 1
            job = Job(order, self.seq, slot_id, slot.request, slot.key)
            jobs[lane].append((slot.group, slot.codec, job))
            batches = self._round(slot.round).batches
            batches[slot.label] = batches.get(slot.label, 0) + 1
        for lane, lane_jobs in jobs.items():
            lane.put(lane_jobs)

    def _lane(self, request: Request) -> Lane:
        backend = self.backends.for_request(request)
        lane = self.lanes.get(id(backend))
        if lane is None:
            concurrency, batch = dispatch_limits(backend, self.chunk_size)
            lane = self.lanes[id(backend)] = Lane(
                backend,
                concurrency=concurrency,
                max_batch=batch,
                out=self.done_queue,
                tracer=self.tracer,
                store=self.cache.put_many,
            )
        return lane

    # Answers coming back

    def _receive(self, done: Done) -> None:
        """Account for one backend call's answers (already cached by its lane) and hand them out."""
        if done.raised is not None:
            raise done.raised
        share = done.seconds / max(1, len(done.slots))
        computed_share = self._computed_share(done)
        for slot_id, result in zip(done.slots, done.results, strict=True):
            slot = self.slots.get(slot_id)
            if slot is None:  # every plan that wanted it has failed meanwhile
                continue
            stats, stage = self._round(slot.round), self.stats.stage(slot.label)
            stats.sent += 1
            stage.sent += 1
            stage.backend_seconds += share
            self.sent += 1
            codec = slot.codec
            error = result if isinstance(result, str) else codec.error(result)
            if error is not None:
                stats.failed += 1
                stage.failed += 1
                self._fail(slot_id, error)
                continue
            t_in, t_out = codec.tokens(result)
            stats.tokens_in += t_in
            stats.tokens_out += t_out
            stage.tokens_in += t_in
            stage.tokens_out += t_out
            if computed_share is not None:
                stage.computed_prompt_tokens = (stage.computed_prompt_tokens or 0) + round(
                    t_in * computed_share
                )
            self._resolve(slot_id, result)

    def _computed_share(self, done: Done) -> float | None:
        """Computed prompt tokens per prompt token of this call's answered requests, or None."""
        if done.computed is None:
            return None
        prompt = 0
        for slot_id, result in zip(done.slots, done.results, strict=True):
            slot = self.slots.get(slot_id)
            if slot is not None and not isinstance(result, str) and slot.codec.error(result) is None:
                prompt += slot.codec.tokens(result)[0]
        return done.computed / prompt if prompt else None

    def _resolve(self, slot_id: str, result: Result) -> None:
        slot = self.slots.pop(slot_id)
        self.tracer.stage_answered(slot.label)
        if self.dedupe:
            self.memo[slot.key] = result
            if len(self.memo) > _MEMO_SIZE:
                self.memo.popitem(last=False)
        self._touch(slot.round)
        for pid, index in slot.waiters:
            live = self.live.get(pid)
            if live is not None:
                self._answer(pid, live, index, result)

    def _answer(self, pid: PlanId, live: _Live, index: int, result: Result) -> None:
        live.answers[index] = result
        live.missing -= 1
        self.answered += 1
        if live.missing == 0:
            self.ready.append(pid)

    def _fail(self, slot_id: str, error: str) -> None:
        """A backend failed this request: every plan waiting for it ends now with the reason."""
        slot = self.slots.pop(slot_id)
        self.tracer.stage_answered(slot.label)
        self._touch(slot.round)
        for pid, _ in slot.waiters:
            live = self.live.get(pid)
            if live is not None:
                self.at_step[live.step] -= 1
                live.plan.close()
                self._finish(pid, PlanError(f"{BACKEND_ERROR}: {error}"))

    def _finish(self, pid: PlanId, outcome: Any) -> None:
        self.live.pop(pid, None)
        self.finished += 1
        if self.on_outcome is None:
            self.outcomes[pid] = outcome
        else:
            self.on_outcome(pid, outcome)
        self.bar.update(1)

    # Stats and progress

    def _round(self, step: int) -> RoundStats:
        stats = self.round_stats.get(step)
        if stats is None:
            stats = self.round_stats[step] = RoundStats(round=step, live_plans=0)
            self.round_started[step] = time.perf_counter()
        return stats

    def _touch(self, step: int) -> None:
        self.round_stats[step].seconds = time.perf_counter() - self.round_started[step]

    def _close_rounds(self, *, final: bool) -> None:
        """Report each round that no plan can reach any more: every plan has started, and none is at
        this step or an earlier one."""
        while self.closed < len(self.round_stats):
            step = self.closed + 1
            if not final and (not self.exhausted or any(self.at_step[s] > 0 for s in range(1, step + 1))):
                return
            self.closed = step
            stats = self.round_stats[step]
            self.stats.rounds.append(stats)
            logger.info(stats.line())
            if self.on_round is not None:
                self.on_round(stats)

    def _report_progress(self, *, force: bool = False) -> None:
        now = time.perf_counter()
        if not force and now - self.last_progress < self.progress_interval:
            return
        self.last_progress = now
        in_flight = sum(lane.in_flight for lane in self.lanes.values())
        snapshot = Progress(
            scores_done=self.finished,
            scores_total=self.total if self.total is not None else self.admitted,
            requests_answered=self.answered,
            requests_sent=self.sent,
            in_flight=in_flight,
            elapsed=now - self.started,
        )
        self.bar.set_postfix_str(
            f"{snapshot.requests_answered} requests answered, {in_flight} in flight", refresh=True
        )
        if self.on_progress is not None:
            self.on_progress(snapshot)


_MAX_UNSTICKS = 3
"""Recoveries from a stall (`PlanRun._unstick`) per run before the waiting plans are ended instead."""

_MEMO_SIZE = 4096
"""Answers kept in memory for identical requests later in the same run (the cache keeps them all). Plans
start in dataset order, so repeats come close together: a small window catches them and keeps memory flat
(an embedding answer alone is kilobytes)."""
