"""`ascend-eval job ...`: run (foreground, detached, resume), status, results, list, cancel."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

from ascend_eval.cli.main import main
from tests.conftest import CALIBRATION_REQUESTS
from tests.jobs.conftest import inline_spec_for, nemo_spec


def _spec_file(tmp_path, spec, name="job.json"):
    path = tmp_path / name
    path.write_text(json.dumps(spec), encoding="utf-8")
    return str(path)


def test_run_status_results_list(tmp_path, judge_server, capsys):
    root = ["job", "--jobs-dir", str(tmp_path / "jobs")]
    spec = _spec_file(tmp_path, inline_spec_for(judge_server.url, secret=None))
    assert main([*root, "run", spec, "--id", "cli-job", "--name", "from the CLI"]) == 0
    out = capsys.readouterr().out
    assert out.splitlines()[0].split() == ["metric", "count", "mean", "95%", "CI", "min", "max", "nan"]
    assert "job cli-job completed" in out

    assert main([*root, "status", "cli-job"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("cli-job: completed") and "name: from the CLI" in out and "scores_done=2" in out
    assert main([*root, "status", "cli-job", "--json"]) == 0
    # 2 statement lists, 2 verdicts and the verdict prompt's calibration requests
    assert json.loads(capsys.readouterr().out)["progress"]["sent"] == 4 + CALIBRATION_REQUESTS

    assert main([*root, "results", "cli-job", "--json"]) == 0
    results = json.loads(capsys.readouterr().out)
    assert results["aggregate_scores"][0]["name"] == "faithfulness" and len(results["rows"]) == 2
    assert main([*root, "results", "cli-job"]) == 0
    assert "faithfulness" in capsys.readouterr().out

    assert main([*root, "list"]) == 0
    [line] = capsys.readouterr().out.splitlines()
    assert line.split()[:2] == ["cli-job", "completed"] and line.endswith("from the CLI")

    # resume a finished job: every request comes from its cache
    sent = len(judge_server.server.requests)
    assert main([*root, "run", "--resume", "cli-job"]) == 0
    assert len(judge_server.server.requests) == sent


def test_errors_are_one_line_and_exit_2(tmp_path, capsys):
    root = ["job", "--jobs-dir", str(tmp_path / "jobs")]
    spec = nemo_spec("inline")
    spec["metric_params"]["judge_llm"]["paralelism"] = 2
    assert main([*root, "run", _spec_file(tmp_path, spec)]) == 2
    assert "Did you mean 'parallelism'" in capsys.readouterr().err
    assert main([*root, "status", "nope"]) == 2
    assert "No job 'nope'" in capsys.readouterr().err
    assert main([*root, "run"]) == 2
    assert "needs a SPEC" in capsys.readouterr().err
    # the seed's spec as written: parsed, then a clear error when run (no such built-in, no secret)
    assert main([*root, "run", _spec_file(tmp_path, nemo_spec("basic"), "basic.json"), "--id", "b"]) == 2
    assert "'ragas/amnesty_qa' is not a built-in dataset" in capsys.readouterr().err
    assert main([*root, "status", "b"]) == 0
    assert "failed" in capsys.readouterr().out
    assert main([*root, "results", "b"]) == 2


def test_detach_then_cancel_from_another_process(tmp_path, judge_server):
    judge_server.hold_classify.set()
    jobs_dir = str(tmp_path / "jobs")
    spec = _spec_file(tmp_path, inline_spec_for(judge_server.url, secret=None))
    cli = [sys.executable, "-m", "ascend_eval", "job", "--jobs-dir", jobs_dir]
    started = subprocess.run(
        [*cli, "run", spec, "--id", "bg", "--detach"], capture_output=True, text=True, timeout=60
    )
    assert started.returncode == 0 and "job bg started in the background" in started.stdout
    deadline = time.monotonic() + 60
    while not judge_server.classify_bodies() and time.monotonic() < deadline:
        time.sleep(0.05)
    try:
        cancelled = subprocess.run([*cli, "cancel", "bg"], capture_output=True, text=True, timeout=60)
    finally:
        judge_server.hold_classify.clear()
    assert cancelled.returncode == 0 and cancelled.stdout.strip() == "bg: cancelled"
    status = subprocess.run([*cli, "status", "bg", "--json"], capture_output=True, text=True, timeout=60)
    assert json.loads(status.stdout)["status"] == "cancelled"


def _into_closed_pipe(args):
    """Run the CLI with stdout a pipe whose reader has gone, as in `ascend-eval job list | head`."""
    read, write = os.pipe()
    os.close(read)
    try:
        return subprocess.run(
            [sys.executable, "-m", "ascend_eval", *args],
            stdout=write,
            stderr=subprocess.PIPE,
            text=True,
            timeout=60,
        )
    finally:
        os.close(write)


def test_output_into_a_closed_pipe_ends_quietly(tmp_path, judge_server):
    root = ["job", "--jobs-dir", str(tmp_path / "jobs")]
    assert (
        main(
            [*root, "run", _spec_file(tmp_path, inline_spec_for(judge_server.url, secret=None)), "--id", "p"]
        )
        == 0
    )
    for args in (["results", "p", "--json"], ["list"]):
        done = _into_closed_pipe([*root, *args])
        assert (done.returncode, done.stderr) == (141, ""), args


def test_sigterm_during_a_foreground_run_cancels_and_resume_sends_only_the_rest(tmp_path, judge_server):
    judge_server.hold_classify.set()
    jobs_dir = str(tmp_path / "jobs")
    spec = _spec_file(tmp_path, inline_spec_for(judge_server.url, secret=None))
    cli = [sys.executable, "-m", "ascend_eval", "job", "--jobs-dir", jobs_dir]
    run = subprocess.Popen(
        [*cli, "run", spec, "--id", "fg"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    try:
        # Both samples' verdicts must be asked for: the engine streams, so the first verdict can go
        # out while the other sample's statements are still in flight (and those are sent again). The
        # verdict prompt's calibration requests go out with the first sample's verdict.
        deadline = time.monotonic() + 60
        while len(judge_server.classify_bodies()) < 2 + CALIBRATION_REQUESTS and run.poll() is None:
            assert time.monotonic() < deadline, "the verdict round never started for both samples"
            time.sleep(0.05)
        run.send_signal(signal.SIGTERM)
        _, err = run.communicate(timeout=30)
    finally:
        judge_server.hold_classify.clear()
        if run.poll() is None:
            run.kill()
    assert run.returncode == 130 and "Traceback" not in err, err
    status = subprocess.run([*cli, "status", "fg", "--json"], capture_output=True, text=True, timeout=60)
    assert json.loads(status.stdout)["status"] == "cancelled"
    assert (
        "cancelled; answered requests stay in its cache" in (tmp_path / "jobs" / "fg" / "job.log").read_text()
    )

    statements = len(judge_server.generate_bodies())
    resumed = subprocess.run([*cli, "run", "--resume", "fg"], capture_output=True, text=True, timeout=120)
    assert resumed.returncode == 0, resumed.stderr
    assert len(judge_server.generate_bodies()) == statements  # the statements came from the cache
