"""The request cache: keys, round trips of every result type, and survival of a killed process."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time

import numpy as np

from ascend_eval.engine.cache import RequestCache, request_key
from ascend_eval.models.base import (
    ClassifyRequest,
    ClassifyResult,
    CrossScoreRequest,
    EmbedRequest,
    GenerateRequest,
    GenerateResult,
    GenerationParams,
    Message,
)

CHAT = (Message("user", "Is the sky blue?"),)


def test_key_changes_with_model_prompt_version_params_and_input():
    base = GenerateRequest(CHAT, GenerationParams(max_tokens=8), tag="p@1")
    key = request_key(base, "m1")
    assert key == request_key(GenerateRequest(CHAT, GenerationParams(max_tokens=8), tag="p@1"), "m1")
    assert key != request_key(base, "m2")
    assert key != request_key(GenerateRequest(CHAT, GenerationParams(max_tokens=8), tag="p@2"), "m1")
    assert key != request_key(GenerateRequest(CHAT, GenerationParams(max_tokens=9), tag="p@1"), "m1")
    assert key != request_key(
        GenerateRequest((Message("user", "Is the sky red?"),), base.params, "p@1"), "m1"
    )
    assert request_key(EmbedRequest("x", "query"), "e") != request_key(EmbedRequest("x", "document"), "e")


def test_every_result_type_round_trips(tmp_path):
    items = [
        (GenerateRequest(CHAT), GenerateResult('好的 {"a": 1}', "stop", 12, 5)),
        (ClassifyRequest(CHAT, ("0", "1")), ClassifyResult(("0", "1"), (0.25, 0.75), 30)),
        (EmbedRequest("北京"), np.array([0.6, 0.8, 0.0], dtype=np.float32)),
        (CrossScoreRequest("q", "p"), 0.125),
    ]
    with RequestCache(tmp_path / "c.sqlite") as cache:
        cache.put_many((request_key(r, "m"), r, v) for r, v in items)
    with RequestCache(tmp_path / "c.sqlite") as cache:
        found = cache.get_many([(request_key(r, "m"), r) for r, _ in items])
        assert len(cache) == 4
    for request, value in items:
        got = found[request_key(request, "m")]
        if isinstance(value, np.ndarray):
            assert got.dtype == np.float32 and np.array_equal(got, value)
        else:
            assert got == value


def test_disabled_cache_stores_nothing():
    cache = RequestCache(None)
    request = EmbedRequest("x")
    cache.put_many([(request_key(request, "m"), request, np.ones(2, dtype=np.float32))])
    assert cache.get_many([(request_key(request, "m"), request)]) == {} and len(cache) == 0


def test_committed_results_survive_sigkill(tmp_path):
    """A process killed with SIGKILL mid-run keeps every batch it committed."""
    path = tmp_path / "c.sqlite"
    script = textwrap.dedent(f"""
        import time
        from ascend_eval.engine.cache import RequestCache, request_key
        from ascend_eval.models.base import CrossScoreRequest
        cache = RequestCache({str(path)!r})
        for i in range(1000):
            r = CrossScoreRequest("q", str(i))
            cache.put_many([(request_key(r, "m"), r, float(i))])
            print(i, flush=True)
            time.sleep(0.01)
    """)
    proc = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True)
    last = None
    deadline = time.time() + 60
    while time.time() < deadline:
        last = int(proc.stdout.readline())
        if last >= 20:
            break
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    with RequestCache(path) as cache:
        assert len(cache) >= last + 1
