"""Tracing is optional: without opentelemetry, trace=True says what to install and trace=False just works."""

from __future__ import annotations

import subprocess
import sys

import pytest

import ascend_eval
from ascend_eval.engine import tracing
from ascend_eval.models.errors import MissingDependencyError


@pytest.fixture
def no_opentelemetry(monkeypatch):
    """`import opentelemetry` fails, as where it is not installed (a None entry blocks the import)."""
    for name in [m for m in sys.modules if m == "opentelemetry" or m.startswith("opentelemetry.")]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.setitem(sys.modules, "opentelemetry", None)


def test_trace_on_without_opentelemetry_says_what_to_install_before_any_model(no_opentelemetry):
    # An unusable judge would fail once models are built: the missing package is found first.
    with pytest.raises(MissingDependencyError, match=r"pip install 'ascend-eval\[tracing\]'"):
        ascend_eval.evaluate("bilingual-example", ["faithfulness"], judge="/no/such/model", trace=True)
    with pytest.raises(MissingDependencyError, match="tracing"):
        tracing.tracer_for("content")


def test_trace_off_works_without_opentelemetry(no_opentelemetry, rule_judge, monkeypatch):
    monkeypatch.delenv(tracing.TRACE_ENV, raising=False)
    result = ascend_eval.evaluate(
        "bilingual-example", ["faithfulness"], judge=rule_judge, cache_dir=False, progress=False, trace=False
    )
    assert len(result["faithfulness"]) == 16
    result = ascend_eval.evaluate("bilingual-example", ["faithfulness"], judge=rule_judge, cache_dir=False)
    assert len(result["faithfulness"]) == 16


def test_importing_the_library_does_not_import_opentelemetry():
    code = "import sys, ascend_eval.api, ascend_eval.cli.main; print('opentelemetry' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"
