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


# Keys and stored encodings as computed by the cache before request kinds became codecs: existing cache
# files stay valid only while these stay byte-identical.
PINNED_CHAT = (Message("system", "You judge."), Message("user", "天空是蓝色的吗? Is the sky blue?"))
PINNED_KEYS = [
    (
        GenerateRequest(
            PINNED_CHAT,
            GenerationParams(max_tokens=64, stop=("\n",), json_schema='{"type":"object"}'),
            tag="statements@1",
        ),
        "judge-a",
        "dc313ded42f0642f9a822d75e4d16fb89688c0e7f552eb978503b8d634598697",
    ),
    (
        GenerateRequest(PINNED_CHAT),
        "judge-a",
        "c05c11a7a9800f5c63a35696f430bc2f3037e09bf99a2cda9527e3ee5938dddc",
    ),
    (
        ClassifyRequest(PINNED_CHAT, ("0", "1"), answer_prefix="Verdict: ", tag="nli@2"),
        "judge-a",
        "3913fbcf8674da3640c27fd738a201d73a69a1e969023134a4e39ab1f3759ad8",
    ),
    (
        EmbedRequest("北京是中国的首都", "query"),
        "emb",
        "5839acd32f2355138afff2dd23cb66664fb826e08b97a38326ece8b959e485d1",
    ),
    (
        EmbedRequest("北京是中国的首都"),
        "emb",
        "869b2413e4f382846cb5e06e37436e88ddcb681c98b52e2cbf75302d51cec654",
    ),
    (
        CrossScoreRequest("q?", "passage 文本"),
        "rr",
        "21dc8f5d41061211572d27a8078df0270bc55b1abfa6dce368f70722d1336c18",
    ),
]
PINNED_ROWS = [
    (
        GenerateRequest(CHAT),
        GenerateResult('好的 {"a": 1}', "stop", 12, 5),
        (
            '{"text": "好的 {\\"a\\": 1}", "finish_reason": "stop", "prompt_tokens": 12, '
            '"completion_tokens": 5, "error": null}'
        ),
        None,
    ),
    (
        ClassifyRequest(CHAT, ("0", "1")),
        ClassifyResult(("0", "1"), (0.25, 0.75), 30),
        '{"labels": ["0", "1"], "probs": [0.25, 0.75], "prompt_tokens": 30, "error": null}',
        None,
    ),
    (
        EmbedRequest("北京"),
        np.array([0.6, 0.8, 0.0], dtype=np.float32),
        '{"dim": 3}',
        b"\x9a\x99\x19?\xcd\xccL?\x00\x00\x00\x00",
    ),
    (CrossScoreRequest("q", "p"), 0.125, '{"score": 0.125}', None),
]


def test_keys_are_unchanged_for_existing_caches():
    for request, model_id, digest in PINNED_KEYS:
        assert request_key(request, model_id) == digest, request


def test_stored_encoding_is_unchanged_for_existing_caches(tmp_path):
    import sqlite3

    path = tmp_path / "c.sqlite"
    with RequestCache(path) as cache:
        cache.put_many((request_key(r, "m"), r, v) for r, v, _, _ in PINNED_ROWS)
    db = sqlite3.connect(path)
    stored = {k: (body, blob) for k, body, blob in db.execute("SELECT key, body, blob FROM results")}
    db.close()
    for request, _, body, blob in PINNED_ROWS:
        assert stored[request_key(request, "m")] == (body, blob), request
