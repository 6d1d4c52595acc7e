"""The on-disk request cache: every answered request, keyed by a hash of its content and the model.

An interrupted run resumes without recomputing, and a re-run with one metric added only pays for that
metric. Answers are committed as they arrive, by the engine's lane thread that received them and before
the engine hears of them (`put_many` may be called from any thread; calls that meet are committed
together, one transaction), so a kill loses only the requests still in flight. SQLite in WAL mode: one
file, safe against a kill mid-write, readable while a run is going on.

A cached answer is used only when it is exactly what was stored for that key: each row carries a checksum
of its key, body and blob, and each codec checks that the row is a well-formed answer to its request. A row
that fails either is a miss (counted, logged, recomputed and overwritten), never a score. A file that
cannot serve as a cache (not SQLite, truncated, another table layout, locked by another process,
read-only) is refused when the cache is opened, before any request is sent, with a `CacheError` that
names the file and the way on. Once a run has started, a cache that fails is dropped for the rest of the
run (logged) instead of ending it: the answers in hand are worth more than the cache.

The file records its layout (`CACHE_LAYOUT`, as SQLite's `user_version`). Only a cache whose recorded
layout is older than checksums is upgraded, and its rows, which nothing can verify, are deleted on the way
(their requests are asked again); one that records checksums but has no checksum column was edited by
another program and is refused. Either way no row without a checksum is ever used.
"""

from __future__ import annotations

import errno
import hashlib
import json
import logging
import os
import sqlite3
import threading
import time
from collections.abc import Iterable, Sequence
from dataclasses import asdict
from pathlib import Path

from ascend_eval.engine.codecs import Result, codec_for
from ascend_eval.errors import CacheError
from ascend_eval.models.base import Request
from ascend_eval.writing import free_bytes

logger = logging.getLogger("ascend_eval.engine")

CACHE_FORMAT = 1
"""Bumped when the stored encoding changes; part of every key, so old entries are simply not found."""

CACHE_LAYOUT = 2
"""The table layout a cache file records (SQLite's `PRAGMA user_version`): 2, each row has a checksum.
0 is SQLite's default: a file made before layouts were recorded, either before checksums (no checksum
column: upgraded once, its unverifiable rows deleted) or by the release that added them (a checksum
column: stamped 2 as it is)."""


