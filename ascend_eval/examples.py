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

- `bilingual-example`: 8 questions (4 English, then 4 Chinese), each asked twice, a good row and then a flawed
  row, with retrieved contexts, an answer and a reference answer, in the ragas columnar format. The flaw
  alternates: in the 1st and 3rd pair of each language the flawed row's answer contradicts its contexts and
  the reference (what faithfulness, answer correctness and accuracy should see); in the 2nd and 4th the answer
  is kept and the retrieval is flawed: the context that holds the fact is swapped for an off-topic one (what
  the context metrics and faithfulness should see). Every metric should score a good row at least as high as
  its flawed twin; docs/api.md says which of them the default tiny judge tells apart.
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
