"""The documents a RAG pipeline retrieves from: checked once, wherever they come from (a job spec's
`dataset.corpus`, a corpus file, a built-in dataset's corpus, or the caller of the pipeline).

A document is `{"id": str, "title": str, "text": str}`: the id defaults to the document's position and
the title to "". Every other field is dropped: chunking, retrieval and the results read only these.

A corpus file is read whole, so it must be a regular file of at most `MAX_CORPUS_MB` MiB
(`ASCEND_EVAL_MAX_CORPUS_MB` overrides it): a device such as /dev/zero or a FIFO never ends, and a job
spec may come from a client of `ascend-eval serve`. Both are refused before a byte is read.
"""

from __future__ import annotations

import json
import os
import stat
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from ascend_eval.errors import ConfigError, DataError

MAX_CORPUS_MB = 256
"""The largest corpus file read, in MiB (the documents, their chunks and embeddings then take several
times that in memory). `ASCEND_EVAL_MAX_CORPUS_MB` overrides it where the job runs."""
CORPUS_LIMIT_ENV = "ASCEND_EVAL_MAX_CORPUS_MB"

_EXAMPLE = "{'id': 'doc-1', 'text': '...', 'title': '...'}"
_KINDS = (
    (stat.S_ISDIR, "a folder"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISFIFO, "a FIFO (named pipe)"),
    (stat.S_ISSOCK, "a socket"),
)


def corpus_limit() -> int:
    """The largest corpus file read, in bytes: `ASCEND_EVAL_MAX_CORPUS_MB` MiB, else `MAX_CORPUS_MB`.

    Raises:
        ConfigError: the variable is not a positive number.
    """
    raw = os.environ.get(CORPUS_LIMIT_ENV, "").strip()
    if not raw:
        return MAX_CORPUS_MB * 1024 * 1024
    try:
        megabytes = float(raw)
    except ValueError:
        megabytes = 0.0
    if not 0 < megabytes < float("inf"):
        raise ConfigError(f"{CORPUS_LIMIT_ENV}={raw!r} must be a positive number of MiB, e.g. 512.")
    return max(1, int(megabytes * 1024 * 1024))


def require_regular_file(info: os.stat_result, where: str, fix: str) -> None:
    """Refuse what `info` describes unless it is a regular file, naming what it is instead.

    Raises:
        DataError: a folder, device, FIFO or socket; the message names `where` and ends with `fix`.
    """
    if stat.S_ISREG(info.st_mode):
        return
    kind = next((name for test, name in _KINDS if test(info.st_mode)), "not a regular file")
    raise DataError(
        f"The {where} is {kind}, not a regular file, so it is not read (a device or a FIFO never ends, a "
        f"folder holds no data). {fix}"
    )


def check_corpus_size(size: int, where: str, limit: int | None = None) -> None:
    """Refuse a corpus file of `size` bytes over `limit` (default `corpus_limit()`).

    Raises:
        DataError: over the limit; the message names `where`, both sizes and how to raise the limit.
    """
    limit = corpus_limit() if limit is None else limit
    if size > limit:
        raise DataError(
            f"The {where} is {size:,} bytes, over the corpus limit of {limit:,} bytes, so it is not read. "
            f"Split it or pass fewer documents, or raise the limit where the job runs: export "
            f"{CORPUS_LIMIT_ENV}=<MiB> (default {MAX_CORPUS_MB})."
        )