def request_key(request: Request, model_id: str) -> str:
    """Content hash of a request as sent to a given model.

    Covers the model identity, the prompt tag (name@version), the full rendered input and every decoding
    parameter, so any change to any of them is a different key.
    """
    payload = {"format": CACHE_FORMAT, "model": model_id, "type": type(request).__name__, **asdict(request)}
    text = json.dumps(payload, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    # surrogatepass: a lone surrogate (from a badly decoded file, say) still hashes to a stable key; every
    # other string encodes exactly as plain UTF-8, so no existing key changes.
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


BUSY_TIMEOUT_S = 30.0
"""How long to wait for another process's write to the cache before giving up (SQLite's busy timeout).
Runs sharing a cache commit one chunk at a time, so a wait this long means a stuck or foreign writer."""

_NEXT = "pass cache_dir=False (CLI: --no-cache) to run without a cache, or another cache_dir (--cache-dir)"
_SQLITE_MAGIC = b"SQLite format 3\x00"
_COLUMNS = ("key", "tag", "body", "blob")
_LOW_SPACE = 1 << 20
"""Free bytes under which a device counts as full: SQLite needs room for its -wal and -shm files."""


def row_checksum(key: str, body: bytes | None, blob: bytes | None) -> str:
    """The checksum stored with a row: blake2b-128 over its key, its body's UTF-8 bytes and its blob.

    The key is covered too, so a row copied or swapped onto another key is caught, not only a changed
    digit. Each part is length-prefixed (absent parts get their own marker): no two rows collide by
    shifting bytes between parts.
    """
    h = hashlib.blake2b(digest_size=16)
    for part in (key.encode("utf-8", "surrogatepass"), body, blob):
        if part is None:
            h.update(b"\xff" * 8)
        else:
            h.update(len(part).to_bytes(8, "little"))
            h.update(part)
    return h.hexdigest()


class RequestCache:
    """Stores answered requests by key. `path=None` keeps nothing (a cache that always misses).

    Args:
        path: the SQLite file; created (with its folder) if absent. A zero-length file is an empty cache.
        busy_timeout: seconds to wait for another process's write lock (default `BUSY_TIMEOUT_S`).

    Raises:
        CacheError: the file is not a usable cache (not SQLite, truncated, another layout, one that was
            edited), is locked by another process past `busy_timeout`, or cannot be written (file or folder
            read-only, no space left on its device). Raised here, before any request is sent.

    Every method may be called from any thread: the engine's lane threads store answers as they arrive
    while the engine's own thread looks answers up.
    """

    def __init__(self, path: Path | str | None, *, busy_timeout: float | None = None) -> None:
        self.path = None if path is None else Path(path)
        self.rejected = 0
        """Rows found but not used since the cache was opened: failed checksum or not a valid answer."""
        self.failure: str | None = None
        """Why the cache was dropped in the middle of a run, if it was."""
        self._db: sqlite3.Connection | None = None
        self._lock = threading.RLock()
        """Held for every use of the connection."""
        self._queued: list[tuple[str, str, str, bytes | None, str]] = []
        """Rows handed to `put_many` and not committed yet (guarded by `_queue_lock`)."""
        self._queue_lock = threading.Lock()
        if self.path is not None:
            self._db = _open(self.path, BUSY_TIMEOUT_S if busy_timeout is None else busy_timeout)

    @property
    def enabled(self) -> bool:
        return self._db is not None

    def get_many(self, items: Sequence[tuple[str, Request]]) -> dict[str, Result]:
        """The cached results among `items` (pairs of key and request), by key. A row that fails its
        checksum or does not decode as an answer to its request is left out: a miss, to be recomputed."""
        if self._db is None or not items:
            return {}
        found: dict[str, Result] = {}
        requests = dict(items)
        keys = list(requests)
        bad = 0
        with self._lock:
            if self._db is None:
                return {}
            try:
                # SQLite limits the number of bound parameters per statement; look up in slices. The
                # body is read as bytes: the checksum covers them, and bytes that are not UTF-8 make a
                # miss, not an exception in the middle of the fetch.
                for start in range(0, len(keys), 500):
                    chunk = keys[start : start + 500]
                    marks = ",".join("?" * len(chunk))
                    rows = self._db.execute(
                        f"SELECT key, CAST(body AS BLOB), blob, checksum FROM results WHERE key IN ({marks})",
                        chunk,
                    ).fetchall()
                    for key, body, blob, checksum in rows:
                        result = _read(requests[key], key, body, blob, checksum)
                        if result is None:
                            bad += 1
                        else:
                            found[key] = result
            except sqlite3.Error as e:
                self._give_up("reading", e)
                return {}
        if bad:
            self.rejected += bad
            logger.warning(
                "%d cached result(s) in %s failed their checksum or are not valid answers; they are "
                "recomputed and overwritten.",
                bad,
                self.path,
            )
        return found

    def put_many(self, items: Iterable[tuple[str, Request, Result]]) -> None:
        """Store results and commit them before returning, so a kill right after loses nothing answered.

        Safe from any thread. Rows that threads hand over while another thread's commit is going on are
        committed together in the next transaction (a group commit): one transaction per answer while
        answers trickle in, one per many when they pour.
        """
        if self._db is None:
            return
        rows = []
        for key, request, result in items:
            body, blob = codec_for(request).encode(result)
            checksum = row_checksum(key, body.encode("utf-8"), blob)
            rows.append((key, getattr(request, "tag", ""), body, blob, checksum))
        if not rows:
            return
        with self._queue_lock:
            self._queued.extend(rows)
        with self._lock:
            with self._queue_lock:
                rows, self._queued = self._queued, []
            if not rows or self._db is None:  # committed by the thread before this one, or dropped
                return
            try:
                self._db.execute("BEGIN IMMEDIATE")
                try:
                    self._db.executemany(
                        "INSERT OR REPLACE INTO results (key, tag, body, blob, checksum) "
                        "VALUES (?, ?, ?, ?, ?)",
                        rows,
                    )
                    self._db.execute("COMMIT")
                except BaseException:
                    if self._db.in_transaction:
                        self._db.execute("ROLLBACK")
                    raise
            except sqlite3.Error as e:
                self._give_up(f"storing {len(rows)} answers", e)

    def __len__(self) -> int:
        with self._lock:
            if self._db is None:
                return 0
            try:
                return int(self._db.execute("SELECT COUNT(*) FROM results").fetchone()[0])
            except sqlite3.Error as e:
                self._give_up("counting rows", e)
                return 0

    def close(self) -> None:
        """Close the file; a commit going on in another thread finishes first."""
        with self._lock:
            if self._db is not None:
                self._db.close()
                self._db = None

    def __enter__(self) -> RequestCache:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _give_up(self, action: str, e: sqlite3.Error) -> None:
        """Drop the cache for the rest of this run: the run goes on, answering everything itself."""
        self.failure = _describe(e, self.path)  # type: ignore[arg-type]
        logger.error(
            "The request cache failed while %s; this run goes on without it (its answers are kept in "
            "memory, not cached). %s",
            action,
            self.failure,
        )
        self.close()


def _read(request: Request, key: str, body: object, blob: object, checksum: object) -> Result | None:
    """The result stored in one row, or None if the row is not exactly what was stored for `key` or is
    not a well-formed answer to `request`."""
    if not isinstance(body, bytes | None) or not isinstance(blob, bytes | None):
        return None
    if checksum is None or checksum != row_checksum(key, body, blob):
        return None  # changed since it was written (or an older row that could not be checked)
    try:
        text = None if body is None else body.decode("utf-8")
        return codec_for(request).decode(request, text, blob)
    except (ValueError, TypeError, KeyError):
        return None


def _connect(path: Path, timeout: float) -> sqlite3.Connection:
    # Autocommit: put_many opens its own write transaction (BEGIN IMMEDIATE) and commits it at once.
    # Any thread may use the connection: RequestCache holds its lock around every use.
    return sqlite3.connect(path, timeout=timeout, isolation_level=None, check_same_thread=False)


def _open(path: Path, timeout: float) -> sqlite3.Connection:
    """Open (or create) the cache file and make sure this run can both read and write it."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        if e.errno in (errno.ENOSPC, getattr(errno, "EDQUOT", errno.ENOSPC)):
            raise CacheError(_no_space(path, e.strerror or str(e))) from None
        raise CacheError(f"Cannot create the request cache folder {path.parent} ({e}); {_NEXT}.") from None
    _check_header(path)
    deadline = time.monotonic() + timeout
    while True:
        db: sqlite3.Connection | None = None
        try:
            db = _connect(path, timeout)
            db.execute("PRAGMA journal_mode=WAL")
            db.execute("PRAGMA synchronous=NORMAL")
            _ensure_layout(db, path)
            # A write that is rolled back: the only test of writability that is honest as root too (root
            # passes every permission check, but not a read-only mount, an immutable file or a held lock).
            db.execute("BEGIN IMMEDIATE")
            db.execute("INSERT OR REPLACE INTO results (key) VALUES (?)", ("",))
            db.execute("ROLLBACK")
            return db
        except BaseException as e:
            if db is not None:
                db.close()
            # Two processes opening a new cache at once (two Ray actors on one node, two runs): SQLite
            # answers "locked" at once, without its busy wait, to the one that loses the race to switch the
            # file to WAL. Try again until the timeout, as a held lock is waited for.
            if _is_locked(e) and time.monotonic() < deadline:
                time.sleep(0.05)
                continue
            if isinstance(e, sqlite3.Error):
                raise CacheError(_describe(e, path, timeout)) from None
            raise


def _is_locked(e: BaseException) -> bool:
    return isinstance(e, sqlite3.OperationalError) and any(
        word in str(e).lower() for word in ("locked", "busy")
    )


def _check_header(path: Path) -> None:
    """Refuse a file that is not SQLite or is shorter than its own header says (cut off by a full disk
    or a partial copy). SQLite itself only notices the latter when a missing page is read, mid-run.

    Another process may be writing the same cache meanwhile (a second run, or Ray actors on one node): a
    checkpoint writes the header's new page count before the pages after it, and the last connection to
    close removes the write-ahead log. So a file that looks cut off is read again, a few times, before it
    is refused: a truly truncated one stays so."""
    for attempt in range(_HEADER_READS):
        found = _read_header(path)
        if found is None:
            return
        head, size = found
        page_size = int.from_bytes(head[16:18], "big")
        page_size = 65536 if page_size == 1 else page_size
        pages = int.from_bytes(head[28:32], "big")
        # The page count is valid only when the change counter matches "version-valid-for" (SQLite file
        # format, section 1.3.7); while a write-ahead log exists, the file may lag its header legitimately.
        if head[24:28] != head[92:96] or _wal_bytes(path) > 0 or size >= pages * page_size:
            return
        if attempt + 1 < _HEADER_READS:
            time.sleep(0.05)
            continue
        raise CacheError(
            f"The request cache {path} is truncated: {size} bytes, its header says {pages * page_size}. "
            f"{_ASIDE} {_NEXT}."
        )


_HEADER_READS = 5
_ASIDE = "Move it aside (or delete it) to start a new cache, or"


def _read_header(path: Path) -> tuple[bytes, int] | None:
    """The file's first 100 bytes and then its size (None: no file, or an empty one, a new cache)."""
    try:
        with path.open("rb") as f:
            head = f.read(100)
            size = os.fstat(f.fileno()).st_size
    except FileNotFoundError:
        return None
    except OSError as e:
        raise CacheError(f"Cannot read the request cache {path} ({e}); {_NEXT}.") from None
    if not head:
        # Empty when read: SQLite treats that as an empty database. The size may already be more than
        # nothing: another process opening the same new cache wrote its first page in between.
        return None
    if not head.startswith(_SQLITE_MAGIC):
        raise CacheError(
            f"The request cache {path} is not a SQLite database (it starts with {head[:16]!r}). "
            f"{_ASIDE} {_NEXT}."
        )
    if len(head) < 100:
        raise CacheError(
            f"The request cache {path} is truncated ({size} bytes, less than its header). {_ASIDE} {_NEXT}."
        )
    return head, size


def _wal_bytes(path: Path) -> int:
    try:
        return Path(f"{path}-wal").stat().st_size
    except FileNotFoundError:  # none, or removed just now by the last connection to close
        return 0
    except OSError:
        return 0


def _ensure_layout(db: sqlite3.Connection, path: Path) -> None:
    """Create the results table, refuse one of another layout (or one that was edited), and upgrade a
    cache made before checksums."""
    columns = {row[1]: row for row in db.execute("PRAGMA table_info(results)")}
    layout = int(db.execute("PRAGMA user_version").fetchone()[0])
    if not columns:
        db.execute(
            "CREATE TABLE IF NOT EXISTS results "
            "(key TEXT PRIMARY KEY, tag TEXT, body TEXT, blob BLOB, checksum TEXT)"
        )
        db.execute(f"PRAGMA user_version = {CACHE_LAYOUT}")
        return
    if layout > CACHE_LAYOUT:
        raise CacheError(
            f"The request cache {path} has layout {layout}, written by a newer version of ascend-eval (this "
            f"one reads layout {CACHE_LAYOUT} and older). Upgrade ascend-eval, or {_NEXT}."
        )
    missing = [c for c in _COLUMNS if c not in columns]
    if missing or columns["key"][5] != 1:
        raise CacheError(
            f"The request cache {path} has a results table with columns {sorted(columns)} (key as primary "
            f"key: {columns.get('key', [0] * 6)[5] == 1}); a cache needs {list(_COLUMNS)} with key as its "
            f"primary key. It was edited or written by another program. Move it aside to start a new "
            f"cache, or {_NEXT}."
        )
    if "checksum" in columns:
        if layout < CACHE_LAYOUT:  # made by the release that added checksums, before layouts were recorded
            db.execute(f"PRAGMA user_version = {CACHE_LAYOUT}")
        return
    if layout >= CACHE_LAYOUT:
        # It recorded checksums when it was made, and their column is gone: an edit that would pass any
        # row off as an older cache's, unverified. Its rows cannot be checked, so none is used.
        raise CacheError(
            f"The request cache {path} was made with a checksum for every row (layout {layout}) but its "
            f"results table has no checksum column: it was edited by another program, and its rows can no "
            f"longer be verified. {_ASIDE} {_NEXT}."
        )
    _upgrade(db, path)


def _upgrade(db: sqlite3.Connection, path: Path) -> None:
    """Give a cache without checksums (layout 0, no checksum column) its checksum column, once, and delete
    its rows: their requests are asked again.

    Its rows cannot be verified: nothing recorded what was written, and such a file is either one made
    before checksums or one whose checksum column was dropped and its recorded layout reset, by another
    program. The two look the same, so no row of either is trusted: signing them would pass an edited
    verdict off as an answer for good (a well-formed one is as easy to write as a damaged one). The first
    run after the upgrade pays for its requests again; the rows it stores are checked like any others.
    """
    db.execute("BEGIN IMMEDIATE")
    try:
        dropped = db.execute("DELETE FROM results").rowcount
        db.execute("ALTER TABLE results ADD COLUMN checksum TEXT")
        db.execute(f"PRAGMA user_version = {CACHE_LAYOUT}")
        db.execute("COMMIT")
    except BaseException:
        if db.in_transaction:
            db.execute("ROLLBACK")
        raise
    logger.warning(
        "The request cache %s has no checksums (made by a version before them, or its checksum column was "
        "removed): its %d rows cannot be verified, so they were deleted and their requests are asked "
        "again. The cache checks every row from now on.",
        path,
        dropped,
    )


def _describe(e: sqlite3.Error, path: Path, timeout: float | None = None) -> str:
    """What an SQLite error means for the cache file at `path`, and what to do next."""
    name = getattr(e, "sqlite_errorname", "") or ""  # Python >= 3.11
    text = str(e)
    if name.startswith(("SQLITE_BUSY", "SQLITE_LOCKED")) or "locked" in text:
        waited = "" if timeout is None else f" (still after waiting {timeout:g} s)"
        return (
            f"The request cache {path} is locked by another process{waited}: another run writing to the "
            f"same cache, or a program holding it open. Wait for it to finish, or {_NEXT}."
        )
    if name.startswith("SQLITE_READONLY") or "readonly" in text:
        return (
            f"The request cache {path} is read-only ({text}), so this run could not store its answers. "
            f"Make the file and its folder writable, or {_NEXT}."
        )
    if name.startswith("SQLITE_CANTOPEN") or "unable to open" in text:
        where = path.parent if not os.access(path.parent, os.W_OK) else path
        return (
            f"Cannot open the request cache {path} ({text}): {where} is not writable, or {path} is not "
            f"a file. SQLite needs to write the file and create its -wal and -shm files next to it. "
            f"Make the folder writable, or {_NEXT}."
        )
    if name == "SQLITE_FULL" or "is full" in text:
        return _no_space(path, text)
    if name.startswith("SQLITE_IOERR") or "disk I/O error" in text:
        # SQLite reports a full device as a plain I/O error where it cannot grow its -shm or -wal file
        # (or a quota is exceeded): ask the device before blaming it.
        free = free_bytes(path)
        if free is not None and free < _LOW_SPACE:
            return _no_space(path, f"{text}; {free} bytes free")
        return (
            f"I/O error on the request cache {path} ({text}): the device holding it failed, went away or "
            f"is over a quota, or the file was changed under this run. Check the device (dmesg, df, "
            f"quota), or {_NEXT}."
        )
    return (
        f"The request cache {path} is damaged ({text}). Move it aside (or delete it) to start a new cache, "
        f"or {_NEXT}."
    )


def _no_space(path: Path, text: str) -> str:
    return (
        f"No space left on the device holding the request cache {path} ({text}). Free space there, or "
        f"{_NEXT}."
    )
