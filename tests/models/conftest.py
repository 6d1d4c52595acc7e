"""Fixtures for the HTTP backend tests: a fresh loopback OpenAI-compatible server per test."""

from collections.abc import Iterator

import pytest

from tests.models.loopback_server import LoopbackServer


@pytest.fixture
def loopback() -> Iterator[LoopbackServer]:
    """A running `LoopbackServer` on 127.0.0.1 with nothing scripted; closed after the test."""
    with LoopbackServer() as server:
        yield server