def check_corpus(corpus: Any, where: str = "RAG corpus") -> list[dict[str, str]]:
    """The documents as `{"id", "title", "text"}`, ids defaulting to their position.

    Args:
        corpus: a list of document mappings.
        where: how messages name the corpus, e.g. "dataset.corpus" or "corpus file 'docs.json'".

    Raises:
        DataError: the corpus is not a non-empty list, a document is not a mapping or has no non-blank
            'text' string, or two documents share an id. The message names the
            document and the fix.

    >>> check_corpus([{"text": "Paris is in France."}, {"id": 7, "text": "Tea.", "title": "T"}])
    [{'id': '0', 'title': '', 'text': 'Paris is in France.'}, {'id': '7', 'title': 'T', 'text': 'Tea.'}]
    """
    if isinstance(corpus, str | bytes) or not isinstance(corpus, Sequence) or not corpus:
        raise DataError(
            f"The {where} must be a non-empty list of documents like {_EXAMPLE}; got "
            f"{type(corpus).__name__} {str(corpus)[:60]!r}."
        )
    documents: list[dict[str, str]] = []
    seen: set[str] = set()
    for i, doc in enumerate(corpus):
        text = doc.get("text") if isinstance(doc, Mapping) else None
        if not isinstance(text, str) or not text.strip():
            raise DataError(
                f"Corpus document {i} of the {where} ({str(doc)[:60]!r}) has no 'text' string. Every "
                f"document needs a non-empty 'text' (with optional 'id' and 'title'), e.g. {_EXAMPLE}."
            )
        assert isinstance(doc, Mapping)
        doc_id = str(doc.get("id", i))
        if doc_id in seen:
            raise DataError(
                f"Corpus documents of the {where} share the id {doc_id!r}. Give every document its own id."
            )
        seen.add(doc_id)
        documents.append({"id": doc_id, "title": str(doc.get("title") or ""), "text": text})
    return documents


def read_corpus(path: Path, *, max_bytes: int | None = None) -> list[dict[str, str]]:
    """The checked documents of a corpus file: a JSON list, `{"documents": [...]}`, or JSONL.

    Args:
        path: the file.
        max_bytes: the largest file read (default `corpus_limit()`).

    Raises:
        DataError: the file cannot be read, is not a regular file, is over the size limit, is not UTF-8
            or not valid JSON, or holds no list of documents; or a document is malformed (see
            `check_corpus`). Nothing is read from a file that is not regular or too big.
    """
    where = f"corpus file '{path}'"
    limit = corpus_limit() if max_bytes is None else max_bytes
    try:
        # O_NONBLOCK: opening a FIFO returns at once instead of waiting for a writer; the descriptor's
        # own stat then says what was opened, whatever the path pointed to a moment before.
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0))
    except OSError as e:
        raise DataError(f"Cannot read the {where}: {e.strerror}. Check dataset.corpus.") from None
    try:
        info = os.fstat(fd)
        require_regular_file(info, where, "Point dataset.corpus at a JSON or JSONL file of documents.")
        check_corpus_size(info.st_size, where, limit)
        with os.fdopen(fd, "rb", closefd=False) as file:
            raw = file.read(limit + 1)  # never more than the limit, even from a file still growing
    except OSError as e:  # a file the system will not read, e.g. /proc/self/mem (EIO)
        raise DataError(f"Cannot read the {where}: {e.strerror or e}. Check dataset.corpus.") from None
    finally:
        os.close(fd)
    check_corpus_size(len(raw), where, limit)
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as e:
        raise DataError(
            f"The {where} is not UTF-8 text (bad byte at offset {e.start}). Re-save it as UTF-8."
        ) from None
    try:
        if path.suffix.lower() == ".jsonl":
            data: Any = [json.loads(line) for line in text.splitlines() if line.strip()]
        else:
            data = json.loads(text)
    except json.JSONDecodeError as e:
        raise DataError(f"The {where} is not valid JSON: {e.msg} at line {e.lineno}.") from None
    except RecursionError:
        raise DataError(f"The {where} nests JSON too deeply to read. Store documents flat.") from None
    if isinstance(data, dict) and isinstance(data.get("documents"), list):
        data = data["documents"]
    if not isinstance(data, list):
        raise DataError(f'The {where} must hold a list of documents or {{"documents": [...]}}.')
    return check_corpus(data, where)
