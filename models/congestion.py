"""How many requests one client keeps in flight at a server: as many as it may, fewer while it is pushed back.

A judge server (vLLM, MindIE, NIM) keeps its accelerator busy only with many requests at once, so a client
starts at its full `parallelism`. When the server answers 429 or 503 (too many requests, overloaded), the
limit halves; each run of successes as long as the limit adds one back (additive increase, multiplicative
decrease, as TCP does). Threads wait at the gate, not at the server.
"""

from __future__ import annotations

import threading


class CongestionGate:
    """A counting gate whose limit moves between 1 and `ceiling`.

    >>> gate = CongestionGate(8)
    >>> gate.pushed_back(); gate.limit
    4
    >>> for _ in range(4): gate.succeeded()
    >>> gate.limit
    5
    """

    def __init__(self, ceiling: int) -> None:
        if ceiling < 1:
            raise ValueError(f"ceiling must be >= 1, got {ceiling}")
        self.ceiling = ceiling
        self.limit = ceiling
        """Requests allowed in flight now."""
        self.active = 0
        self._successes = 0
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

    def succeeded(self) -> None:
        """One answer came back: after `limit` of them in a row, allow one more in flight."""
        with self._cond:
            if self.limit >= self.ceiling:
                return
            self._successes += 1
            if self._successes >= self.limit:
                self._successes = 0
                self.limit += 1
                self._cond.notify()
