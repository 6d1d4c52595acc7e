"""A judge server that misbehaves on chosen samples, driven through `evaluate()`, a job and the CLI.

Each fault must give NaN with its reason for the affected sample only (or, for a transient one, the
clean score after a bounded number of retries); every other score must equal a clean run's against the
same server; and the API key must appear in no file the run wrote, nor in its output or log records.
"""

from __future__ import annotations

import copy
import json
import logging
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

import ascend_eval
from ascend_eval.models.http import EndpointConfig
from ascend_eval.models.judge.openai import OpenAIJudge
from tests.conftest import SUPPORT_RULE_NO, SUPPORT_RULE_YES
from tests.faults.faulty_judge import CASES, KEY, KEY_ENV, FaultyJudge, dataset, fault_of
from tests.jobs.conftest import nemo_spec
from tests.models.loopback_server import LoopbackServer

METRIC = "faithfulness"
TIMEOUT = 1.0  # seconds per attempt where the run can set it (evaluate(), a job): the hang costs little
RETRIES = 2


def key_runs(text: str | bytes, run: int = 6) -> list[str]:
    """The runs of `run` characters of the key in `text` (the whole key, or any part of it)."""
    data = text.encode() if isinstance(text, str) else text
    return sorted({KEY[i : i + run] for i in range(len(KEY) - run + 1) if KEY[i : i + run].encode() in data})


def files_leaking_the_key(*roots: Path, skip: Path | None = None) -> dict[str, list[str]]:
    found = {}
    for root in roots:
        for path in root.rglob("*"):
            if not path.is_file() or (skip is not None and skip in path.parents):
                continue
            if runs := key_runs(path.read_bytes()):
                found[str(path)] = runs
    return found


@pytest.fixture(scope="module")
def judge():
    with LoopbackServer() as server:
        yield FaultyJudge(server)


@pytest.fixture(scope="module")
def clean_rows(judge) -> list[dict[str, Any]]:
    """Every sample scored with no fault, against the same server."""
    judge.reset(faults=False)
    result = ascend_eval.evaluate(dataset(), [METRIC], judge=judge.url, cache_dir=False, progress=False)
    rows = result.rows()
    assert all(r[METRIC] is not None for r in rows), "the clean run must score every sample"
    # none, half and all of a sample's statements supported, read through the default calibration
    expected = (SUPPORT_RULE_NO, 0.5, SUPPORT_RULE_YES)
    assert {round(r[METRIC], 9) for r in rows} == {round(x, 9) for x in expected}
    return rows


def check_run(
    judge: FaultyJudge, rows: list[dict[str, Any]], clean: list[dict[str, Any]], retries: int
) -> None:
    """Each fault NaNs its sample alone (or recovers), everything else is the clean score, and the
    attempts per request are what the retry policy allows."""
    assert len(rows) == len(clean) == CASES
    wrong = []
    for case, (row, base) in enumerate(zip(rows, clean, strict=True)):
        fault = fault_of(case)
        skipped = fault is not None and fault.kind in judge.skip
        if fault is None or fault.reason is None or skipped:
            if (row[METRIC], row[f"{METRIC}_reason"]) != (base[METRIC], None):
                wrong.append((case, fault, row[METRIC], row[f"{METRIC}_reason"], base[METRIC]))
        elif row[METRIC] is not None or fault.reason not in (row[f"{METRIC}_reason"] or ""):
            wrong.append((case, fault, row[METRIC], row[f"{METRIC}_reason"]))
    assert wrong == [], "\n".join(map(repr, wrong))

    for case in range(CASES):
        fault = fault_of(case)
        if fault is None or fault.kind in judge.skip:
            continue
        seen = judge.attempts[case, fault.phase]
        if fault.retried:
            # The client counts its attempts; the server sees only those that reached it (one that
            # failed at connect, or on a pooled connection the server had just closed, never does).
            reason = rows[case][f"{METRIC}_reason"] or ""
            assert f"failed after {retries + 1} attempt(s)" in reason, (fault, reason)
            assert 1 <= seen <= retries + 1, (fault, seen)
            continue
        expected = {"rate_limited_twice": 3, "closed_mid_body_once": 2}.get(fault.kind, 1)
        assert seen == expected, (fault, seen)
    first, second, third = judge.times[3, "statements"]
    assert second - first >= 0.19 and third - second >= 0.19  # Retry-After: 0.2 was honoured


def check_no_key(judge: FaultyJudge, *texts: str) -> None:
    assert {r.headers.get("authorization") for r in judge.server.requests[-10:]} == {f"Bearer {KEY}"}
    for text in texts:
        assert key_runs(text) == []


