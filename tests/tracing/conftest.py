"""Spans of the tracing tests, caught in memory.

OpenTelemetry lets a process set its global tracer provider once, so the session sets one (or adds to
the SDK provider something else set before) and each test gets the same in-memory exporter, cleared.
"""

from __future__ import annotations

import pytest


@pytest.fixture(scope="session")
def session_exporter():
    """The session's in-memory span exporter, on the global tracer provider."""
    pytest.importorskip("opentelemetry.sdk", reason="pip install 'ascend-eval[tracing]'")
    from opentelemetry import trace
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    if not isinstance(trace.get_tracer_provider(), TracerProvider):
        trace.set_tracer_provider(TracerProvider())
    provider = trace.get_tracer_provider()
    if not isinstance(provider, TracerProvider):
        pytest.skip("another kind of tracer provider was set before these tests")
    exporter = InMemorySpanExporter()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    return exporter


@pytest.fixture
def exporter(session_exporter):
    """The in-memory exporter, empty at the start of the test."""
    session_exporter.clear()
    yield session_exporter
    session_exporter.clear()
