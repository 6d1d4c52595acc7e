"""Datasets that ship with the package, usable by name wherever a dataset is accepted."""

from __future__ import annotations

import json
from importlib.resources import files
from pathlib import Path
from typing import Any

BUILTIN_DATASETS: dict[str, str] = {
    "bilingual-example": "examples/bilingual_rag.json",
    "ascend-eval/rag-mini-en": "builtin/rag_mini_en.json",
    "ascend-eval/rag-mini-zh": "builtin/rag_mini_zh.json",
}
"""name -> file under `ascend_eval/data/`. All three were written for this project (Apache-2.0).

- `bilingual-example`: 16 questions (8 English, 8 Chinese), each with retrieved contexts, an answer (some
  faithful, some with planted errors) and a reference answer, in the ragas columnar format.
- `ascend-eval/rag-mini-en` / `ascend-eval/rag-mini-zh`: 12 questions with reference answers (and the ids of
  the documents that hold their facts) over a corpus of 14 documents about a fictional place (the harbour
  town Marrow Bay; the tea town 青川镇). No contexts and no answers: a job builds them with the RAG pipeline
  (chunk, embed, retrieve, rerank, generate). The corpus is the `.corpus.json` file beside the questions.
"""

_CORPUS_SUFFIX = ".corpus.json"


def builtin_dataset(name: str) -> Path | None:
    """The file of a built-in dataset, or None if `name` is not one."""
    if name not in BUILTIN_DATASETS:
        return None
    return Path(str(files("ascend_eval") / "data" / BUILTIN_DATASETS[name]))


def builtin_corpus(name: str) -> list[dict[str, Any]] | None:
    """The documents (`{"id", "title", "text"}`) of a built-in dataset, or None if it has no corpus.

    >>> docs = builtin_corpus("ascend-eval/rag-mini-en")
    >>> len(docs), sorted(docs[0])
    (14, ['id', 'text', 'title'])
    >>> builtin_corpus("bilingual-example") is None
    True
    """
    path = builtin_dataset(name)
    if path is None:
        return None
    corpus = path.with_name(path.name.removesuffix(".json") + _CORPUS_SUFFIX)
    if not corpus.is_file():
        return None
    return list(json.loads(corpus.read_text(encoding="utf-8"))["documents"])
