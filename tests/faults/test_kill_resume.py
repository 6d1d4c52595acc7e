"""kill -9, then the same command again: a re-run sends again only the requests that were in flight,
unanswered, at the kill.

Issue 14, item 8: the engine committed answers to the request cache on its own thread, between plan steps.
While that thread was busy, answers that had arrived waited uncommitted, and after a SIGKILL 28-62
requests answered up to 0.74 s before the kill were sent again. Now the lane thread that receives a
backend call's answers commits them before it hands them to the engine (`ascend_eval.engine.lanes`): an
answer that has reached this process is lost to a kill only while it is being read and committed.

Driven through `ascend-eval evaluate` in a subprocess against the rule judge on 127.0.0.1, which records
when it answered each request and can hold requests unanswered; the fault suite's 325-case dataset
(`tests.faults.faulty_judge.dataset`) gives a few hundred requests, 128 of them in flight at once.
"""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

from ascend_eval.models.judge.openai import JUDGE_PARALLELISM
from tests.faults.faulty_judge import dataset
from tests.models.loopback_server import CHAT, LoopbackServer
from tests.test_api_endpoints import judge_route

CLI = [sys.executable, "-m", "ascend_eval"]
PARALLELISM = JUDGE_PARALLELISM
"""Requests the judge client has in flight at most, one per lane thread: a URL judge's default."""


class TimedJudge:
    """The rule judge, recording when it answered each request (by its body): when the whole answer had
    been written to the socket. With `hold_after`, every request after that many is held unanswered
    until `release`."""

    def __init__(self, server: LoopbackServer, *, hold_after: int | None = None, delay: float = 0.0) -> None:
        self.server = server
        self.hold_after = hold_after
        self.delay = delay
        self.answered: dict[str, float] = {}
        self.held: set[str] = set()
        self._granted = 0
        self._lock = threading.Lock()
        self._released = threading.Event()
        self._handling = threading.local()
        self._end = server.end
        server.route(CHAT, self._chat)
        server.end = self._ended  # the handler calls it once the reply is written

    def _chat(self, body):
        key = json.dumps(body, sort_keys=True)
        with self._lock:
            hold = self.hold_after is not None and self._granted >= self.hold_after
            if hold:
                self.held.add(key)
            else:
                self._granted += 1
        if hold:
            self._released.wait(60)
        elif self.delay:
            time.sleep(self.delay)
        self._handling.key = None if hold else key
        return judge_route(body)

    def _ended(self) -> None:
        key, self._handling.key = getattr(self._handling, "key", None), None
        if key is not None:
            with self._lock:
                self.answered[key] = time.monotonic()
        self._end()

    def release(self) -> None:
        """Answer everything from now on (what was held goes to a client that is gone)."""
        with self._lock:
            self.hold_after = None
        self._released.set()

    def snapshot(self) -> tuple[dict[str, float], set[str]]:
        """(answered: body -> when, received) so far. A request whose body never arrived whole (the client
        was killed while writing it: the server read no JSON object) was not received, so it is not among
        those in flight."""
        with self._lock:
            answered = dict(self.answered)
        bodies = self.server.bodies(CHAT)
        return answered, {json.dumps(b, sort_keys=True) for b in bodies if isinstance(b, dict)}


def _data(tmp_path: Path) -> Path:
    rows = dataset()
    path = tmp_path / "data.json"
    records = [
        {"user_input": q, "response": a, "retrieved_contexts": c}
        for q, a, c in zip(rows["question"], rows["answer"], rows["contexts"], strict=True)
    ]
    path.write_text(json.dumps(records), encoding="utf-8")
    return path


def _command(server: LoopbackServer, tmp_path: Path) -> list[str]:
    return [
        *CLI, "evaluate", str(_data(tmp_path)), "--metrics", "faithfulness", "-q",
        "--judge", server.url, "--judge-model", "loopback-judge",
        "--out", str(tmp_path / "out"), "--cache-dir", str(tmp_path / "cache"),
    ]  # fmt: skip