def test_evaluate_with_a_misbehaving_judge(judge, clean_rows, tmp_path, monkeypatch, caplog, capfd):
    caplog.set_level(logging.INFO)
    monkeypatch.setenv(KEY_ENV, KEY)
    judge.reset(faults=True)
    config = EndpointConfig(
        url=judge.url,
        model="loopback-judge",
        api_key_env=KEY_ENV,
        request_timeout=TIMEOUT,
        max_retries=RETRIES,
        backoff_base=0.01,
        backoff_max=0.5,
    )
    with OpenAIJudge(config) as endpoint:
        result = ascend_eval.evaluate(
            dataset(), [METRIC], judge=endpoint, cache_dir=tmp_path / "cache", progress=False
        )
    result.save(tmp_path / "out")
    check_run(judge, result.rows(), clean_rows, RETRIES)
    assert sum(result.nan_reasons(METRIC).values()) == sum(
        1 for c in range(CASES) if (f := fault_of(c)) and f.reason
    )

    out, err = capfd.readouterr()
    check_no_key(judge, out, err, caplog.text, json.dumps([r.getMessage() for r in caplog.records]))
    assert "retry 1 of 2" in caplog.text  # the retries were logged, scrubbed
    assert files_leaking_the_key(tmp_path) == {}

    # A re-run answers every request that was answered from the cache, and sends only the failed ones
    # again. A reply that came back but did not parse is an answer: it stays (temperature 0 would give
    # the same text again).
    judge.reset(faults=False)
    with OpenAIJudge(config) as endpoint:
        again = ascend_eval.evaluate(
            dataset(), [METRIC], judge=endpoint, cache_dir=tmp_path / "cache", progress=False
        )
    unparsed = {c for c in range(CASES) if (f := fault_of(c)) and f.kind == "key_in_reply"}
    assert [r for r in again.rows() if int(r["id"]) not in unparsed] == [
        r for r in clean_rows if int(r["id"]) not in unparsed
    ]
    failed = {
        (c, f.phase) for c in range(CASES) if (f := fault_of(c)) and f.reason and f.kind != "key_in_reply"
    }
    assert set(judge.attempts) == failed | {(c, "verdict") for c, _ in failed}
    assert set(judge.attempts.values()) == {1}


def test_a_job_with_a_misbehaving_judge(judge, clean_rows, tmp_path, caplog, capfd):
    from ascend_eval.jobs import Jobs, SecretStore

    secrets = SecretStore(tmp_path / "secrets")
    secrets.set("judge-api-key", KEY, endpoints=[judge.url])
    spec = copy.deepcopy(nemo_spec("inline"))
    spec["dataset"] = {"rows": [dataset()]}
    spec["metric_params"]["judge_llm"] = {
        "model": {
            "url": judge.url + "/chat/completions",
            "name": "loopback-judge",
            "api_key_secret": "judge-api-key",
        },
        "request_timeout": TIMEOUT,
        "max_retries": RETRIES,
        "parallelism": 8,
    }
    judge.reset(faults=True)
    job = Jobs(tmp_path / "jobs", secrets=secrets).create(spec, job_id="faults").run()
    check_run(judge, job.results()["rows"], clean_rows, RETRIES)

    out, err = capfd.readouterr()
    check_no_key(judge, out, err, caplog.text)
    assert "HTTP 500" in (job.directory / "job.log").read_text()
    assert files_leaking_the_key(tmp_path, skip=secrets.directory) == {}


def test_the_cli_with_a_misbehaving_judge(judge, clean_rows, tmp_path):
    (tmp_path / "data.json").write_text(json.dumps(dataset()), encoding="utf-8")
    # The command line has no timeout flag (60 s per attempt): the hang is left out of this run.
    judge.reset(faults=True, skip=frozenset({"hang"}))
    command = [
        *(sys.executable, "-m", "ascend_eval", "evaluate", str(tmp_path / "data.json")),
        *("--metrics", METRIC, "--judge", judge.url, "--judge-model", "loopback-judge"),
        *("--api-key-env", KEY_ENV, "--out", str(tmp_path / "out"), "--cache-dir", str(tmp_path / "cache")),
        # Many samples here fail on purpose: allow any share of backend errors (the default, 0.1,
        # would exit 3, as it should for a real run this broken).
        *("--max-backend-errors", "1"),
    ]
    done = subprocess.run(
        command, capture_output=True, text=True, timeout=120, env={**os.environ, KEY_ENV: KEY}
    )
    assert done.returncode == 0, done.stderr
    rows = json.loads((tmp_path / "out" / "results.json").read_text(encoding="utf-8"))["samples"]
    check_run(judge, rows, clean_rows, retries=3)
    check_no_key(judge, done.stdout, done.stderr)
    assert f"{METRIC}: NaN for" in done.stdout
    assert files_leaking_the_key(tmp_path) == {}
