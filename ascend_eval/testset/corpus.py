"""The user's documents as a corpus: a folder of `.txt`, `.md`, `.jsonl` and `.pdf` files, one file, a list
of strings, or a built-in corpus name. Everything is read and checked here, before any model loads.

Each file of a folder is one document whose id is its path inside the folder (`guide/install.md`), except
a `.jsonl` file, whose every line is one document (`{"text": ..., "id": ..., "title": ...}`, or a bare
JSON string; a line without an id gets `file.jsonl:LINE`). A `.md` file's title is its first heading.
Hidden files and folders (a name starting with ".") and files of other kinds are skipped; a blank file is
skipped with a warning. PDF text comes from `pypdf`, an optional dependency.

The files are read whole, so together they may hold at most the corpus limit
(`ascend_eval.data.corpus.corpus_limit`, 256 MiB unless `ASCEND_EVAL_MAX_CORPUS_MB` says otherwise).
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from ascend_eval.data.corpus import (
    check_corpus,
    check_corpus_size,
    corpus_limit,
    read_corpus,
    require_regular_file,
)
from ascend_eval.errors import DataError, MissingDependencyError
from ascend_eval.examples import BUILTIN_DATASETS, builtin_corpus

logger = logging.getLogger("ascend_eval.testset")

SUFFIXES = (".txt", ".md", ".jsonl", ".pdf")
"""The kinds of file a corpus folder is read for."""

_HEADING = re.compile(r"^#{1,6}\s+(.+?)\s*#*\s*$", re.MULTILINE)
_FIX = "Fix or remove the file, or point at another corpus."


def builtin_corpus_names() -> list[str]:
    """The built-in datasets that come with a corpus."""
    return [name for name in BUILTIN_DATASETS if builtin_corpus(name) is not None]


def load_corpus(source: Any) -> list[dict[str, str]]:
    """The documents of `source` as `{"id", "title", "text"}`, checked.

    Args:
        source: a folder (read recursively), one `.txt` / `.md` / `.jsonl` / `.pdf` / `.json` file (a
            `.json` file is a corpus file as a job's `dataset.corpus` takes it), a built-in corpus name
            (`ascend-eval/rag-mini-en`, `ascend-eval/rag-mini-zh`), a list of strings (ids are their
            positions), or a list of `{"text", "id", "title"}` mappings.

    Raises:
        DataError: no such folder, file or name; a folder with no document in it; a file that cannot be
            read (not UTF-8, malformed JSON Lines, not a regular file, over the size limit); no text at all.
        MissingDependencyError: a `.pdf` file and no `pypdf` installed.

    >>> [d["id"] for d in load_corpus(["Cats purr.", "Dogs bark."])]
    ['0', '1']
    >>> len(load_corpus("ascend-eval/rag-mini-zh"))
    14
    """
    if isinstance(source, str) and not Path(source).exists() and (docs := builtin_corpus(source)) is not None:
        return check_corpus(docs, f"built-in corpus {source!r}")
    if isinstance(source, str | Path):
        path = Path(source).expanduser()
        if path.is_dir():
            return _read_folder(path)
        if path.exists():
            if path.suffix.lower() == ".json":
                return read_corpus(path)
            return _checked(_read_files([path], path.parent), f"corpus file '{path}'")
        raise DataError(
            f"The corpus {str(source)!r} is not a folder, a file or a built-in corpus name "
            f"({', '.join(builtin_corpus_names())}). Pass a folder of .txt/.md/.jsonl/.pdf files, one such "
            "file, or a list of texts."
        )
    if isinstance(source, Sequence) and not isinstance(source, bytes) and source:
        if all(isinstance(item, str) for item in source):
            return check_corpus([{"text": text} for text in source], "corpus list")
        if all(isinstance(item, Mapping) for item in source):
            return check_corpus(source, "corpus list")
    raise DataError(
        f"The corpus must be a folder, a file, a built-in corpus name or a non-empty list of texts; got "
        f"{type(source).__name__} {str(source)[:60]!r}."
    )


def _checked(documents: list[dict[str, Any]], where: str) -> list[dict[str, str]]:
    if not documents:
        raise DataError(f"The {where} holds no text (every document is blank). Add documents with text.")
    return check_corpus(documents, where)


def _read_folder(folder: Path) -> list[dict[str, str]]:
    files, others = [], 0
    for path in sorted(folder.rglob("*")):
        parts = path.relative_to(folder).parts
        if any(part.startswith(".") for part in parts) or not path.is_file():
            continue
        if path.suffix.lower() in SUFFIXES:
            files.append(path)
        else:
            others += 1
    if not files:
        also = f" (it has {others} file(s) of other kinds, which are skipped)" if others else ""
        raise DataError(
            f"The corpus folder '{folder}' holds no {', '.join(SUFFIXES)} file{also}. Add your documents "
            "there, or point at another folder."
        )
    if others:
        logger.info("Corpus folder %s: %d file(s) of other kinds skipped.", folder, others)
    return _checked(_read_files(files, folder), f"corpus folder '{folder}'")


def _read_files(files: Sequence[Path], root: Path) -> list[dict[str, Any]]:
    """The documents of every file, reading at most the corpus limit in all."""
    if any(p.suffix.lower() == ".pdf" for p in files):
        pdf_reader()  # a missing dependency is said before any file is read
    limit, read, documents, blank = corpus_limit(), 0, [], []
    for path in files:
        name = path.relative_to(root).as_posix()
        where = f"corpus file '{path}'"
        try:
            info = path.stat()
        except OSError as e:
            raise DataError(f"Cannot read the {where}: {e.strerror or e}. {_FIX}") from None
        require_regular_file(info, where, _FIX)
        read += info.st_size
        check_corpus_size(read, f"corpus (the files up to '{path}')", limit)
        found = _read_one(path, name, where)
        blank += [name] if not found else []
        documents += found
    if blank:
        logger.warning("%d corpus file(s) hold no text and are skipped: %s", len(blank), ", ".join(blank[:5]))
    return documents


def _read_one(path: Path, name: str, where: str) -> list[dict[str, Any]]:
    suffix = path.suffix.lower()
    if suffix == ".pdf":
        text = _pdf_text(path, where)
        return [{"id": name, "text": text}] if text.strip() else []
    try:
        raw = path.read_bytes()
    except OSError as e:
        raise DataError(f"Cannot read the {where}: {e.strerror or e}. {_FIX}") from None
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as e:
        raise DataError(
            f"The {where} is not UTF-8 text (bad byte at offset {e.start}). Re-save it as UTF-8, or "
            "remove it."
        ) from None
    if suffix == ".jsonl":
        return _jsonl_documents(text, name, where)
    if not text.strip():
        return []
    heading = _HEADING.search(text) if suffix == ".md" else None
    return [{"id": name, "title": heading.group(1) if heading else "", "text": text}]


def _jsonl_documents(text: str, name: str, where: str) -> list[dict[str, Any]]:
    documents = []
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            item = json.loads(line)
        except (json.JSONDecodeError, RecursionError) as e:
            why = e.msg if isinstance(e, json.JSONDecodeError) else "nested too deeply"
            raise DataError(f"Line {number} of the {where} is not valid JSON ({why}). {_FIX}") from None
        if isinstance(item, str):
            item = {"text": item}
        if not isinstance(item, Mapping) or not isinstance(item.get("text"), str):
            raise DataError(
                f'Line {number} of the {where} is not a document: each line must be {{"text": "...", "id": '
                f'"...", "title": "..."}} (id and title optional) or a JSON string. {_FIX}'
            )
        if not item["text"].strip():
            continue
        documents.append({"id": f"{name}:{number}", **item})
    return documents


def pdf_reader() -> Any:
    """`pypdf.PdfReader`.

    Raises:
        MissingDependencyError: pypdf is not installed.
    """
    try:
        from pypdf import PdfReader
    except ImportError as e:
        raise MissingDependencyError(
            "The corpus has .pdf files, whose text is read with pypdf, which is not installed: "
            "pip install pypdf (or convert the PDFs to .txt, or remove them from the folder)."
        ) from e
    return PdfReader


def _pdf_text(path: Path, where: str) -> str:
    try:
        reader = pdf_reader()(str(path))
        return "\n\n".join(page.extract_text() or "" for page in reader.pages)
    except MissingDependencyError:
        raise
    except Exception as e:  # pypdf raises its own errors, and OSError, for a damaged or encrypted file
        raise DataError(f"Cannot read the text of the {where}: {type(e).__name__}: {e}. {_FIX}") from None
