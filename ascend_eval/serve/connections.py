"""A deadline on reading each request: uvicorn closes an idle kept-alive connection after
`timeout_keep_alive`, but a connection that sends a request slowly (a header line every few seconds, the
"slowloris" attack) or nothing at all after connecting is kept for ever, and enough of them exhaust the
server's sockets. Here a client has `seconds` to send each whole request, headers and body, from its first
byte (or from connecting); past that the connection is closed.
"""

from __future__ import annotations

import asyncio
from typing import Any

import h11
from uvicorn.protocols.http.h11_impl import H11Protocol

_READ = (h11.IDLE, h11.SEND_BODY)
"""The client's h11 states in which a request is still being read (IDLE: its headers have not all come)."""


def deadline_protocol(seconds: float) -> type[H11Protocol]:
    """uvicorn's h11 protocol with a `seconds` deadline on reading each request (see the module)."""

    class DeadlineProtocol(H11Protocol):
        def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
            super().connection_made(transport)
            self.read_deadline: asyncio.TimerHandle | None = None
            self._arm()

        def data_received(self, data: bytes) -> None:
            if self.read_deadline is None:  # the first bytes of the next request on a kept connection
                self._arm()
            super().data_received(data)
            if self.conn.their_state not in _READ:
                self._disarm()  # read whole (or the connection is done): the response is not bounded here

        def connection_lost(self, exc: Exception | None) -> None:
            self._disarm()
            super().connection_lost(exc)

        def _arm(self) -> None:
            self.read_deadline = self.loop.call_later(seconds, self._expired)

        def _disarm(self) -> None:
            if self.read_deadline is not None:
                self.read_deadline.cancel()
                self.read_deadline = None

        def _expired(self) -> None:
            self.read_deadline = None
            if self.conn.their_state in _READ and not self.transport.is_closing():
                self.transport.close()

    return DeadlineProtocol


def uvicorn_settings(read_timeout: float) -> dict[str, Any]:
    """The keyword arguments of `uvicorn.run` that bound a connection's life: the read deadline above,
    and uvicorn's own 5-second close of an idle kept-alive connection."""
    return {"http": deadline_protocol(read_timeout), "timeout_keep_alive": 5}
