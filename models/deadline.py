"""A deadline for each attempt of an HTTP request: connecting, sending, and reading the status line, the
headers and the whole body, together.

httpx's timeouts are per operation: a server that sends one byte every half second never lets a read wait
its timeout, and so would hold a request for as long as it kept trickling. `attempt_deadline` sets the
time by which the requests made on this thread inside it must be done; a transport made to
`keep_to_deadlines` gives each connect, read and write only the time left, and past it fails the next one
with httpcore's timeout, which ends the attempt as any timeout does (httpx raises it as its own).
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import httpcore
    import httpx

__all__ = ["attempt_deadline", "keep_to_deadlines"]

_DEADLINE = threading.local()
"""`at`: the monotonic time the attempt on this thread must be over by (None: no attempt is going on)."""


@contextlib.contextmanager
def attempt_deadline(seconds: float) -> Iterator[None]:
    """Bound everything the requests made on this thread inside the block do on the network, through a
    transport that `keep_to_deadlines`, to `seconds` in all: connecting, sending, and every read of the
    status line, headers and body."""
    previous = getattr(_DEADLINE, "at", None)
    _DEADLINE.at = time.monotonic() + seconds
    try:
        yield
    finally:
        _DEADLINE.at = previous


def _time_left(timeout: float | None, error: type[Exception]) -> float | None:
    """`timeout` shortened to the time left before this thread's attempt deadline; `error` past it."""
    deadline = getattr(_DEADLINE, "at", None)
    if deadline is None:
        return timeout
    left = deadline - time.monotonic()
    if left <= 0:
        raise error("the attempt took longer than request_timeout")
    return left if timeout is None else min(timeout, left)


def _deadline_backend() -> Any:
    """httpcore's blocking network backend, with each connect, read and write bounded by the thread's
    attempt deadline (`attempt_deadline`)."""
    import httpcore

    class DeadlineStream(httpcore.NetworkStream):
        def __init__(self, stream: httpcore.NetworkStream) -> None:
            self._stream = stream

        def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
            return self._stream.read(max_bytes, _time_left(timeout, httpcore.ReadTimeout))

        def write(self, buffer: bytes, timeout: float | None = None) -> None:
            self._stream.write(buffer, _time_left(timeout, httpcore.WriteTimeout))

        def close(self) -> None:
            self._stream.close()

        def start_tls(
            self, ssl_context: Any, server_hostname: str | None = None, timeout: float | None = None
        ) -> httpcore.NetworkStream:
            left = _time_left(timeout, httpcore.ConnectTimeout)
            return DeadlineStream(self._stream.start_tls(ssl_context, server_hostname, left))

        def get_extra_info(self, info: str) -> Any:
            return self._stream.get_extra_info(info)

    class DeadlineBackend(httpcore.NetworkBackend):
        def __init__(self) -> None:
            self._backend = httpcore.SyncBackend()

        def connect_tcp(
            self, host: str, port: int, timeout: float | None = None, **options: Any
        ) -> httpcore.NetworkStream:
            left = _time_left(timeout, httpcore.ConnectTimeout)
            return DeadlineStream(self._backend.connect_tcp(host, port, left, **options))

        def connect_unix_socket(
            self, path: str, timeout: float | None = None, **options: Any
        ) -> httpcore.NetworkStream:
            left = _time_left(timeout, httpcore.ConnectTimeout)
            return DeadlineStream(self._backend.connect_unix_socket(path, left, **options))

        def sleep(self, seconds: float) -> None:
            self._backend.sleep(seconds)

    return DeadlineBackend()


def keep_to_deadlines(transport: httpx.HTTPTransport) -> httpx.HTTPTransport:
    """`transport`, its connections keeping to the attempt deadline of the thread that uses them.

    httpx builds its httpcore connection pool without a way to pass httpcore's public `network_backend`
    argument, so it is set on the pool; should a later httpx keep its pool elsewhere, this fails here
    rather than leave requests without a deadline (tests/faults/test_bounds_findings.py's trickling judge
    checks that it works).
    """
    import httpx

    pool = getattr(transport, "_pool", None)
    if not hasattr(pool, "_network_backend"):
        raise RuntimeError(f"httpx {httpx.__version__} has no connection pool where ascend-eval expects one")
    pool._network_backend = _deadline_backend()  # type: ignore[union-attr]  # noqa: SLF001
    return transport
