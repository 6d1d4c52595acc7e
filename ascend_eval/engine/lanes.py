"""Lanes: the threads that carry requests from the engine to one backend and answers back.

Each backend (a judge, an embedder, a reranker) gets one lane. A lane has a queue per batch group (the
codec's group key) and `concurrency` worker threads. A free worker takes the group whose first request
belongs to the earliest plan, takes up to `max_batch` requests of it in plan order, makes one backend call,
commits the answers to the request cache (`store`) and then puts them on the engine's completion queue. So
a backend busy with one group never holds up another backend, a slow request holds up only the call it is
in, requests of one sample reach the backend together (what a prefix cache needs), and an answer is on
disk before the engine hears of it: a kill, whatever the engine's thread was doing, loses only the calls
still in flight.

How many workers and how large a call, each backend says for itself (`dispatch_limits`): an in-process
model runs one large call at a time (its own batching fills the device); an HTTP client runs many small
calls at once (the server's batching fills the device, and each answer comes back on its own).
"""

from __future__ import annotations

import heapq
import logging
import queue
import threading
import time
from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass, field
from typing import Any

from ascend_eval.engine.codecs import Codec, Result
from ascend_eval.engine.tracing import NO_TRACE, NoTrace
from ascend_eval.models.base import Request
from ascend_eval.models.lazy import LazyModel, runtime_of

logger = logging.getLogger("ascend_eval.engine")


def dispatch_limits(backend: Any, chunk_size: int) -> tuple[int, int]:
    """(worker threads, requests per call) for `backend`: its `max_concurrency` (default 1) and its
    `max_batch` (default `chunk_size`), both capped by `chunk_size` where that is the smaller."""
    concurrency = int(getattr(backend, "max_concurrency", 1) or 1)
    batch = getattr(backend, "max_batch", None)
    batch = chunk_size if batch is None else min(int(batch), chunk_size)
    return max(1, concurrency), max(1, batch)


@dataclass(order=True)
class Job:
    """One request waiting in a lane, ordered by the plan that asked for it first."""

    order: int
    seq: int
    slot: str = field(compare=False)
    request: Request = field(compare=False)
    key: str = field(default="", compare=False)
    """The request's cache key, under which `Lane`'s `store` commits its answer."""


@dataclass
class Done:
    """One backend call's answers: a result or a failure message per slot."""

    slots: list[str]
    results: list[Result | str]
    seconds: float
    computed: int | None = None
    """Prompt tokens the backend computed in this call (not served from its prefix cache), where it
    counts them and runs one call at a time; else None."""
    raised: BaseException | None = None
    """What the backend raised that is not an `Exception` (an interrupt): the engine raises it again."""


Store = Callable[[list[tuple[str, Request, Result]]], None]
"""Commits answers (key, request, result) to the request cache: `RequestCache.put_many`."""


