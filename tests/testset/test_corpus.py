"""The corpus a test set is written from: each format read as documents, and every bad input an error that
names the problem before any model is asked anything."""

from __future__ import annotations

import json
import os
import re
import sys

import pytest

from ascend_eval.models.errors import ConfigError, DataError, MissingDependencyError
from ascend_eval.testset import generate, load_corpus
from ascend_eval.testset.corpus import pdf_reader

EN = "The harbour of Kelwick was dredged in 1931 so that larger trawlers could land their catch. " * 3
ZH = "青石镇的老码头建于1905年，当年主要用来装运木材和茶叶。后来码头改建成了渡口。" * 3


def write(path, text):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


@pytest.fixture
def folder(tmp_path):
    root = tmp_path / "docs"
    write(root / "intro.txt", EN)
    write(root / "guide" / "ferry.md", "# The Kelwick ferry\n\nThe ferry leaves at 8:00 every day.\n")
    write(
        root / "faq.jsonl",
        json.dumps({"id": "faq-1", "title": "Tides", "text": "High tide is at noon."})
        + "\n\n"
        + json.dumps("A bare string line is a document too.")
        + "\n",
    )
    write(root / "zh" / "码头.txt", ZH)
    write(root / "notes.docx", "not read")  # another kind: skipped
    write(root / ".hidden" / "secret.txt", "never read")  # hidden: skipped
    write(root / "blank.txt", "   \n")  # blank: skipped with a warning
    return root


def test_a_folder_of_txt_md_and_jsonl_files(folder):
    docs = load_corpus(folder)
    by_id = {d["id"]: d for d in docs}
    assert sorted(by_id) == ["faq-1", "faq.jsonl:3", "guide/ferry.md", "intro.txt", "zh/码头.txt"]
    assert by_id["guide/ferry.md"]["title"] == "The Kelwick ferry"  # a markdown file's first heading
    assert by_id["faq-1"] == {"id": "faq-1", "title": "Tides", "text": "High tide is at noon."}
    assert by_id["faq.jsonl:3"]["text"] == "A bare string line is a document too."
    assert by_id["zh/码头.txt"]["text"] == ZH
    assert load_corpus(str(folder)) == docs  # a path as a string reads the same


def test_one_file_a_list_of_strings_and_the_builtin_corpora(folder):
    assert [d["id"] for d in load_corpus(folder / "intro.txt")] == ["intro.txt"]
    assert [d["id"] for d in load_corpus(folder / "faq.jsonl")] == ["faq-1", "faq.jsonl:3"]
    assert load_corpus(["Cats purr.", "Dogs bark."])[1] == {"id": "1", "title": "", "text": "Dogs bark."}
    assert len(load_corpus("ascend-eval/rag-mini-en")) == len(load_corpus("ascend-eval/rag-mini-zh")) == 14
    corpus_file = write(folder.parent / "corpus.json", json.dumps({"documents": [{"id": "d", "text": "x"}]}))
    assert load_corpus(corpus_file) == [{"id": "d", "title": "", "text": "x"}]  # a job's corpus file


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (lambda tmp: tmp / "nowhere", "is not a folder, a file or a built-in corpus name"),
        (lambda tmp: (tmp / "empty").mkdir() or tmp / "empty", "holds no .txt, .md, .jsonl, .pdf file"),
        (lambda tmp: write(tmp / "d" / "pic.png", "x").parent, "(it has 1 file(s) of other kinds"),
        (lambda tmp: write(tmp / "d" / "a.txt", " \n").parent, "holds no text (every document is blank)"),
        (
            lambda tmp: write(tmp / "d" / "a.jsonl", '{"text": "ok"}\n{broken\n').parent,
            "Line 2 of the corpus",
        ),
        (lambda tmp: write(tmp / "d" / "a.jsonl", '{"title": "no text"}\n').parent, "is not a document"),
        (
            lambda tmp: write(tmp / "d" / "a.jsonl", '{"id": "x", "text": "a"}\n{"id": "x", "text": "b"}\n'),
            "share",
        ),
    ],
    ids=["missing", "empty-folder", "no-documents", "blank", "bad-jsonl", "no-text", "same-ids"],
)
def test_bad_corpora_are_named_errors(tmp_path, make, message):
    with pytest.raises(DataError, match=re.escape(message)):
        load_corpus(make(tmp_path))


def test_a_file_that_is_not_utf8_is_an_unreadable_file(tmp_path):
    (tmp_path / "d").mkdir()
    (tmp_path / "d" / "latin1.txt").write_bytes("Caf\xe9 au lait.".encode("latin-1"))
    with pytest.raises(DataError, match=r"latin1\.txt' is not UTF-8 text \(bad byte at offset 3\)"):
        load_corpus(tmp_path / "d")


@pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() == 0, reason="root reads any file")
def test_a_file_without_read_permission_is_an_unreadable_file(tmp_path):
    path = write(tmp_path / "d" / "locked.txt", EN)
    path.chmod(0)
    try:
        with pytest.raises(DataError, match=r"Cannot read the corpus file .*locked\.txt"):
            load_corpus(tmp_path / "d")
    finally:
        path.chmod(0o644)


def test_a_pdf_without_pypdf_names_the_install(tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "pypdf", None)  # as if not installed, wherever it is
    write(tmp_path / "d" / "a.txt", EN)
    (tmp_path / "d" / "report.pdf").write_bytes(b"%PDF-1.4 not really")
    with pytest.raises(MissingDependencyError, match="pip install pypdf"):
        load_corpus(tmp_path / "d")
    with pytest.raises(MissingDependencyError, match="pip install pypdf"):
        pdf_reader()


class Untouchable:
    """A judge and embedder that fail the test if anything reaches them."""

    model_id = "untouchable"

    def __init__(self):
        self.calls = []

    def generate(self, requests):
        raise AssertionError("the judge was asked")

    def classify(self, requests):
        raise AssertionError("the judge was asked")

    def embed(self, texts, *, kind="document"):
        raise AssertionError("the embedder was asked")


@pytest.mark.parametrize(
    ("corpus", "settings", "error", "message"),
    [
        ("EMPTY", {}, DataError, "holds no .txt"),
        ("LATIN1", {}, DataError, "is not UTF-8"),
        ([EN], {"size": 0}, ConfigError, "size=0; it must be an integer >= 1"),
        (["A short note."], {}, DataError, "holds 13 characters of text, less than one chunk"),
        ([EN], {"kinds": {"single": 1.0}}, ConfigError, "Did you mean 'single_hop'"),
        ([EN], {"language": "fr"}, ConfigError, "language='fr'"),
        ([EN], {"personas": [""]}, ConfigError, "personas"),
        ([EN], {"judge": 42}, ConfigError, "judge"),
    ],
    ids=[
        "empty-folder",
        "unreadable-file",
        "size-0",
        "smaller-than-a-chunk",
        "kind",
        "language",
        "persona",
        "model",
    ],
)
def test_bad_input_fails_before_any_model_is_asked(tmp_path, corpus, settings, error, message):
    if corpus == "EMPTY":
        (tmp_path / "empty").mkdir()
        corpus = tmp_path / "empty"
    elif corpus == "LATIN1":
        (tmp_path / "d").mkdir()
        (tmp_path / "d" / "x.txt").write_bytes(b"\xe9t\xe9")
        corpus = tmp_path / "d"
    models = Untouchable()
    kwargs = {"size": 3, "judge": models, "embedder": models, "cache_dir": False, **settings}
    with pytest.raises(error, match=message):
        generate(corpus, **kwargs)
