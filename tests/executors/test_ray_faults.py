"""An actor killed in the middle of a batch: Ray restarts it, the batch runs again from the node's request
cache, and the run ends with the same results as a clean one. The loopback judge counts what reached it:
nothing answered before the kill is sent again, only the verdicts that were in flight at it."""

from __future__ import annotations

import os
import signal
import threading
import time
from collections.abc import Callable
from typing import Any

from ascend_eval.config import EvaluationConfig
from ascend_eval.executors import score_on_ray
from tests.executors.conftest import dataset_rows, roles_of, specs
from tests.jobs.conftest import RuleJudgeServer
from tests.models.loopback_server import LoopbackServer

ACTOR = "MapWorker(MapBatches(BatchScorer))"
"""The process title Ray gives the scoring actors."""


def _actor_pids() -> list[int]:
    import psutil

    found = []
    for process in psutil.process_iter(["cmdline", "status"]):
        command = process.info["cmdline"] or [""]
        if ACTOR in command[0] and process.info["status"] != psutil.STATUS_ZOMBIE:
            found.append(process.pid)
    return found


def _settled(count: Callable[[], int], *, quiet: float = 1.0, timeout: float = 60.0) -> int:
    """`count()` once it is above zero and has not changed for `quiet` seconds."""
    deadline = time.monotonic() + timeout
    last, since = count(), time.monotonic()
    while time.monotonic() < deadline:
        time.sleep(0.05)
        now = count()
        if now != last:
            last, since = now, time.monotonic()
        elif now > 0 and time.monotonic() - since >= quiet:
            return now
    raise AssertionError(f"still changing or zero after {timeout}s: {last}")


def test_a_killed_actor_restarts_and_resends_only_what_was_in_flight(tmp_path, local_ray):
    import psutil

    rows = dataset_rows()
    roles, count = roles_of(rows)
    # one actor, two batches (of 3 and 4 rows or of 4 and 3): the first is held in its verdicts when the
    # actor dies
    settings: dict[str, Any] = {"roles": roles, "count": count, "metrics": ["faithfulness"]}
    settings.update(num_workers=1, batch_size=4)
    with LoopbackServer() as server:
        judge = RuleJudgeServer(server)
        models = specs(server, judge)
        clean = list(
            score_on_ray(rows, config=EvaluationConfig.of(**models, cache_dir=tmp_path / "a"), **settings)
        )
        generated, classified = len(judge.generate_bodies()), len(judge.classify_bodies())
        assert generated == count and classified > 0

        judge.hold_classify.set()
        run = score_on_ray(rows, config=EvaluationConfig.of(**models, cache_dir=tmp_path / "b"), **settings)
        outcome: dict[str, Any] = {}

        def consume() -> None:
            try:
                outcome["scored"] = list(run)
            except BaseException as exc:  # handed to the test thread below
                outcome["error"] = exc

        consumer = threading.Thread(target=consume, daemon=True)
        consumer.start()
        held = _settled(lambda: len(judge.classify_bodies()) - classified)
        answered = len(judge.generate_bodies()) - generated  # the first batch's statements (Ray sizes it)
        assert 0 < answered < count
        (pid,) = _actor_pids()
        os.kill(pid, signal.SIGKILL)
        psutil.wait_procs([psutil.Process(pid)], timeout=30)
        judge.hold_classify.clear()
        consumer.join(timeout=120)
        assert not consumer.is_alive(), "the run did not finish after the kill"
        assert "error" not in outcome, outcome.get("error")

    scored = outcome["scored"]
    assert [(s.index, s.sample, s.language, dict(s.results)) for s in scored] == [
        (s.index, s.sample, s.language, dict(s.results)) for s in clean
    ]
    # statements answered before the kill came from the cache; only the held verdicts went out twice
    assert len(judge.generate_bodies()) - generated == generated
    assert len(judge.classify_bodies()) - classified == classified + held
    assert run.workers == 1 and run.restarted == 1  # one actor, restarted in a new process
    assert sum(stats.cache_hits for stats in run.stages.values()) == answered  # the first batch's, again