class Lane:
    """Worker threads for one backend. `put` and `stop` are called from the engine's thread only; each
    backend call is wrapped in `tracer.call` (a span when tracing is on) on the worker's thread, and its
    answers (not its failures) are handed to `store` on that thread before they go on `out`."""

    def __init__(
        self,
        backend: Any,
        *,
        concurrency: int,
        max_batch: int,
        out: queue.Queue[Done],
        tracer: NoTrace = NO_TRACE,
        store: Store | None = None,
    ) -> None:
        self.backend = backend
        self.tracer = tracer
        self.store = store
        self.concurrency = concurrency
        self.max_batch = max_batch
        self.in_flight = 0
        """Requests taken by a worker and not answered yet (read by the engine for progress)."""
        self._out = out
        self._groups: dict[Hashable, list[Job]] = {}
        self._codecs: dict[Hashable, Codec[Any, Any]] = {}
        self._cond = threading.Condition()
        self._stopped = False
        self._threads: list[threading.Thread] = []

    def put(self, jobs: Sequence[tuple[Hashable, Codec[Any, Any], Job]]) -> None:
        """Queue requests (group key, codec, job) all at once, so that a free worker sees them together."""
        if not jobs:
            return
        with self._cond:
            for group, codec, job in jobs:
                heapq.heappush(self._groups.setdefault(group, []), job)
                self._codecs[group] = codec
            self._start_workers()
            self._cond.notify_all()

    def stop(self, *, wait: bool) -> None:
        """End the workers. `wait=False` (an interrupt) returns at once; a call in progress ends on its own
        in a daemon thread and its answers are dropped."""
        with self._cond:
            self._stopped = True
            self._groups.clear()
            self._cond.notify_all()
        if wait:
            for thread in self._threads:
                thread.join()

    def idle(self) -> bool:
        """Nothing queued and nothing in a backend call: every answer this lane will give is on `out`."""
        with self._cond:
            return not self._groups and self.in_flight == 0

    def _start_workers(self) -> None:
        # Daemon threads: after Ctrl-C the process must not wait for a request still in flight.
        while len(self._threads) < self.concurrency:
            name = f"ascend-eval-{type(self.backend).__name__}-{len(self._threads)}"
            thread = threading.Thread(target=self._work, name=name, daemon=True)
            self._threads.append(thread)
            thread.start()

    def _take(self) -> tuple[Codec[Any, Any], list[Job]] | None:
        """The next call's requests, waiting for some; None once stopped."""
        with self._cond:
            while not self._stopped and not self._groups:
                self._cond.wait()
            if self._stopped:
                return None
            group = min(self._groups, key=lambda g: self._groups[g][0])
            heap = self._groups[group]
            batch = [heapq.heappop(heap) for _ in range(min(self.max_batch, len(heap)))]
            if not heap:
                del self._groups[group]
            self.in_flight += len(batch)
            return self._codecs[group], batch

    def _work(self) -> None:
        while (taken := self._take()) is not None:
            codec, batch = taken
            started = time.perf_counter()
            before = self._computed()
            try:
                results = self._call(codec, [job.request for job in batch])
            except BaseException as e:  # KeyboardInterrupt, SystemExit: the engine's thread raises it
                self._out.put(Done([job.slot for job in batch], [], 0.0, raised=e))
                return
            after = self._computed()
            computed = None if before is None or after is None else after - before
            self._store(codec, batch, results)
            done = Done([job.slot for job in batch], results, time.perf_counter() - started, computed)
            with self._cond:
                # On the queue before the count drops: a lane that reads idle has handed out every answer.
                if not self._stopped:
                    self._out.put(done)
                self.in_flight -= len(batch)
                if self._stopped:
                    return

    def _store(self, codec: Codec[Any, Any], batch: list[Job], results: list[Result | str]) -> None:
        """Commit the call's answers now, on this thread: the engine's thread may be busy for a while
        (advancing plans, writing a sample), and a kill meanwhile must not lose what has arrived."""
        if self.store is None:
            return
        answers = [
            (job.key, job.request, result)
            for job, result in zip(batch, results, strict=True)
            if job.key and not isinstance(result, str) and codec.error(result) is None
        ]
        if not answers:
            return
        try:
            self.store(answers)
        except Exception:  # the answers still reach the engine; only their caching is lost
            logger.exception("Could not store %d answers in the request cache", len(answers))

    def _computed(self) -> int | None:
        """The backend's count of computed prompt tokens so far (`computed_prompt_tokens`), read without
        loading a lazy model (0 before it loads); None where it keeps no count or calls overlap."""
        if self.concurrency != 1:
            return None
        backend = self.backend
        if isinstance(backend, LazyModel):
            if not backend.loaded:
                return 0 if _counts_computed(backend) else None
            backend = runtime_of(backend)
        value = getattr(backend, "computed_prompt_tokens", None)
        return value if isinstance(value, int) else None

    def _call(self, codec: Codec[Any, Any], requests: list[Request]) -> list[Result | str]:
        """One backend call. A failure of the whole call fails each of its requests with the message (a
        string) instead of ending the run."""
        with self.tracer.call(self.backend, codec, requests) as span:
            try:
                out = codec.call(self.backend, requests)
            except Exception as e:  # one failed call NaNs its own scores; everything else goes on
                logger.error("%s failed for %d requests: %s", type(self.backend).__name__, len(requests), e)
                span.failed(e)
                return [f"{type(e).__name__}: {e}"] * len(requests)
            if len(out) != len(requests):
                name = type(self.backend).__name__
                message = f"{name} returned {len(out)} results for {len(requests)} requests"
                span.failed(message)
                return [message] * len(requests)
            answers = list(out)
            span.answered(answers)
            return answers


def _counts_computed(model: LazyModel[Any]) -> bool:
    """Whether a lazy model's runtime will count computed prompt tokens: the in-process judges do."""
    return model.role == "judge"
