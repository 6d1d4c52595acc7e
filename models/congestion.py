"""How many requests one client keeps in flight at a server: as many as it may, fewer while it is pushed back.

A judge server (vLLM, MindIE, NIM) keeps its accelerator busy only with many requests at once, so a client
starts at its full `parallelism`. Two signals say it is sending more than the server keeps up with:

* **Refusals.** A 429 or 503 (too many requests, overloaded) halves the limit.
* **Latency.** An answer that took more than `slow_after` seconds (the client sets half its request
  timeout), or an attempt that timed out, cuts the limit by a quarter, at most once per `limit` answers.
  A server that queues requests answers ever later as more arrive; past the timeout each one is sent again,
  which adds load just when it hurts. One hung request among many quick ones costs a quarter once, not a
  halving per attempt.

Each run of quick successes as long as the limit adds one back (additive increase, multiplicative decrease,
as TCP does). Threads wait at the gate, not at the server.
"""

from __future__ import annotations

import email.utils
import math
import threading
from datetime import datetime, timezone


class CongestionGate:
    """A counting gate whose limit moves between 1 and `ceiling`.

    >>> gate = CongestionGate(8, slow_after=30.0)
    >>> gate.pushed_back(); gate.limit
    4
    >>> for _ in range(4): gate.succeeded(seconds=1.0)
    >>> gate.limit
    5
    >>> gate.succeeded(seconds=45.0); gate.limit  # slow: a quarter off
    4
    >>> gate.succeeded(seconds=45.0); gate.limit  # again, within `limit` answers of the cut: held
    4
    """

    def __init__(self, ceiling: int, *, slow_after: float | None = None) -> None:
        if ceiling < 1:
            raise ValueError(f"ceiling must be >= 1, got {ceiling}")
        if slow_after is not None and not slow_after > 0:
            raise ValueError(f"slow_after must be > 0 seconds or None, got {slow_after}")
        self.ceiling = ceiling
        self.limit = ceiling
        """Requests allowed in flight now."""
        self.slow_after = slow_after
        """Seconds after which an answer counts as slow (None: latency is not watched)."""
        self.active = 0
        self._successes = 0
        self._since_cut = ceiling  # answers since the last latency cut; the first slow answer cuts at once
        self._cond = threading.Condition()

    def __enter__(self) -> CongestionGate:
        with self._cond:
            while self.active >= self.limit:
                self._cond.wait()
            self.active += 1
        return self

    def __exit__(self, *exc: object) -> None:
        with self._cond:
            self.active -= 1
            self._cond.notify()

    def pushed_back(self) -> None:
        """The server said it is overloaded: halve the limit (requests already in flight go on)."""
        with self._cond:
            self.limit = max(1, self.limit // 2)
            self._successes = 0

    def slow(self) -> None:
        """An attempt timed out, or an answer came late: a quarter off the limit, once per `limit` answers."""
        with self._cond:
            self._successes = 0
            if self._since_cut < self.limit:
                self._since_cut += 1
                return
            self.limit = max(1, self.limit - max(1, self.limit // 4))
            self._since_cut = 1

    def succeeded(self, seconds: float | None = None) -> None:
        """One answer came back, after `seconds` at the server: a slow one counts as `slow()`; after
        `limit` quick ones in a row, one more request may be in flight."""
        if self.slow_after is not None and seconds is not None and seconds > self.slow_after:
            self.slow()
            return
        with self._cond:
            self._since_cut += 1
            if self.limit >= self.ceiling:
                return
            self._successes += 1
            if self._successes >= self.limit:
                self._successes = 0
                self.limit += 1
                self._cond.notify()


def retry_after_seconds(value: str | None, cap: float) -> float | None:
    """The wait a Retry-After header asks for (seconds or an HTTP date), capped at `cap`; None if absent.

    >>> retry_after_seconds("2", cap=20.0), retry_after_seconds("90", cap=20.0)
    (2.0, 20.0)
    >>> retry_after_seconds(None, cap=20.0) is None
    True
    """
    if value is None:
        return None
    try:
        seconds = float(value)
    except ValueError:
        try:
            when = email.utils.parsedate_to_datetime(value)
        except (TypeError, ValueError):
            return None
        if when.tzinfo is None:
            when = when.replace(tzinfo=timezone.utc)
        seconds = (when - datetime.now(timezone.utc)).total_seconds()
    if math.isnan(seconds):
        return None
    return min(max(seconds, 0.0), cap)
