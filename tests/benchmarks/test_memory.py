"""Smoke runs of the memory benchmark (a few samples), so that it cannot rot: `evaluate()` streamed into a
folder, and a job whose judge is the HTTP rule server (`benchmarks.rule_server`, its own process)."""

from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path

import pytest

from benchmarks.rule_server import answer

REPO = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize(("flags", "name"), [([], "memory"), (["--job"], "memory-job")])
def test_smoke(tmp_path, flags, name):
    run = subprocess.run(
        [sys.executable, "-m", "benchmarks.memory", "--samples", "30", "--out", str(tmp_path), *flags],
        capture_output=True, text=True, timeout=300, cwd=REPO,
    )  # fmt: skip
    assert run.returncode == 0, run.stderr[-2000:]
    [row] = json.loads((tmp_path / f"{name}.json").read_text())["rows"]
    assert row["samples"] == 30 and set(row["scores"].values()) == {30}
    assert row["peak_rss_mib"] > row["rss_before_mib"] > 0
    assert all(mean is not None and 0 <= mean <= 1 for mean in row["means"].values())


def test_the_rule_server_answers_statements_and_verdicts():
    prompt = 'Extract the statements.\n\nInput: {"question": "q", "answer": "One. Two!"}\n'
    reply = answer({"messages": [{"role": "user", "content": prompt}]})
    assert json.loads(reply["choices"][0]["message"]["content"]) == {"statements": ["One.", "Two!"]}
    prompt = 'Judge it.\n\nInput: {"context": "Paris is big", "statement": "Paris is big."}\n'
    top = answer({"messages": [{"role": "user", "content": prompt}], "logprobs": True})
    entries = top["choices"][0]["logprobs"]["content"][0]["top_logprobs"]
    assert entries[0]["token"] == "1" and math.isclose(sum(math.exp(e["logprob"]) for e in entries), 1)
