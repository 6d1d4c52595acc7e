"""The streaming engine against a scripted judge server on 127.0.0.1 that counts what it receives: a hung
request costs only its own sample, and a run killed with SIGKILL at random points resends, on its rerun,
nothing that was answered before the kill beyond what was in flight."""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import textwrap
import threading
import time
from itertools import pairwise
from pathlib import Path

import pytest

import ascend_eval
from ascend_eval.models.spec import ModelSpec
from tests.models.loopback_server import CHAT, LoopbackServer, Reply
from tests.test_api_endpoints import judge_route

ROOT = Path(__file__).resolve().parents[2]


def rows(n: int) -> list[dict[str, object]]:
    return [
        {
            "user_input": f"Question {i}?",
            "response": f"Fact {i} holds. Claim {i} is invented.",
            "retrieved_contexts": [f"Fact {i} holds here.", "Unrelated text."],
        }
        for i in range(n)
    ]


def prompt_key(body: dict) -> str:
    return json.dumps([body["messages"], bool(body.get("logprobs"))], sort_keys=True)


def test_a_hung_request_costs_its_timeout_and_only_its_own_sample():
    timeout, attempts = 0.5, 2
    progress: list[float] = []

    def route(body):
        if not body.get("logprobs") and "Fact 3 " in body["messages"][-1]["content"]:
            return Reply(judge_route(body), delay=60)  # hangs past every attempt's timeout
        return Reply(judge_route(body), delay=0.02)

    with LoopbackServer() as server:
        server.route(CHAT, route)
        spec = ModelSpec(
            model=server.url + "/v1",
            served_model_name="loopback-judge",
            request_timeout=timeout,
            max_retries=attempts - 1,
            parallelism=8,
        )
        started = time.perf_counter()
        result = ascend_eval.evaluate(
            rows(40),
            ["faithfulness"],
            judge=spec,
            cache_dir=False,
            progress=False,
            on_progress=lambda p: progress.append(p.elapsed),
        )
        elapsed = time.perf_counter() - started
    scores = result["faithfulness"]
    assert [i for i, s in enumerate(scores) if s != s] == [3]  # NaN for sample 3 only
    assert "timed out" in result.results["faithfulness"][3].reason
    assert all(s == 0.5 for i, s in enumerate(scores) if i != 3)
    # the hung request's attempts (plus one backoff of at most 0.5 s), and the other 39 samples meanwhile
    assert elapsed < timeout * attempts + 0.5 + 4.0
    gaps = [b - a for a, b in pairwise(progress)]
    assert progress and max(gaps) < 2.0


CHILD = textwrap.dedent(
    """
    import json, sys
    import ascend_eval
    from ascend_eval.models.spec import ModelSpec

    url, cache, data = sys.argv[1], sys.argv[2], json.loads(open(sys.argv[3]).read())
    spec = ModelSpec(model=url, served_model_name="loopback-judge", parallelism=4, max_retries=0)
    result = ascend_eval.evaluate(data, ["faithfulness"], judge=spec, cache_dir=cache, progress=False)
    print(json.dumps(result["faithfulness"]))
    """
)


@pytest.mark.slow
def test_a_killed_run_resends_only_what_was_in_flight(tmp_path):
    """200 requests (67 samples x 3), SIGKILL after 5 random numbers of answers, then a rerun each time."""
    data = tmp_path / "data.json"
    data.write_text(json.dumps(rows(67)), encoding="utf-8")
    script = tmp_path / "child.py"
    script.write_text(CHILD, encoding="utf-8")
    cache = tmp_path / "cache"
    kill_points = sorted(random.Random(17).sample(range(15, 190), 5))

    lock = threading.Lock()
    answered: list[set[str]] = [set()]  # per run: prompts the server answered
    received: list[list[str]] = [[]]  # per run: prompts it received
    child: dict[str, subprocess.Popen] = {}
    target = {"answers": 0}

    def route(body):
        key = prompt_key(body)
        with lock:
            received[-1].append(key)
        reply = Reply(judge_route(body), delay=0.01)
        with lock:
            answered[-1].add(key)
            total = len(set().union(*answered))
            if target["answers"] and total >= target["answers"] and "proc" in child:
                os.kill(child.pop("proc").pid, signal.SIGKILL)
        return reply

    outputs = []
    with LoopbackServer() as server:
        server.route(CHAT, route)
        for point in [*kill_points, 0]:
            with lock:
                target["answers"] = point
            proc = subprocess.Popen(
                [sys.executable, str(script), server.url + "/v1", str(cache), str(data)],
                cwd=ROOT,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
                env={**os.environ, "HF_HUB_OFFLINE": "1"},
            )
            with lock:
                child["proc"] = proc
            out, err = proc.communicate(timeout=300)
            outputs.append((proc.returncode, out, err))
            with lock:
                child.pop("proc", None)
                answered.append(set())
                received.append([])

    code, out, err = outputs[-1]
    assert code == 0, err
    assert json.loads(out.strip().splitlines()[-1]) == [0.5] * 67
    assert all(code == -signal.SIGKILL for code, _, _ in outputs[:-1]), [o[0] for o in outputs]
    # A prompt the server received in run i and again in a later run was in flight at the kill: received
    # and not answered, or answered and not yet stored. At most the 4 in flight (parallelism 4), with one
    # more per worker for the answer that may be between the socket and the commit.
    resent, resent_answered = [], []
    for i in range(len(kill_points)):
        later = set().union(*(set(r) for r in received[i + 1 :]))
        resent.append(len(set(received[i]) & later))
        resent_answered.append(len(answered[i] & later))
    print(
        f"kill points {kill_points}: sent again {resent}, of them answered before the kill {resent_answered}"
    )
    assert max(resent) <= 2 * 4, resent
    # 67 x 3 prompts and the six calibration requests of the (English) verdict prompt, each sent once, and
    # again only if it was in flight at a kill. Counted over all runs, not per run: a server thread starved
    # of CPU may file a request of a killed run under the next one, after the test has moved on.
    every = [key for r in received for key in r]
    assert len(set(every)) <= 201 + 6
    assert len(every) - len(set(every)) <= 2 * 4 * len(kill_points), len(every) - len(set(every))
