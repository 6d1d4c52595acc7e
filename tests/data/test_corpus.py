"""`check_corpus` and `read_corpus`: the one check of the documents a RAG pipeline retrieves from, used
by jobs (dataset.corpus, corpus files) and by the pipeline itself."""

from __future__ import annotations

import json

import pytest

from ascend_eval.data.corpus import check_corpus, read_corpus
from ascend_eval.models.errors import DataError

DOCS = [{"id": "a", "text": "Paris is in France.", "title": "P", "url": "x"}, {"text": "Tea."}]
CHECKED = [{"id": "a", "title": "P", "text": "Paris is in France."}, {"id": "1", "title": "", "text": "Tea."}]


def test_documents_are_normalised_to_id_title_text() -> None:
    assert check_corpus(DOCS) == CHECKED
    assert check_corpus([{"id": 3, "text": "x", "title": None}]) == [{"id": "3", "title": "", "text": "x"}]


@pytest.mark.parametrize(
    ("corpus", "match"),
    [
        ([], "non-empty list"),
        ("docs.json", "non-empty list"),
        ({"documents": []}, "non-empty list"),
        ([{"text": "a"}, {"id": "x"}], "document 1 of the dataset.corpus"),
        ([{"text": "   "}], "document 0"),
        ([{"text": 5}], "document 0"),
        (["just text"], "document 0"),
        ([{"id": "a", "text": "x"}, {"id": "a", "text": "y"}], "share the id 'a'"),
    ],
)
def test_malformed_corpora_name_the_document_and_the_fix(corpus, match) -> None:
    with pytest.raises(DataError, match=match):
        check_corpus(corpus, "dataset.corpus")


def test_corpus_files_json_wrapped_and_jsonl(tmp_path) -> None:
    plain = tmp_path / "docs.json"
    plain.write_text(json.dumps(DOCS), encoding="utf-8")
    wrapped = tmp_path / "wrapped.json"
    wrapped.write_text(json.dumps({"documents": DOCS}), encoding="utf-8")
    lines = tmp_path / "docs.jsonl"
    lines.write_text("\n".join(json.dumps(d) for d in DOCS) + "\n\n", encoding="utf-8")
    assert read_corpus(plain) == read_corpus(wrapped) == read_corpus(lines) == CHECKED


def test_unreadable_corpus_files_are_data_errors(tmp_path) -> None:
    with pytest.raises(DataError, match="Cannot read the corpus file"):
        read_corpus(tmp_path / "missing.json")
    bad = tmp_path / "bad.json"
    bad.write_text("[{", encoding="utf-8")
    with pytest.raises(DataError, match="not valid JSON"):
        read_corpus(bad)
    deep = tmp_path / "deep.json"
    deep.write_text("[" * 100_000, encoding="utf-8")
    with pytest.raises(DataError, match=r"not valid JSON|too deeply"):
        read_corpus(deep)
    latin = tmp_path / "latin.json"
    latin.write_bytes(b'[{"text": "caf\xe9"}]')
    with pytest.raises(DataError, match="not UTF-8"):
        read_corpus(latin)
    scalar = tmp_path / "scalar.json"
    scalar.write_text('{"docs": 1}', encoding="utf-8")
    with pytest.raises(DataError, match="list of documents"):
        read_corpus(scalar)
