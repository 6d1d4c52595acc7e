"""A damaged, foreign, locked or read-only request cache: never a silent wrong score, never a raw traceback.

Row-level damage (a changed digit, invalid JSON, a renamed key, swapped rows, a flipped byte of a vector)
makes that row a miss: recomputed, overwritten, and the scores equal a fresh run's. A file that cannot
serve as a cache is refused with a `CacheError` naming the file and the way on, before any request is
sent. Driven through `ascend_eval.evaluate` with the scripted judge and embedder, and through
`RequestCache` directly.

Read-only files and folders: tests run as root here, and root ignores permission bits, so `chmod` would
prove nothing. The file (or folder) is made immutable with `chattr +i` where that works (it binds root
too); as a normal user without chattr, `chmod` is used; as root without chattr, the cache's connection is
opened with SQLite's `?mode=ro`, which simulates the same refusal.
"""

from __future__ import annotations

import json
import logging
import math
import os
import shutil
import sqlite3
import subprocess
import sys
import textwrap
from contextlib import contextmanager
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import ascend_eval
from ascend_eval.engine import cache as cache_module
from ascend_eval.engine.cache import RequestCache, request_key, row_checksum
from ascend_eval.engine.codecs import codec_for
from ascend_eval.errors import CacheError, ConfigError
from ascend_eval.executors.local import CACHE_FILE
from ascend_eval.models.base import (
    ClassifyRequest,
    ClassifyResult,
    CrossScoreRequest,
    EmbedRequest,
    GenerateRequest,
    GenerateResult,
    Message,
)
from ascend_eval.models.judge.replay import ReplayJudge
from tests.conftest import NgramEmbedder, statements_rule, support_rule

METRICS = ["faithfulness", "answer_similarity"]  # generate, classify and embed rows
CHAT = (Message("user", "Is the sky blue?"),)
# Half of each answer is in its context: every faithfulness score is 0.5, and every verdict row matters.
DATA = [
    {
        "user_input": f"Question {i}?",
        "response": f"Fact {i} holds. Claim {i} is invented.",
        "retrieved_contexts": [f"Fact {i} holds here.", "Unrelated text."],
        "reference": f"Fact {i} holds.",
    }
    for i in range(4)
] + [
    {
        "user_input": f"问题{i}？",
        "response": f"事实{i}成立。说法{i}是编造的。",
        "retrieved_contexts": [f"事实{i}成立，见此处。", "无关的文字。"],
        "reference": f"事实{i}成立。",
    }
    for i in range(4)
]


def fresh_judge() -> ReplayJudge:
    return ReplayJudge(statements_rule, support_rule, model_id="rules-v1")


def run(cache_dir, judge=None, embedder=None):
    """One evaluation; returns (scores per metric, requests sent per round, judge, embedder)."""
    judge = judge or fresh_judge()
    embedder = embedder or NgramEmbedder()
    rounds = []
    result = ascend_eval.evaluate(
        DATA,
        METRICS,
        judge=judge,
        embedder=embedder,
        cache_dir=cache_dir,
        progress=False,
        on_round=rounds.append,
    )
    return {m: result[m] for m in METRICS}, sum(r.sent for r in rounds), judge, embedder


def same_scores(a: dict[str, list[float]], b: dict[str, list[float]]) -> bool:
    return a.keys() == b.keys() and all(
        len(a[m]) == len(b[m])
        and all((math.isnan(x) and math.isnan(y)) or x == y for x, y in zip(a[m], b[m], strict=True))
        for m in a
    )


@pytest.fixture(scope="module")
def reference(tmp_path_factory) -> tuple[dict[str, list[float]], Path]:
    """Scores of a fresh run, and the cache file it wrote (copied before each test damages it)."""
    folder = tmp_path_factory.mktemp("reference-cache")
    scores, sent, _, _ = run(folder)
    assert sent > 0 and scores["faithfulness"] == [0.5] * len(DATA)
    return scores, folder / CACHE_FILE


@pytest.fixture
def primed(reference, tmp_path) -> tuple[dict[str, list[float]], Path]:
    scores, source = reference
    folder = tmp_path / "cache"
    folder.mkdir()
    shutil.copy(source, folder / CACHE_FILE)
    return scores, folder


