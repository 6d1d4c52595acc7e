"""`ascend-eval evaluate --trace [content] --trace-exporter console|otlp`: the command line's tracing flags.

The library only asks the global tracer provider for a tracer (`ascend_eval.engine.tracing`); a command
line is an application, so it may set one up. It does so only when the user names an exporter and no
provider is configured yet (`opentelemetry-instrument ascend-eval ...` configures one from the standard
OTEL_* variables, and that one is kept).
"""

from __future__ import annotations

import argparse
import logging
import sys
from typing import Any

from ascend_eval.engine.tracing import INSTALL_HINT, TraceArg
from ascend_eval.errors import MissingDependencyError

logger = logging.getLogger("ascend_eval.cli")

EXPORTERS = ("console", "otlp")
OTLP_PACKAGE = "opentelemetry-exporter-otlp-proto-http"


def add_trace_arguments(parser: Any) -> None:
    """Add `--trace [content]` and `--trace-exporter console|otlp` to a subcommand's parser or group.

    >>> p = argparse.ArgumentParser()
    >>> add_trace_arguments(p)
    >>> p.parse_args(["--trace"]).trace, p.parse_args(["--trace", "content"]).trace
    ('on', 'content')
    >>> p.parse_args([]).trace is None
    True
    """
    parser.add_argument(
        "--trace",
        nargs="?",
        const="on",
        choices=["on", "content"],
        help="OpenTelemetry spans of the run, stages and backend calls (pip install 'ascend-eval[tracing]'); "
        "'content' also records prompts and outputs. Default: the ASCEND_EVAL_TRACE variable",
    )
    parser.add_argument(
        "--trace-exporter",
        choices=EXPORTERS,
        help="where spans go when no tracer provider is configured (implies --trace): console (stderr) or "
        f"otlp (OTEL_EXPORTER_OTLP_ENDPOINT, e.g. Phoenix or Langfuse; needs {OTLP_PACKAGE})",
    )


def configure_tracing(args: argparse.Namespace) -> TraceArg:
    """The `trace` argument of `evaluate()` for these flags, after setting up a tracer provider with the
    chosen exporter where none is configured. None leaves it to ASCEND_EVAL_TRACE.

    Raises:
        MissingDependencyError: an exporter is asked for and the SDK, or the OTLP exporter, is missing.
    """
    trace: TraceArg = {None: None, "on": True, "content": "content"}[getattr(args, "trace", None)]
    exporter = getattr(args, "trace_exporter", None)
    if exporter is None:
        if trace and not provider_configured():
            logger.warning(
                "--trace is on but no tracer provider is configured, so spans go nowhere: add "
                "--trace-exporter console|otlp, or run under opentelemetry-instrument"
            )
        return trace
    if trace is None:
        trace = True
    install_provider(exporter)
    return trace


def provider_configured() -> bool:
    """Whether a global tracer provider is set (False too where opentelemetry is not installed)."""
    try:
        from opentelemetry import trace
    except ImportError:
        return False
    return not isinstance(trace.get_tracer_provider(), trace.ProxyTracerProvider)


def install_provider(exporter: str) -> bool:
    """Set the global tracer provider to an SDK one exporting to `exporter` ("console" or "otlp"), unless
    one is configured already. Returns whether it set one.

    Raises:
        MissingDependencyError: the SDK or the OTLP exporter is not installed.
        ValueError: `exporter` is neither "console" nor "otlp".
    """
    if exporter not in EXPORTERS:
        raise ValueError(f"exporter {exporter!r}; valid: {', '.join(EXPORTERS)}")
    try:
        from opentelemetry import trace
        from opentelemetry.sdk.resources import Resource
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import (
            BatchSpanProcessor,
            ConsoleSpanExporter,
            SimpleSpanProcessor,
        )
    except ImportError as e:
        raise MissingDependencyError(
            f"--trace-exporter {exporter} needs the OpenTelemetry SDK: {INSTALL_HINT}"
        ) from e
    if provider_configured():
        logger.info("a tracer provider is configured already; --trace-exporter %s is not installed", exporter)
        return False
    processor: Any
    if exporter == "console":
        processor = SimpleSpanProcessor(ConsoleSpanExporter(out=sys.stderr))
    else:
        try:
            from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
        except ImportError as e:
            raise MissingDependencyError(
                f"--trace-exporter otlp needs {OTLP_PACKAGE}: pip install {OTLP_PACKAGE}"
            ) from e
        # Endpoint, headers (Langfuse's Authorization) and timeout: the standard OTEL_EXPORTER_OTLP_*.
        processor = BatchSpanProcessor(OTLPSpanExporter())
    resource = Resource.create()  # OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES, if set
    if str(resource.attributes.get("service.name", "")).startswith("unknown_service"):
        resource = resource.merge(Resource({"service.name": "ascend-eval"}))
    provider = TracerProvider(resource=resource)  # flushes at exit (shutdown_on_exit)
    provider.add_span_processor(processor)
    trace.set_tracer_provider(provider)
    return True