def _env(**extra: str) -> dict[str, str]:
    return {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", **extra}


def _kill_when(run: subprocess.Popen, ready, timeout: float = 90) -> float:
    deadline = time.monotonic() + timeout
    try:
        while not ready():
            assert run.poll() is None, run.communicate()[1][-2000:]
            assert time.monotonic() < deadline, "the run never got there"
            time.sleep(0.002)
        os.kill(run.pid, signal.SIGKILL)
        killed = time.monotonic()
        run.wait(timeout=30)
        return killed
    finally:
        if run.poll() is None:
            run.kill()
            run.wait()


def _rows(tmp_path: Path) -> int:
    """Rows in the run's request cache, read while it runs (WAL lets a reader in)."""
    try:
        db = sqlite3.connect(f"file:{tmp_path / 'cache' / 'requests.sqlite'}?mode=ro", uri=True, timeout=1)
        try:
            return int(db.execute("SELECT COUNT(*) FROM results").fetchone()[0])
        finally:
            db.close()
    except sqlite3.Error:  # not made yet
        return 0


def _settle(server: LoopbackServer, quiet: float = 1.0, timeout: float = 30.0) -> None:
    """Wait until the server has received nothing for `quiet` seconds. Requests the killed run had written
    can still sit in the listen backlog; the server reads them after the kill, and they must not be
    counted as the re-run's."""
    deadline = time.monotonic() + timeout
    seen, since = len(server.requests), time.monotonic()
    while time.monotonic() - since < quiet and time.monotonic() < deadline:
        time.sleep(0.05)
        if len(server.requests) != seen:
            seen, since = len(server.requests), time.monotonic()


def _rerun(server: LoopbackServer, command: list[str]) -> list[str]:
    """Run `command` to the end, once the killed run's last requests are in; the chat requests it sent
    (bodies as keys)."""
    _settle(server)
    before = len(server.requests)
    done = subprocess.run(command, capture_output=True, text=True, timeout=180, env=_env())
    assert done.returncode == 0, done.stderr[-3000:]
    return [json.dumps(r.body, sort_keys=True) for r in server.requests[before:] if r.path == CHAT]


# The engine's thread stops for good at the first plan step it takes (reading the first statements that
# come back): a step that takes long. Before, nothing answered after that point was committed.
STALLED_ENGINE = textwrap.dedent(
    """
    import os, threading
    from ascend_eval.metrics import faithfulness

    def read_statements(*args, **kwargs):
        open(os.environ["STALL_MARK"], "w").close()
        threading.Event().wait()  # never returns: the process is killed

    faithfulness.read_statements = read_statements
    """
)


def test_answers_are_committed_as_they_arrive_even_while_the_engine_is_stalled(tmp_path):
    site = tmp_path / "site"
    site.mkdir()
    (site / "sitecustomize.py").write_text(STALLED_ENGINE, encoding="utf-8")
    mark = tmp_path / "stalled"
    path = os.pathsep.join([str(site), os.environ.get("PYTHONPATH", "")])
    with LoopbackServer() as server:
        judge = TimedJudge(server, hold_after=150)
        command = _command(server, tmp_path)
        run = subprocess.Popen(
            command,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
            env=_env(PYTHONPATH=path, STALL_MARK=str(mark)),
        )

        since: list[float] = []

        def ready() -> bool:
            # The engine stalled, 150 answered, the client's threads waiting on held requests; then up to
            # 10 s for those answers to be read and committed by the threads that asked (before: never).
            answered, received = judge.snapshot()
            if not since and mark.exists() and len(answered) >= 150 and len(received) > len(answered):
                since.append(time.monotonic())
            return bool(since) and (_rows(tmp_path) >= 150 or time.monotonic() - since[0] > 10)

        _kill_when(run, ready)
        answered, received = judge.snapshot()
        in_flight = received - set(answered)
        judge.release()
        again = _rerun(server, command)
    resent_answered = [k for k in again if k in answered]
    assert resent_answered == [], (
        f"{len(resent_answered)} of the {len(answered)} requests answered before the kill were sent again"
    )
    assert in_flight <= set(again)  # what was in flight is asked again, once
    assert len(again) == len(set(again))


def test_a_sigkill_mid_run_resends_at_most_the_requests_in_flight(tmp_path):
    """The bound, without injection: the judge answers everything (after 5 ms each) and the run is
    killed the moment the judge has answered 250 requests. A lane thread commits an answer before it asks
    anything else, so the requests a re-run sends again are at most those the client's threads held at
    the kill, one each: `PARALLELISM`. They include answers the judge had written that the client had not
    read yet: on a loaded machine a busy client reads them up to ~0.7 s late, and no commit can be
    earlier than the read."""
    after = 250
    with LoopbackServer() as server:
        judge = TimedJudge(server, delay=0.005)
        command = _command(server, tmp_path)
        run = subprocess.Popen(
            command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=_env()
        )
        killed = _kill_when(run, lambda: len(judge.answered) >= after)
        answered, received = judge.snapshot()
        again = _rerun(server, command)
    resent = received & set(again)
    ages = sorted(killed - answered[k] for k in resent if k in answered)
    print(
        f"killed after {len(answered)} answers: {len(resent)} requests sent again, {len(ages)} of them "
        f"answered by the judge up to {max(ages, default=0):.3f} s before the kill"
    )
    assert len(resent) <= PARALLELISM, (
        f"{len(resent)} requests sent again, more than the {PARALLELISM} that can be in flight "
        f"({len(ages)} answered, the oldest {max(ages, default=0):.3f} s before the kill)"
    )
