"""The request cache: keys, round trips of every result type, and survival of a killed process."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import textwrap
import time

import numpy as np
import pytest

from ascend_eval.engine.cache import RequestCache, request_key
from ascend_eval.errors import CacheError
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


def test_answers_stored_from_many_threads_are_each_committed_when_the_call_returns(tmp_path):
    """The engine's lane threads store their answers themselves, all into one cache: calls that meet are
    committed together, and each returns only once its own rows are committed (another connection, as
    after a kill, already sees them)."""
    import threading

    path = tmp_path / "c.sqlite"
    cache = RequestCache(path)
    missing: list[str] = []

    def store(thread: int) -> None:
        reader = sqlite3.connect(path)
        for i in range(50):
            r = CrossScoreRequest("q", f"{thread}-{i}")
            cache.put_many([(request_key(r, "m"), r, float(i))])
            found = reader.execute("SELECT 1 FROM results WHERE key = ?", (request_key(r, "m"),)).fetchone()
            if found is None:
                missing.append(f"{thread}-{i}")
        reader.close()

    threads = [threading.Thread(target=store, args=(t,)) for t in range(16)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert missing == [] and len(cache) == 16 * 50 and cache.enabled
    cache.close()


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


def test_processes_sharing_one_cache_all_open_and_write_it(tmp_path):
    """Ray actors on one node (or two runs) open, write and close one cache again and again, at once.
    Before: SQLite refused the loser of the race to switch a new file to WAL at once, without its busy
    wait, and the header check read a file mid-checkpoint (or its log being removed) as truncated; 3 of
    1,200 opens failed here that way under load (a race: the two tests below pin each cause down). Every
    open must succeed."""
    import multiprocessing

    context = multiprocessing.get_context("fork")
    for attempt in range(3):
        path = tmp_path / f"c{attempt}" / "requests.sqlite"
        start, failures = context.Event(), context.Queue()
        workers = [context.Process(target=_open_and_write, args=(path, start, failures)) for _ in range(6)]
        for w in workers:
            w.start()
        start.set()
        for w in workers:
            w.join(120)
        errors = [failures.get() for _ in range(failures.qsize())]
        assert [w.exitcode for w in workers] == [0] * 6 and errors == [], (attempt, errors)
        with RequestCache(path) as cache:
            assert len(cache) == 6 * 40


def _open_and_write(path, start, failures) -> None:
    start.wait()
    for i in range(40):
        try:
            with RequestCache(path, busy_timeout=5) as cache:
                request = GenerateRequest((Message("user", f"{os.getpid()} {i}"),))
                cache.put_many([(f"{os.getpid()}-{i}", request, GenerateResult("x", finish_reason="stop"))])
        except Exception as e:  # reported to the test, which names them
            failures.put(f"{type(e).__name__}: {e}")


def test_an_open_refused_at_once_as_locked_is_tried_again(tmp_path, monkeypatch):
    """The loser of the race to switch a new file to WAL gets "database is locked" at once, with no busy
    wait: the cache tries again within its timeout instead of refusing the run."""
    real, refused = sqlite3.connect, []

    class LosesTheRaceOnce:
        def __init__(self, db):
            self.db = db

        def execute(self, sql, *args):
            if sql.startswith("PRAGMA journal_mode") and not refused:
                refused.append(sql)
                raise sqlite3.OperationalError("database is locked")
            return self.db.execute(sql, *args)

        def __getattr__(self, name):
            return getattr(self.db, name)

    monkeypatch.setattr(sqlite3, "connect", lambda *args, **kwargs: LosesTheRaceOnce(real(*args, **kwargs)))
    with RequestCache(tmp_path / "c.sqlite", busy_timeout=5) as cache:
        assert cache.enabled and refused


def test_a_file_read_mid_checkpoint_is_read_again_before_it_is_called_truncated(tmp_path):
    """Another process's checkpoint writes the header's new page count before the pages after it: for a
    moment the file is shorter than its header says. Read again, it is whole; only a file that stays short
    is refused."""
    import threading

    path = tmp_path / "c.sqlite"
    with RequestCache(path) as cache:
        answers = [(f"k{i}", GenerateRequest(CHAT), GenerateResult("x" * 3000, "stop")) for i in range(20)]
        cache.put_many(answers)
    whole = path.read_bytes()
    path.write_bytes(whole[:4096])  # the header (page count included) and nothing after it, for now
    threading.Timer(0.08, lambda: path.write_bytes(whole)).start()
    with RequestCache(path) as cache:
        assert len(cache) == 20
    path.write_bytes(whole[:4096])  # and one that stays short is refused
    with pytest.raises(CacheError, match="is truncated"):
        RequestCache(path)


def test_a_new_cache_written_by_another_process_while_its_header_is_read_is_opened(tmp_path, monkeypatch):
    """Two Ray actors open one new cache: one reads the file while it is still empty, and the other has
    written the first page before the size is taken. That is a new cache being made, not a foreign file."""
    import os

    made = tmp_path / "made.sqlite"
    with RequestCache(made) as cache:
        cache.put_many([("k", GenerateRequest(CHAT), GenerateResult("x", "stop"))])
    path = tmp_path / "c.sqlite"
    path.touch()
    real = os.fstat
    calls = []

    def the_other_process_writes_first(fd):
        if not calls:
            path.write_bytes(made.read_bytes())
        calls.append(fd)
        return real(fd)

    monkeypatch.setattr(os, "fstat", the_other_process_writes_first)
    with RequestCache(path) as cache:
        monkeypatch.undo()
        assert len(cache) == 1
