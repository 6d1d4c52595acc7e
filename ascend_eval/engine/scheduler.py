"""The engine: the only code that calls models.

Metrics are plans: generators that yield lists of typed requests and receive the results. Each round the
engine advances every live plan (every sample x every metric), drops duplicate requests, answers what it
can from the cache, and sends the rest to the backends as one batch per (role, model, params). A 1,000-sample,
12-metric run is a handful of large batches per round instead of tens of thousands of single calls.
"""

from __future__ import annotations

import logging
import time
from collections import defaultdict
from collections.abc import Callable, Generator, Hashable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ascend_eval.engine.cache import RequestCache, request_key
from ascend_eval.engine.codecs import Codec, Result, codec_for
from ascend_eval.models.base import Embedder, Judge, Request, Reranker, Role
from ascend_eval.models.errors import BACKEND_ERROR, ConfigError
from ascend_eval.models.lazy import is_loaded, runtime_of

logger = logging.getLogger("ascend_eval.engine")

Plan = Generator[Sequence[Request], list[Any], Any]
PlanId = Hashable


@dataclass(frozen=True)
class PlanError:
    """A plan that could not finish: a backend failed for one of its requests, or the plan raised."""

    reason: str


@dataclass(frozen=True)
class Backends:
    """The model runtimes one evaluation uses; a role no metric needs may be None."""

    judge: Judge | None = None
    embedder: Embedder | None = None
    reranker: Reranker | None = None

    def for_request(self, request: Request) -> Judge | Embedder | Reranker:
        backend = getattr(self, request.role)
        if backend is None:
            raise ConfigError(
                f"A metric sent a {type(request).__name__} but no {request.role} is configured. "
                f"Pass {request.role}=... to evaluate()."
            )
        return backend


@dataclass
class RoundStats:
    """What one round did. `requests` counts what the plans asked for; `sent` what reached a backend."""

    round: int
    live_plans: int
    requests: int = 0
    unique: int = 0
    cache_hits: int = 0
    sent: int = 0
    failed: int = 0
    tokens_in: int = 0
    tokens_out: int = 0
    seconds: float = 0.0
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