def rows(path: Path, where: str = "1") -> list[tuple[str, str, bytes | None]]:
    db = sqlite3.connect(path)
    out = db.execute(f"SELECT key, body, blob FROM results WHERE {where} ORDER BY key").fetchall()
    db.close()
    return out


def rewrite(path: Path, key: str, body: str | None = None, blob: bytes | None = None, *, sign=False) -> None:
    """Change one row behind the cache's back; `sign=True` also stores a matching checksum, as a buggy
    writer would, so that only the codec's own checks can catch it."""
    db = sqlite3.connect(path)
    old_body, old_blob = db.execute("SELECT body, blob FROM results WHERE key = ?", (key,)).fetchone()
    body = old_body if body is None else body
    blob = old_blob if blob is None else blob
    checksum = row_checksum(key, body.encode(), blob) if sign else None
    if sign:
        db.execute(
            "UPDATE results SET body = ?, blob = ?, checksum = ? WHERE key = ?", (body, blob, checksum, key)
        )
    else:
        db.execute("UPDATE results SET body = ?, blob = ? WHERE key = ?", (body, blob, key))
    db.commit()
    db.close()


# ---- row-level damage: a miss, recomputed, overwritten; the scores are a fresh run's -------------------


def changed_digit(path: Path) -> int:
    """One probability 0.9 -> 0.1: still valid JSON and a valid answer, so only the checksum sees it.
    On the old cache this flipped a verdict silently."""
    key, body, _ = next(r for r in rows(path, "body LIKE '%\"probs\"%'") if "0.9" in r[1])
    changed = body.replace("0.9", "0.1", 1)
    data = json.loads(changed)
    request = ClassifyRequest(CHAT, tuple(data["labels"]))
    assert codec_for(request).decode(request, changed, None) != codec_for(request).decode(request, body, None)
    rewrite(path, key, changed)
    return 1


