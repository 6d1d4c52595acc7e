"""The on-disk request cache: every answered request, keyed by a hash of its content and the model.

An interrupted run resumes without recomputing (each batch is committed as soon as it returns), and a
re-run with one metric added only pays for that metric. SQLite in WAL mode: one file, safe against a kill
mid-write, readable while a run is going on.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
from collections.abc import Iterable, Sequence
from dataclasses import asdict
from pathlib import Path

from ascend_eval.engine.codecs import Result, codec_for
from ascend_eval.models.base import Request

CACHE_FORMAT = 1
"""Bumped when the stored encoding changes; part of every key, so old entries are simply not found."""


def request_key(request: Request, model_id: str) -> str:
    """Content hash of a request as sent to a given model.

    Covers the model identity, the prompt tag (name@version), the full rendered input and every decoding
    parameter, so any change to any of them is a different key.
    """
    payload = {"format": CACHE_FORMAT, "model": model_id, "type": type(request).__name__, **asdict(request)}
    text = json.dumps(payload, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()


class RequestCache:
    """Stores answered requests by key. `path=None` keeps nothing (a cache that always misses)."""

    def __init__(self, path: Path | str | None) -> None:
        self.path = None if path is None else Path(path)
        self._db: sqlite3.Connection | None = None
        if self.path is not None:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._db = sqlite3.connect(self.path)
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute("PRAGMA synchronous=NORMAL")
            self._db.execute(
                "CREATE TABLE IF NOT EXISTS results (key TEXT PRIMARY KEY, tag TEXT, body TEXT, blob BLOB)"
            )
            self._db.commit()

    @property
    def enabled(self) -> bool:
        return self._db is not None

    def get_many(self, items: Sequence[tuple[str, Request]]) -> dict[str, Result]:
        """The cached results among `items` (pairs of key and request), by key."""
        if self._db is None or not items:
            return {}
        found: dict[str, Result] = {}
        requests = dict(items)
        keys = list(requests)
        # SQLite limits the number of bound parameters per statement; look up in slices.
        for start in range(0, len(keys), 500):
            chunk = keys[start : start + 500]
            marks = ",".join("?" * len(chunk))
            for key, body, blob in self._db.execute(
                f"SELECT key, body, blob FROM results WHERE key IN ({marks})", chunk
            ):
                request = requests[key]
                found[key] = codec_for(request).decode(request, body, blob)
        return found

    def put_many(self, items: Iterable[tuple[str, Request, Result]]) -> None:
        """Store results and commit at once, so a kill right after loses nothing already answered."""
        if self._db is None:
            return
        rows = []
        for key, request, result in items:
            body, blob = codec_for(request).encode(result)
            rows.append((key, getattr(request, "tag", ""), body, blob))
        self._db.executemany("INSERT OR REPLACE INTO results VALUES (?, ?, ?, ?)", rows)
        self._db.commit()

    def __len__(self) -> int:
        if self._db is None:
            return 0
        return int(self._db.execute("SELECT COUNT(*) FROM results").fetchone()[0])

    def close(self) -> None:
        if self._db is not None:
            self._db.close()
            self._db = None

    def __enter__(self) -> RequestCache:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