class Engine:
    """Runs plans to completion, batching their requests round by round.

    Args:
        backends: the model runtimes.
        cache: answered requests by content hash; `RequestCache(None)` disables it.
        chunk_size: at most this many requests per backend call. Each returned chunk is committed to the
            cache at once, so a killed run loses at most one chunk of work.
        dedupe: send identical requests once (turned off only to measure what deduplication saves).
        progress: show a progress bar over plans.
        on_round: called with each round's stats (benchmarks and the CLI use it).
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
    ) -> None:
        if chunk_size < 1:
            raise ConfigError(f"chunk_size must be >= 1, got {chunk_size}.")
        self.backends = backends
        self.cache = cache if cache is not None else RequestCache(None)
        self.chunk_size = chunk_size
        self.dedupe = dedupe
        self.progress = progress
        self.on_round = on_round
        self.rounds: list[RoundStats] = []
        self.prompt_tags: set[str] = set()
        """Every prompt `name@version` the plans used (cached or not), for provenance."""

    def run(self, plans: Mapping[PlanId, Plan]) -> dict[PlanId, Any]:
        """Advance every plan until it returns. Returns each plan's return value, or a `PlanError`."""
        from tqdm.auto import tqdm

        outcomes: dict[PlanId, Any] = {}
        waiting: dict[PlanId, Sequence[Request]] = {}
        # disable=None lets tqdm switch itself off when stderr is not a terminal (logs, CI, pipes).
        bar = tqdm(
            total=len(plans),
            desc="evaluating",
            unit="score",
            disable=None if self.progress else True,
            leave=False,
        )
        try:
            for pid, plan in plans.items():
                self._advance(pid, plan, None, waiting, outcomes)
            bar.update(len(outcomes))
            while waiting:
                done_before = len(outcomes)
                self._round(plans, waiting, outcomes)
                bar.update(len(outcomes) - done_before)
                bar.set_postfix(round=len(self.rounds))
        finally:
            bar.close()
        return outcomes

    def _advance(
        self,
        pid: PlanId,
        plan: Plan,
        answers: list[Any] | None,
        waiting: dict[PlanId, Sequence[Request]],
        outcomes: dict[PlanId, Any],
    ) -> None:
        """Send `answers` (None to start) and park the plan on its next requests, or record its outcome."""
        try:
            requests = next(plan) if answers is None else plan.send(answers)
            while not requests:  # a plan that asks for nothing this step just continues
                requests = plan.send([])
        except StopIteration as stop:
            outcomes[pid] = stop.value
            return
        except Exception as e:  # a bug in one metric's plan must not lose the other scores
            logger.exception("plan %r raised", pid)
            outcomes[pid] = PlanError(f"plan_error: {type(e).__name__}: {e}")
            return
        waiting[pid] = list(requests)

    def _round(
        self,
        plans: Mapping[PlanId, Plan],
        waiting: dict[PlanId, Sequence[Request]],
        outcomes: dict[PlanId, Any],
    ) -> None:
        t0 = time.perf_counter()
        stats = RoundStats(round=len(self.rounds) + 1, live_plans=len(waiting))
        # A slot is one request to answer: its content key, or with dedupe off one slot per occurrence
        # (the cache is still looked up and written by content key).
        keys: dict[PlanId, list[str]] = {}
        unique: dict[str, Request] = {}
        content: dict[str, str] = {}
        for pid, requests in waiting.items():
            plan_keys = []
            for request in requests:
                key = request_key(request, self.backends.for_request(request).model_id)
                slot = key if self.dedupe else f"{key}#{len(content)}"
                content[slot] = key
                unique.setdefault(slot, request)
                if getattr(request, "tag", ""):
                    self.prompt_tags.add(request.tag)  # type: ignore[union-attr]
                plan_keys.append(slot)
            keys[pid] = plan_keys
        stats.requests = sum(len(k) for k in keys.values())
        stats.unique = len(unique)

        hits = self.cache.get_many([(content[slot], r) for slot, r in unique.items()])
        answers: dict[str, Result] = {slot: hits[content[slot]] for slot in unique if content[slot] in hits}
        stats.cache_hits = len(answers)
        failures: dict[str, str] = {}

        # Requests of different prompts may share one batch (e.g. both NV judges ask for "0"/"2"/"4"), so
        # the stats count sent requests per prompt, not per batch.
        groups: dict[Hashable, list[str]] = defaultdict(list)
        codecs: dict[Hashable, Codec[Any, Any]] = {}
        for key, request in unique.items():
            if key not in answers:
                codec = codec_for(request)
                group, label = codec.group(request)
                groups[group].append(key)
                codecs[group] = codec  # a group key starts with its kind: one codec per group
                stats.batches[label] = stats.batches.get(label, 0) + 1
        for group, group_keys in groups.items():
            codec = codecs[group]
            for start in range(0, len(group_keys), self.chunk_size):
                chunk = group_keys[start : start + self.chunk_size]
                results = self._call(codec, [unique[k] for k in chunk])
                stored = []
                for key, result in zip(chunk, results, strict=True):
                    error = result if isinstance(result, str) else codec.error(result)
                    if error is not None:
                        failures[key] = error
                        continue
                    answers[key] = result
                    stored.append((content[key], unique[key], result))
                    t_in, t_out = codec.tokens(result)
                    stats.tokens_in += t_in
                    stats.tokens_out += t_out
                self.cache.put_many(stored)
            stats.sent += len(group_keys)
        stats.failed = len(failures)

        waiting.clear()
        for pid, plan_keys in keys.items():
            failed = next((failures[k] for k in plan_keys if k in failures), None)
            if failed is not None:
                plans[pid].close()
                outcomes[pid] = PlanError(f"{BACKEND_ERROR}: {failed}")
                continue
            self._advance(pid, plans[pid], [answers[k] for k in plan_keys], waiting, outcomes)
        stats.seconds = time.perf_counter() - t0
        self.rounds.append(stats)
        logger.info(stats.line())
        if self.on_round is not None:
            self.on_round(stats)

    def _call(self, codec: Codec[Any, Any], requests: list[Request]) -> list[Result | str]:
        """One backend call for requests of one group. A failure of the whole call fails each request
        with its message (a string) instead of ending the run."""
        backend = self.backends.for_request(requests[0])
        try:
            out = codec.call(backend, requests)
        except Exception as e:  # one failed batch NaNs its own scores; everything else goes on
            logger.error("%s failed for %d requests: %s", type(backend).__name__, len(requests), e)
            return [f"{type(e).__name__}: {e}"] * len(requests)
        if len(out) != len(requests):
            message = f"{type(backend).__name__} returned {len(out)} results for {len(requests)} requests"
            return [message] * len(requests)
        return out

    # The configured models by role, for code that needs more than requests answered (the RAG pipeline).

    def has(self, role: Role) -> bool:
        """Whether a model is configured for `role`."""
        return getattr(self.backends, role) is not None

    def model_id(self, role: Role) -> str:
        """The identity of `role`'s model (part of its requests' cache keys), known without loading it."""
        return self._configured(role).model_id

    def loaded(self, role: Role) -> bool:
        """Whether `role`'s model is ready without loading weights (false only for an unloaded local one)."""
        return is_loaded(self._configured(role))

    def runtime(self, role: Role) -> Any:
        """`role`'s model runtime itself, loaded now if it is a local model not loaded yet: for what only a
        runtime can tell, such as a local embedder's tokenizer. Requests still go through `run`."""
        return runtime_of(self._configured(role))

    def _configured(self, role: Role) -> Judge | Embedder | Reranker:
        model = getattr(self.backends, role)
        if model is None:
            raise ConfigError(f"No {role} is configured for this engine. Pass {role}=... to evaluate().")
        return model  # type: ignore[no-any-return]
