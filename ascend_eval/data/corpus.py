"""The documents a RAG pipeline retrieves from: checked once, wherever they come from (a job spec's
`dataset.corpus`, a corpus file, a built-in dataset's corpus, or the caller of the pipeline).

A document is `{"id": str, "title": str, "text": str}`: the id defaults to the document's position and
the title to "". Every other field is dropped: chunking, retrieval and the results read only these.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from ascend_eval.models.errors import DataError

_EXAMPLE = "{'id': 'doc-1', 'text': '...', 'title': '...'}"


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


def read_corpus(path: Path) -> list[dict[str, str]]:
    """The checked documents of a corpus file: a JSON list, `{"documents": [...]}`, or JSONL.

    Raises:
        DataError: the file cannot be read, is not UTF-8 or not valid JSON, or holds no list of
            documents; or a document is malformed (see `check_corpus`).
    """
    where = f"corpus file '{path}'"
    try:
        text = path.read_text(encoding="utf-8-sig")
    except OSError as e:
        raise DataError(f"Cannot read the {where}: {e.strerror}. Check dataset.corpus.") from None
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
