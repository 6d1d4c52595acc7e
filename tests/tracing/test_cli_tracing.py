"""`ascend-eval evaluate --trace [content] --trace-exporter console|otlp`."""

from __future__ import annotations

import argparse
import subprocess
import sys
import textwrap

import pytest

from ascend_eval.cli.main import main
from ascend_eval.cli.tracing import OTLP_PACKAGE, add_trace_arguments, configure_tracing
from ascend_eval.engine import tracing as t
from tests.models.loopback_server import CHAT, LoopbackServer
from tests.test_api_endpoints import judge_route
from tests.tracing.spans import call_spans, run_span

pytest.importorskip("opentelemetry.sdk", reason="pip install 'ascend-eval[tracing]'")


def parse(*argv):
    parser = argparse.ArgumentParser()
    add_trace_arguments(parser)
    return parser.parse_args(argv)


def test_the_flags_become_evaluates_trace_argument(exporter):
    assert configure_tracing(parse()) is None  # ASCEND_EVAL_TRACE decides
    assert configure_tracing(parse("--trace")) is True
    assert configure_tracing(parse("--trace", "content")) == "content"
    # An exporter turns tracing on; the provider the tests configured stays in place.
    assert configure_tracing(parse("--trace-exporter", "console")) is True
    assert configure_tracing(parse("--trace", "content", "--trace-exporter", "otlp")) == "content"


def test_evaluate_with_trace_content_sends_spans_to_the_configured_provider(exporter, tmp_path):
    with LoopbackServer() as server:
        server.route(CHAT, judge_route)
        argv = ["evaluate", "bilingual-example", "--metrics", "faithfulness", "--no-cache", "-q",
                "--judge", server.url + "/v1/chat/completions", "--judge-model", "served-judge",
                "--out", str(tmp_path), "--trace", "content"]  # fmt: skip
        assert main(argv) == 0
    spans = exporter.get_finished_spans()
    assert run_span(spans).attributes[f"{t.MODEL}.judge"] == f"openai:served-judge@{server.url}/v1"
    calls = call_spans(spans)
    assert calls and all(t.INPUT_VALUE in c.attributes for c in calls)


def run_python(code, *args):
    argv = [sys.executable, "-c", textwrap.dedent(code), *args]
    return subprocess.run(argv, capture_output=True, text=True)


def test_console_exporter_prints_spans_to_stderr():
    out = run_python("""
        from ascend_eval.cli.tracing import install_provider
        from opentelemetry import trace
        assert install_provider("console")
        assert not install_provider("console")  # configured now: left as it is
        trace.get_tracer("ascend_eval").start_span("hello").end()
    """)
    assert out.returncode == 0, out.stderr
    assert '"name": "hello"' in out.stderr and '"service.name": "ascend-eval"' in out.stderr
    assert out.stdout == ""


def test_otlp_without_its_exporter_names_the_package(tmp_path):
    out = run_python(
        """
        import sys
        sys.modules["opentelemetry.exporter"] = None  # as where it is not installed
        from ascend_eval.cli.main import main
        sys.exit(main(["evaluate", "bilingual-example", "--out", sys.argv[1], "--trace-exporter", "otlp"]))
        """,
        str(tmp_path / "out"),
    )
    assert out.returncode == 2, out.stderr
    assert f"pip install {OTLP_PACKAGE}" in out.stderr
    assert not (tmp_path / "out" / "results.json").exists()