def invalid_json(path: Path) -> int:
    key, body, _ = rows(path, "body LIKE '%\"text\"%'")[0]
    rewrite(path, key, body[: len(body) // 2])
    return 1


def renamed_key(path: Path) -> int:
    key, body, _ = rows(path, "body LIKE '%\"probs\"%'")[0]
    rewrite(path, key, body.replace('"probs"', '"probabilities"'))
    return 1


def swapped_rows(path: Path) -> int:
    """Two verdicts exchanged: each a valid answer, to the other request. The checksum covers the key."""
    verdicts = rows(path, "body LIKE '%\"probs\"%'")
    a = verdicts[0]
    b = next(r for r in verdicts if json.loads(r[1])["probs"] != json.loads(a[1])["probs"])
    rewrite(path, a[0], b[1])
    rewrite(path, b[0], a[1])
    return 2


def flipped_vector_byte(path: Path) -> int:
    key, _, blob = rows(path, "blob IS NOT NULL")[0]
    rewrite(path, key, blob=bytes([blob[0] ^ 0x40]) + blob[1:])
    return 1


def signed_but_not_an_answer(path: Path) -> int:
    """A renamed key with a checksum that matches: the codec's checks catch what the checksum cannot."""
    key, body, _ = rows(path, "body LIKE '%\"probs\"%'")[0]
    rewrite(path, key, body.replace('"probs"', '"probabilities"'), sign=True)
    return 1


def signed_wrong_length_vector(path: Path) -> int:
    key, _, blob = rows(path, "blob IS NOT NULL")[0]
    rewrite(path, key, blob=blob[:-4], sign=True)
    return 1


def missing_checksum(path: Path) -> int:
    """A row whose checksum is gone cannot be verified, so it is not used."""
    key = rows(path, "body LIKE '%\"text\"%'")[0][0]
    db = sqlite3.connect(path)
    db.execute("UPDATE results SET checksum = NULL WHERE key = ?", (key,))
    db.commit()
    db.close()
    return 1


ROW_FAULTS = [
    changed_digit,
    invalid_json,
    renamed_key,
    swapped_rows,
    flipped_vector_byte,
    signed_but_not_an_answer,
    signed_wrong_length_vector,
    missing_checksum,
]


@pytest.mark.parametrize("fault", ROW_FAULTS, ids=[f.__name__ for f in ROW_FAULTS])
def test_a_damaged_row_is_recomputed_never_scored(primed, fault, caplog):
    scores, folder = primed
    damaged = fault(folder / CACHE_FILE)
    with caplog.at_level(logging.WARNING, logger="ascend_eval.engine"):
        again, sent, _, _ = run(folder)
    assert same_scores(again, scores)
    assert sent == damaged  # exactly the damaged rows were asked again
    warnings = [r.getMessage() for r in caplog.records if "failed their checksum" in r.getMessage()]
    assert len(warnings) == 1 and warnings[0].startswith(f"{damaged} cached result(s) in ")
    # The recomputed answers overwrote the damaged rows: a third run is answered entirely from the cache.
    third, sent, judge, embedder = run(folder)
    assert same_scores(third, scores) and sent == 0 and judge.calls == [] and embedder.calls == []


# ---- file-level damage, locks, read-only: refused at open, nothing sent -------------------------------


def _chattr(path: Path, flag: str) -> bool:
    if shutil.which("chattr") is None:
        return False
    return subprocess.run(["chattr", flag, str(path)], capture_output=True).returncode == 0


@contextmanager
def read_only(path: Path, monkeypatch):
    """Make `path` (a file or a folder) read-only in a way that binds the current user, root included."""
    if _chattr(path, "+i"):
        try:
            yield "chattr +i"
        finally:
            _chattr(path, "-i")
    elif os.geteuid() != 0:
        mode = path.stat().st_mode
        path.chmod(0o555 if path.is_dir() else 0o444)
        try:
            yield "chmod"
        finally:
            path.chmod(mode)
    else:
        db_file = path / CACHE_FILE if path.is_dir() else path

        def connect(p, timeout):
            return sqlite3.connect(f"file:{db_file}?mode=ro", uri=True, timeout=timeout, isolation_level=None)

        monkeypatch.setattr(cache_module, "_connect", connect)
        yield "sqlite ?mode=ro (simulated)"


@contextmanager
def locked(path: Path):
    """Another process holding an exclusive write lock on the cache file."""
    script = textwrap.dedent(f"""
        import sqlite3, sys
        db = sqlite3.connect({str(path)!r}, isolation_level=None)
        db.execute("BEGIN EXCLUSIVE")
        print("locked", flush=True)
        sys.stdin.read()
    """)
    holder = subprocess.Popen(
        [sys.executable, "-c", script], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    try:
        assert holder.stdout.readline().strip() == "locked"
        yield holder
    finally:
        holder.stdin.close()
        holder.wait(timeout=30)


def random_bytes(folder: Path, monkeypatch):
    (folder / CACHE_FILE).write_bytes(np.random.default_rng(0).bytes(64 * 1024))
    return None


def truncated(folder: Path, monkeypatch):
    path = folder / CACHE_FILE
    os.truncate(path, path.stat().st_size // 2)


def random_bytes_inside(folder: Path, monkeypatch):
    """A valid header, garbage over the data pages."""
    path = folder / CACHE_FILE
    data = bytearray(path.read_bytes())
    data[4096:] = np.random.default_rng(1).bytes(len(data) - 4096)
    path.write_bytes(bytes(data))


def renamed_column(folder: Path, monkeypatch):
    db = sqlite3.connect(folder / CACHE_FILE)
    db.execute("ALTER TABLE results RENAME COLUMN body TO text")
    db.commit()
    db.close()


FILE_FAULTS = {
    "random bytes": (random_bytes, "is not a SQLite database"),
    "truncated": (truncated, "is truncated"),
    "random bytes inside": (random_bytes_inside, "is damaged"),
    "renamed column": (renamed_column, "has a results table with columns"),
}


@pytest.mark.parametrize("name", list(FILE_FAULTS))
def test_an_unusable_file_is_refused_before_any_request(primed, name, monkeypatch):
    _, folder = primed
    fault, says = FILE_FAULTS[name]
    fault(folder, monkeypatch)
    judge, embedder = fresh_judge(), NgramEmbedder()
    with pytest.raises(CacheError, match=says) as caught:
        run(folder, judge, embedder)
    assert_actionable(caught.value, folder / CACHE_FILE)
    assert judge.calls == [] and embedder.calls == []
    # and the way on that the message names works
    scores, _ = primed
    without, _, _, _ = run(False)
    assert same_scores(without, scores)


def assert_actionable(error: CacheError, path: Path) -> None:
    message = str(error)
    assert isinstance(error, ConfigError)
    assert str(path) in message and "--no-cache" in message and "--cache-dir" in message
    # `raise ... from None`: the user sees one message, not SQLite's traceback chained under it
    assert error.__cause__ is None and (error.__context__ is None or error.__suppress_context__)


def test_a_read_only_cache_file_is_refused_at_open(primed, monkeypatch):
    _, folder = primed
    judge, embedder = fresh_judge(), NgramEmbedder()
    with read_only(folder / CACHE_FILE, monkeypatch), pytest.raises(CacheError, match="read-only") as caught:
        run(folder, judge, embedder)
    assert_actionable(caught.value, folder / CACHE_FILE)
    assert judge.calls == [] and embedder.calls == []


@pytest.mark.parametrize("existing", [True, False], ids=["existing file", "new file"])
def test_a_read_only_cache_folder_is_refused_at_open(primed, monkeypatch, tmp_path, existing):
    _, folder = primed
    if not existing:
        folder = tmp_path / "empty"
        folder.mkdir()
    judge, embedder = fresh_judge(), NgramEmbedder()
    with read_only(folder, monkeypatch) as how, pytest.raises(CacheError) as caught:
        run(folder, judge, embedder)
    if how != "sqlite ?mode=ro (simulated)":
        assert f"{folder} is not writable" in str(caught.value)
    assert_actionable(caught.value, folder / CACHE_FILE)
    assert judge.calls == [] and embedder.calls == []


def test_a_cache_folder_that_cannot_be_created_is_refused(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("not a folder")
    with pytest.raises(CacheError, match="Cannot create the request cache folder") as caught:
        run(blocker / "cache")
    assert str(blocker / "cache") in str(caught.value) and "--no-cache" in str(caught.value)


def test_a_cache_locked_by_another_process_is_refused_after_the_busy_timeout(primed, monkeypatch):
    _, folder = primed
    monkeypatch.setattr(cache_module, "BUSY_TIMEOUT_S", 0.3)
    judge, embedder = fresh_judge(), NgramEmbedder()
    with locked(folder / CACHE_FILE), pytest.raises(CacheError, match="locked by another process") as caught:
        run(folder, judge, embedder)
    assert "still after waiting 0.3 s" in str(caught.value)
    assert_actionable(caught.value, folder / CACHE_FILE)
    assert judge.calls == [] and embedder.calls == []


def test_a_lock_released_within_the_busy_timeout_is_waited_for(primed):
    _, folder = primed
    path = folder / CACHE_FILE
    script = textwrap.dedent(f"""
        import sqlite3, time
        db = sqlite3.connect({str(path)!r}, isolation_level=None)
        db.execute("BEGIN EXCLUSIVE")
        print("locked", flush=True)
        time.sleep(0.5)
        db.execute("ROLLBACK")
    """)
    holder = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "locked"
        with RequestCache(path, busy_timeout=20) as cache:
            assert len(cache) > 0
    finally:
        holder.wait(timeout=30)


def test_a_lock_taken_mid_run_drops_the_cache_and_keeps_the_answers(primed, caplog, monkeypatch, tmp_path):
    """Another process locks the cache after the run started: the answers are not lost, the run finishes
    with the right scores, and the log says the cache was dropped."""
    scores, _ = primed
    folder = tmp_path / "new"
    monkeypatch.setattr(cache_module, "BUSY_TIMEOUT_S", 0.3)
    lock = None

    def statements_then_lock(request):
        nonlocal lock
        if lock is None:
            lock = locked(folder / CACHE_FILE)
            lock.__enter__()
        return statements_rule(request)

    judge = ReplayJudge(statements_then_lock, support_rule, model_id="rules-v1")
    try:
        with caplog.at_level(logging.ERROR, logger="ascend_eval.engine"):
            got, _, _, _ = run(folder, judge)
    finally:
        lock.__exit__(None, None, None)
    assert same_scores(got, scores)
    [error] = [r.getMessage() for r in caplog.records if "goes on without it" in r.getMessage()]
    assert str(folder / CACHE_FILE) in error and "locked by another process" in error


def test_a_zero_length_file_is_an_empty_cache(tmp_path, reference):
    scores, _ = reference
    (tmp_path / CACHE_FILE).write_bytes(b"")
    first, sent, _, _ = run(tmp_path)
    assert same_scores(first, scores) and sent > 0
    second, sent, _, _ = run(tmp_path)
    assert same_scores(second, scores) and sent == 0


# ---- RequestCache directly: every kind, older files, odd text -------------------------------------------

KINDS = [
    (GenerateRequest(CHAT, tag="p@1"), GenerateResult('{"statements": ["The sky is blue."]}', "stop", 12, 5)),
    (ClassifyRequest(CHAT, ("0", "1"), tag="v@1"), ClassifyResult(("0", "1"), (0.25, 0.75), 30)),
    (EmbedRequest("北京"), np.array([0.6, 0.8, 0.0], dtype=np.float32)),
    (CrossScoreRequest("q", "p"), 0.125),
]
KIND_IDS = ["generate", "classify", "embed", "score"]


def equal(a, b) -> bool:
    return np.array_equal(a, b) if isinstance(b, np.ndarray) else a == b


@pytest.mark.parametrize(("request_", "result"), KINDS, ids=KIND_IDS)
def test_a_changed_digit_is_a_miss_for_every_kind(tmp_path, request_, result, caplog):
    path, key = tmp_path / "c.sqlite", request_key(request_, "m")
    with RequestCache(path) as cache:
        cache.put_many([(key, request_, result)])
    _, body, blob = rows(path)[0]
    if blob:  # a vector: change one digit of the first float's bytes
        rewrite(path, key, blob=bytes([blob[0] ^ 0x01]) + blob[1:])
    else:
        digit = next(i for i, c in enumerate(body) if c in "123456789")
        rewrite(path, key, body[:digit] + str(int(body[digit]) % 9 + 1) + body[digit + 1 :])
    with RequestCache(path) as cache, caplog.at_level(logging.WARNING, logger="ascend_eval.engine"):
        assert cache.get_many([(key, request_)]) == {}
        assert cache.rejected == 1
        cache.put_many([(key, request_, result)])  # recomputed: overwrites the damaged row
        assert equal(cache.get_many([(key, request_)])[key], result)
    assert "1 cached result(s)" in caplog.text


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(kind=st.integers(0, 3), offset=st.integers(0, 10_000), xor=st.integers(1, 255))
def test_no_single_byte_change_to_a_row_is_ever_read_back_as_an_answer(tmp_path, kind, offset, xor):
    request_, result = KINDS[kind]
    path, key = tmp_path / f"p{kind}-{offset}-{xor}.sqlite", request_key(request_, "m")
    with RequestCache(path) as cache:
        cache.put_many([(key, request_, result)])
    _, body, blob = rows(path)[0]
    raw = body.encode() + (blob or b"")
    i = offset % len(raw)
    changed = bytearray(raw)
    changed[i] ^= xor
    db = sqlite3.connect(path)
    if i < len(body.encode()):  # stored as bytes, so even a change that breaks UTF-8 is tried
        db.execute(
            "UPDATE results SET body = CAST(? AS TEXT) WHERE key = ?",
            (bytes(changed[: len(body.encode())]), key),
        )
    else:
        db.execute("UPDATE results SET blob = ? WHERE key = ?", (bytes(changed[len(body.encode()) :]), key))
    db.commit()
    db.close()
    with RequestCache(path) as cache:
        assert cache.get_many([(key, request_)]) == {}


def _old_cache(path: Path, extra: dict[str, tuple[str | None, bytes | None]] | None = None) -> list[str]:
    """A cache as the release before checksums wrote it (no checksum column, no recorded layout), with one
    well-formed answer of each kind and the rows `extra`; the answers' keys."""
    db = sqlite3.connect(path)
    db.execute("PRAGMA journal_mode=WAL")
    db.execute("CREATE TABLE results (key TEXT PRIMARY KEY, tag TEXT, body TEXT, blob BLOB)")
    keys = []
    for request_, result in KINDS:
        body, blob = codec_for(request_).encode(result)
        keys.append(request_key(request_, "m"))
        db.execute("INSERT INTO results VALUES (?, ?, ?, ?)", (keys[-1], "", body, blob))
    for key, (body, blob) in (extra or {}).items():
        db.execute("INSERT INTO results VALUES (?, ?, ?, ?)", (key, "", body, blob))
    db.commit()
    db.close()
    return keys


def test_an_older_cache_without_checksums_is_upgraded_once_and_its_rows_asked_again(tmp_path, caplog):
    """A cache written before rows had checksums: nothing can verify its rows, so none is used (before,
    its well-formed rows were signed and trusted: issue 48, item 10). It gets its checksum column and
    layout on first open, once, with a WARNING naming the file and the count; what is stored from then on
    is verified like any cache's rows."""
    path = tmp_path / "old.sqlite"
    keys = _old_cache(path, {"cut": ('{"text": "The sky', None), "no body": (None, None)})
    items = [(request_key(r, "m"), r) for r, _ in KINDS]
    with caplog.at_level(logging.INFO, logger="ascend_eval.engine"), RequestCache(path) as cache:
        assert cache.get_many(items) == {}  # well-formed or not, unverifiable: asked again
        assert len(cache) == 0
        cache.put_many([(k, r, v) for (k, r), (_, v) in zip(items, KINDS, strict=True)])
    [upgrade] = [r for r in caplog.records if "has no checksums" in r.getMessage()]
    assert upgrade.levelno == logging.WARNING and str(path) in upgrade.getMessage()
    assert f"its {len(keys) + 2} rows cannot be verified" in upgrade.getMessage()
    assert _layout(path) == cache_module.CACHE_LAYOUT
    caplog.clear()
    with caplog.at_level(logging.INFO, logger="ascend_eval.engine"), RequestCache(path) as cache:
        found = cache.get_many(items)
    assert all(equal(found[request_key(r, "m")], v) for r, v in KINDS)
    assert "has no checksums" not in caplog.text  # once: the cache now records that it has them
    rewrite(path, keys[0], json.dumps({**json.loads(rows(path, "body LIKE '%text%'")[0][1]), "text": "x"}))
    with RequestCache(path) as cache:
        assert set(cache.get_many(items)) == set(keys[1:])


def _layout(path: Path) -> int:
    db = sqlite3.connect(path)
    try:
        return int(db.execute("PRAGMA user_version").fetchone()[0])
    finally:
        db.close()


def test_a_cache_whose_checksum_column_was_dropped_is_refused_never_scored(primed):
    """Issue 14, item 6: with its checksum column dropped, a cache this version wrote was read as one
    written before checksums, its rows (a tampered verdict among them) were signed at INFO, and the
    tampered scores were used with 0 requests sent. A cache records its layout when it is made; one that
    records checksums and has no checksum column was edited, and is refused before any request."""
    _, folder = primed
    path = folder / CACHE_FILE
    db = sqlite3.connect(path)
    db.execute("ALTER TABLE results DROP COLUMN checksum")
    for key, body in db.execute("SELECT key, body FROM results WHERE body LIKE '%\"probs\"%'").fetchall():
        turned = json.dumps({**json.loads(body), "probs": json.loads(body)["probs"][::-1]})
        db.execute("UPDATE results SET body = ? WHERE key = ?", (turned, key))  # well-formed, and opposite
    db.commit()
    db.close()
    judge, embedder = fresh_judge(), NgramEmbedder()
    with pytest.raises(CacheError, match="no checksum column") as caught:
        run(folder, judge, embedder)
    assert_actionable(caught.value, path)
    assert judge.calls == [] and embedder.calls == []
    db = sqlite3.connect(path)
    columns = [c[1] for c in db.execute("PRAGMA table_info(results)")]
    db.close()
    assert columns == ["key", "tag", "body", "blob"]  # refused as found: nothing added, nothing signed


def test_a_cache_whose_checksum_column_was_dropped_and_layout_reset_is_asked_again(primed, caplog):
    """Issue 48, item 10: with its checksum column dropped *and* `PRAGMA user_version=0`, a cache this
    version wrote looks like one made before checksums, and its well-formed rows (statement lists cut
    short among them) were signed and scored with 0 requests sent. No upgrade signs a row it cannot
    verify now: every request is asked again, and the scores are a fresh run's."""
    scores, folder = primed
    path = folder / CACHE_FILE
    db = sqlite3.connect(path)
    db.execute("ALTER TABLE results DROP COLUMN checksum")
    extractions = db.execute("SELECT key, body FROM results WHERE tag LIKE 'statements@%'").fetchall()
    assert extractions
    for key, body in extractions:  # each answer loses its invented claim: well-formed, and scores rise
        row = json.loads(body)
        kept = {"statements": json.loads(row["text"])["statements"][:1]}
        db.execute(
            "UPDATE results SET body = ? WHERE key = ?", (json.dumps({**row, "text": json.dumps(kept)}), key)
        )
    db.execute("PRAGMA user_version = 0")
    db.commit()
    db.close()
    _, fresh_sent, _, _ = run(folder.parent / "fresh")
    with caplog.at_level(logging.WARNING, logger="ascend_eval.engine"):
        again, sent, judge, embedder = run(folder)
    assert same_scores(again, scores)
    assert sent == fresh_sent > 0 and judge.calls and embedder.calls  # all asked again, none reused
    assert any("has no checksums" in r.getMessage() and str(path) in r.getMessage() for r in caplog.records)
    assert _layout(path) == cache_module.CACHE_LAYOUT
    # and the run after that is answered from the rows the upgrade's run stored, verified
    assert run(folder)[1] == 0


def test_a_cache_with_checksums_but_no_recorded_layout_is_stamped_and_used(primed):
    """The release before layouts were recorded wrote checksums without saying so: such a cache opens
    as it is, its rows are used, and it records its layout from then on."""
    scores, folder = primed
    path = folder / CACHE_FILE
    db = sqlite3.connect(path)
    db.execute("PRAGMA user_version = 0")
    db.commit()
    db.close()
    again, sent, _, _ = run(folder)
    assert same_scores(again, scores) and sent == 0
    assert _layout(path) == cache_module.CACHE_LAYOUT


def test_a_cache_of_a_newer_layout_is_refused(primed):
    _, folder = primed
    path = folder / CACHE_FILE
    db = sqlite3.connect(path)
    db.execute(f"PRAGMA user_version = {cache_module.CACHE_LAYOUT + 1}")
    db.commit()
    db.close()
    judge, embedder = fresh_judge(), NgramEmbedder()
    with pytest.raises(CacheError, match="newer version of ascend-eval") as caught:
        run(folder, judge, embedder)
    assert_actionable(caught.value, path)
    assert judge.calls == [] and embedder.calls == []


def test_a_lone_surrogate_gets_a_stable_key_and_is_stored(tmp_path):
    odd = GenerateRequest((Message("user", "q\ud800"),))
    assert request_key(odd, "m") == request_key(GenerateRequest((Message("user", "q\ud800"),)), "m")
    assert request_key(odd, "m") != request_key(GenerateRequest((Message("user", "q\ud801"),)), "m")
    assert request_key(odd, "m") != request_key(GenerateRequest((Message("user", "q"),)), "m")
    answer = GenerateResult("echo \udcff", "stop")
    with RequestCache(tmp_path / "c.sqlite") as cache:
        cache.put_many([(request_key(odd, "m"), odd, answer)])
    with RequestCache(tmp_path / "c.sqlite") as cache:
        assert cache.get_many([(request_key(odd, "m"), odd)]) == {request_key(odd, "m"): answer}


def test_a_lone_surrogate_runs_through_the_engine(tmp_path):
    from ascend_eval.engine import Backends, Engine

    judge = ReplayJudge(lambda r: r.messages[-1].content, model_id="echo")

    def plan():
        [answer] = yield [GenerateRequest((Message("user", "q\ud800"),))]
        return answer.text

    with RequestCache(tmp_path / "c.sqlite") as cache:
        assert Engine(Backends(judge=judge), cache).run({0: plan()}) == {0: "q\ud800"}
    with RequestCache(tmp_path / "c.sqlite") as cache:
        engine = Engine(Backends(judge=ReplayJudge(model_id="echo")), cache)
        assert engine.run({0: plan()}) == {0: "q\ud800"} and engine.rounds[0].cache_hits == 1


def test_a_cache_dropped_mid_run_stays_usable_as_an_object(tmp_path, monkeypatch):
    """After a write fails mid-run the cache is off: lookups miss, writes and len() do nothing, and
    `failure` says why (the API's interrupt message reads `enabled` and `len`)."""
    path = tmp_path / "c.sqlite"
    request_, result = KINDS[3]
    cache = RequestCache(path, busy_timeout=0.2)
    with locked(path):
        cache.put_many([(request_key(request_, "m"), request_, result)])
    assert not cache.enabled and "locked by another process" in cache.failure
    assert cache.get_many([(request_key(request_, "m"), request_)]) == {} and len(cache) == 0
    cache.close()
