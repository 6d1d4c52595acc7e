"""How `ascend-eval` ends: SIGTERM unwinds like Ctrl-C (the answers committed stay cached and a re-run
sends only the rest), and output into a pipe whose reader has gone ends quietly, as Unix tools do."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

import pytest

import ascend_eval
from ascend_eval.cli.process import EXIT_BROKEN_PIPE, sigterm_as_interrupt
from tests.models.loopback_server import CHAT, LoopbackServer, Reply
from tests.test_api_endpoints import judge_route

CLI = [sys.executable, "-m", "ascend_eval"]


@pytest.fixture
def server():
    with LoopbackServer() as s:
        s.route(CHAT, judge_route)
        s.route("/v1/models", lambda body: {"data": [{"id": "loopback-judge"}]})
        yield s


def _evaluate(server, tmp_path, *extra):
    return [
        *CLI,
        "evaluate",
        "bilingual-example",
        "--metrics",
        "faithfulness",
        "--judge",
        server.url + "/v1",
        "--out",
        str(tmp_path / "out"),
        "-q",
        *extra,
    ]


def _classify_bodies(server):
    return [b for b in server.bodies(CHAT) if b.get("logprobs")]


def test_sigterm_during_evaluate_keeps_the_cached_answers_and_a_rerun_sends_only_the_rest(server, tmp_path):
    fresh = ascend_eval.evaluate(
        "bilingual-example", ["faithfulness"], judge=server.url + "/v1", cache_dir=False, progress=False
    )
    fresh_requests, fresh_verdicts = len(server.bodies(CHAT)), len(_classify_bodies(server))
    generate_requests = fresh_requests - fresh_verdicts

    # Statements are answered at once and committed; verdicts hang until SIGTERM. A sample's verdicts go
    # out only after its statements are committed, so once every verdict has arrived, all statements are in.
    server.route(
        CHAT, lambda body: Reply(judge_route(body), delay=60) if body.get("logprobs") else judge_route(body)
    )
    before = len(server.bodies(CHAT))
    command = _evaluate(server, tmp_path, "--cache-dir", str(tmp_path / "cache"))
    run = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 60
        while len(_classify_bodies(server)) < 2 * fresh_verdicts and run.poll() is None:
            assert time.monotonic() < deadline, "the verdicts never all arrived"
            time.sleep(0.05)
        run.send_signal(signal.SIGTERM)
        start = time.monotonic()
        _, err = run.communicate(timeout=30)
    finally:
        if run.poll() is None:
            run.kill()
    # It unwound like Ctrl-C, at once (not after the hung requests' timeout), and said what it kept.
    assert run.returncode == 130, err
    assert time.monotonic() - start < 10
    assert f"Interrupted. {generate_requests} answered requests are cached" in err
    assert "run the same command again to resume" in err and "Traceback" not in err
    assert len(server.bodies(CHAT)) - before >= generate_requests

    server.route(CHAT, judge_route)
    before = len(server.bodies(CHAT))
    again = subprocess.run(command, capture_output=True, text=True, timeout=120)
    assert again.returncode == 0, again.stderr
    resent = server.bodies(CHAT)[before:]
    assert len(resent) == fresh_verdicts < fresh_requests
    assert all(b.get("logprobs") for b in resent)  # no statement request was sent again
    saved = json.loads((tmp_path / "out" / "summary.json").read_text())["aggregate_scores"]
    assert saved == json.loads(json.dumps(fresh.aggregates()))


def test_output_into_a_closed_pipe_ends_quietly(server, tmp_path):
    # `ascend-eval evaluate ... | head -0`: the reader is gone before anything is printed.
    read, write = os.pipe()
    os.close(read)
    try:
        done = subprocess.run(
            _evaluate(server, tmp_path, "--no-cache"),
            stdout=write,
            stderr=subprocess.PIPE,
            text=True,
            timeout=120,
        )
    finally:
        os.close(write)
    assert done.returncode == EXIT_BROKEN_PIPE and "Traceback" not in done.stderr, done.stderr
    assert "BrokenPipeError" not in done.stderr
    assert (tmp_path / "out" / "results.json").is_file()  # the results were saved before the print


def test_the_sigterm_handler_is_the_commands_alone():
    previous = signal.getsignal(signal.SIGTERM)
    with sigterm_as_interrupt():
        assert signal.getsignal(signal.SIGTERM) is not previous
        with pytest.raises(KeyboardInterrupt):
            os.kill(os.getpid(), signal.SIGTERM)
            time.sleep(5)  # the handler raises as soon as the signal arrives
    assert signal.getsignal(signal.SIGTERM) is previous
    # Importing the library installs nothing.
    check = "import signal, ascend_eval.cli.main; print(signal.getsignal(signal.SIGTERM) == signal.SIG_DFL)"
    out = subprocess.run([sys.executable, "-c", check], capture_output=True, text=True, timeout=60)
    assert out.stdout.strip() == "True", out.stderr
