"""Split documents into overlapping chunks measured in characters or tokens, without cutting words.

A chunk ends, in order of preference, at a sentence end in its second half (sentences from
`ascend_eval.text.split_sentences`, so `。！？` count as well as `.!?`), at a word boundary, or exactly at
the size limit (a single word longer than a chunk). Word boundaries come from jieba for text with Han
characters, which has no spaces between words, and from whitespace otherwise. The next chunk starts at the
first word boundary that repeats at most `overlap` units of the previous one.
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from ascend_eval.data.corpus import check_corpus
from ascend_eval.errors import ConfigError, MissingDependencyError
from ascend_eval.text.language import cjk_share
from ascend_eval.text.sentences import split_sentences
from ascend_eval.text.truncate import NIM_CHARACTER_LIMIT, truncate_by_chars

_WORD = re.compile(r"\S+")


@dataclass(frozen=True)
class Chunk:
    """One piece of a document, as retrieved and shown to the RAG model."""

    doc_id: str
    index: int
    """Position of the chunk within its document."""
    text: str
    start: int
    """Character offset of `text` in the (possibly truncated) document."""
    end: int
    title: str = ""


class OffsetTokenizer(Protocol):
    """A Hugging Face fast tokenizer: called on a text, it returns each token's character offsets."""

    def __call__(self, text: str, *, add_special_tokens: bool, return_offsets_mapping: bool) -> Any: ...


class _Chars:
    """Length in code points."""

    def __init__(self, n: int) -> None:
        self.n = n

    def limit(self, start: int, budget: int) -> int:
        """The furthest end such that text[start:end] holds at most `budget` units."""
        return min(self.n, start + budget)

    def back(self, end: int, budget: int) -> int:
        """The earliest start such that text[start:end] holds at most `budget` units."""
        return max(0, end - budget)


class _Tokens:
    """Length in tokens of the whole document's tokenization: a span holds the tokens that start in it."""

    def __init__(self, text: str, tokenizer: OffsetTokenizer) -> None:
        self.n = len(text)
        try:
            encoded = tokenizer(text, add_special_tokens=False, return_offsets_mapping=True)
        except NotImplementedError as e:  # slow (Python) tokenizers cannot report offsets
            raise ConfigError(
                f"chunk_unit='tokens' needs a fast tokenizer that reports character offsets; "
                f"{type(tokenizer).__name__} does not ({e}). Use a tokenizer.json-based tokenizer or "
                "chunk_unit='chars'."
            ) from e
        # Tokens that cover no characters (some tokenizers emit empty pieces) do not count.
        self.starts = sorted(s for s, e in encoded["offset_mapping"] if e > s)

    def limit(self, start: int, budget: int) -> int:
        first = bisect.bisect_left(self.starts, start)
        stop = first + budget
        return self.starts[stop] if stop < len(self.starts) else self.n

    def back(self, end: int, budget: int) -> int:
        past = bisect.bisect_left(self.starts, end)
        first = past - budget
        return self.starts[first] if first > 0 else 0


def _sentence_ends(text: str) -> list[int]:
    ends, pos = [], 0
    for sentence in split_sentences(text):
        found = text.find(sentence, pos)
        if found < 0:  # cannot happen for stripped substrings; skip rather than guess
            continue
        pos = found + len(sentence)
        ends.append(pos)
    return ends


def _word_bounds(text: str) -> list[int]:
    """Every position between two words (or a word and punctuation or space)."""
    if cjk_share(text) > 0:
        from ascend_eval.text.segment import default_segmenter

        spans = default_segmenter().tokenizer.tokenize(text)
        bounds = {p for _, s, e in spans for p in (s, e)}
    else:
        bounds = {p for m in _WORD.finditer(text) for p in (m.start(), m.end())}
    return sorted(bounds)


def _last_in(sorted_points: Sequence[int], low: int, high: int) -> int | None:
    """The largest point p with low < p <= high."""
    i = bisect.bisect_right(sorted_points, high) - 1
    return sorted_points[i] if i >= 0 and sorted_points[i] > low else None


def _first_in(sorted_points: Sequence[int], low: int, high: int) -> int | None:
    """The smallest point p with low <= p < high."""
    i = bisect.bisect_left(sorted_points, low)
    return sorted_points[i] if i < len(sorted_points) and sorted_points[i] < high else None


def chunk_spans(
    text: str, *, size: int, overlap: int = 0, tokenizer: OffsetTokenizer | None = None
) -> list[tuple[int, int]]:
    """Character spans `[start, end)` of the chunks of `text`, stripped of surrounding whitespace.

    Args:
        text: one document, any language.
        size: longest chunk, in characters, or in tokens when `tokenizer` is given.
        overlap: at most this many units of a chunk are repeated at the start of the next; < `size`.
        tokenizer: measure in its tokens (a Hugging Face fast tokenizer) instead of characters.

    Returns:
        The spans in document order; `[]` for a text of only whitespace.

    Raises:
        ConfigError: `size` < 1, `overlap` outside [0, size), or a tokenizer without offsets.

    >>> text = "One two three. Four five six. Seven."
    >>> [text[s:e] for s, e in chunk_spans(text, size=16)]
    ['One two three.', 'Four five six.', 'Seven.']
    >>> [text[s:e] for s, e in chunk_spans(text, size=16, overlap=6)]
    ['One two three.', 'three. Four five', 'five six. Seven.']
    """
    if size < 1 or not 0 <= overlap < size:
        raise ConfigError(f"chunk size={size}, overlap={overlap}: need size >= 1 and 0 <= overlap < size.")
    measure: _Chars | _Tokens = _Chars(len(text)) if tokenizer is None else _Tokens(text, tokenizer)
    sentences = _sentence_ends(text)
    words = _word_bounds(text)
    word_set = set(words)
    spans: list[tuple[int, int]] = []
    n = len(text)
    start, previous_end = _skip_space(text, 0), 0
    while start < n:
        limit = measure.limit(start, size)
        if limit >= n:
            end = n
        else:
            # A chunk must reach past the previous one, or the overlap would repeat it forever.
            floor = max(previous_end, start)
            half = start + (limit - start) // 2
            end = (
                _last_in(sentences, max(floor, half), limit)
                or _last_in(words, floor, limit)
                or max(limit, floor + 1)
            )
        spans.append(_strip(text, start, end))
        if end >= n:
            break
        following = end
        if overlap:
            earliest = max(measure.back(end, overlap), start + 1)
            back = _first_in(words, earliest, end)
            if back is None and end == limit and end not in word_set:
                back = earliest if earliest < end else None  # a word cut in two: overlap by units
            following = back if back is not None else end
        start, previous_end = _skip_space(text, following), end
    return [(s, e) for s, e in spans if e > s]


def _skip_space(text: str, i: int) -> int:
    while i < len(text) and text[i].isspace():
        i += 1
    return i


def _strip(text: str, start: int, end: int) -> tuple[int, int]:
    while start < end and text[start].isspace():
        start += 1
    while end > start and text[end - 1].isspace():
        end -= 1
    return start, end


def chunk_text(
    text: str, *, size: int, overlap: int = 0, tokenizer: OffsetTokenizer | None = None
) -> list[str]:
    """The chunks of `text` as strings; see `chunk_spans`.

    >>> chunk_text("青川镇是一座山区小镇。小镇始建于1584年。最早的居民是制茶人。", size=12)
    ['青川镇是一座山区小镇。', '小镇始建于1584年。', '最早的居民是制茶人。']
    >>> chunk_text("abcdefghij", size=4, overlap=1)
    ['abcd', 'defg', 'ghij']
    """
    return [text[s:e] for s, e in chunk_spans(text, size=size, overlap=overlap, tokenizer=tokenizer)]


def chunk_corpus(
    corpus: Sequence[Mapping[str, Any]],
    *,
    size: int,
    overlap: int,
    tokenizer: OffsetTokenizer | None = None,
    truncate: str | None = None,
    max_document_chars: int = NIM_CHARACTER_LIMIT,
) -> list[Chunk]:
    """Chunk every document of a corpus, in corpus order.

    Args:
        corpus: documents `{"id", "text", "title" (optional)}`.
        size, overlap, tokenizer: see `chunk_spans`.
        truncate: "end" keeps the first `max_document_chars` characters of a longer document, "start" the
            last ones (NeMo Evaluator's `truncate_long_documents`); None keeps it whole.
        max_document_chars: the cut length for `truncate`.

    Returns:
        The chunks of all documents.

    Raises:
        DataError: see `check_corpus`.
    """
    chunks: list[Chunk] = []
    for doc in check_corpus(corpus):
        text = doc["text"]
        if truncate is not None:
            text = truncate_by_chars(text, max_document_chars, side=truncate)  # type: ignore[arg-type]
        for index, (s, e) in enumerate(chunk_spans(text, size=size, overlap=overlap, tokenizer=tokenizer)):
            chunks.append(Chunk(doc["id"], index, text[s:e], s, e, doc["title"]))
    return chunks


def load_tokenizer(source: Any) -> OffsetTokenizer:
    """A tokenizer object as is, or a fast tokenizer loaded from a local directory.

    Raises:
        ConfigError: the directory does not exist.
        MissingDependencyError: transformers is not installed.
    """
    if not isinstance(source, str | Path):
        return source  # type: ignore[no-any-return]
    path = Path(source).expanduser()
    if not path.is_dir():
        raise ConfigError(
            f"tokenizer={str(source)!r} is not a local directory. Pass a model or tokenizer directory, "
            "a tokenizer object, or use chunk_unit='chars'."
        )
    try:
        from transformers import AutoTokenizer
    except ImportError as e:
        raise MissingDependencyError(
            "chunk_unit='tokens' with a tokenizer directory needs transformers: "
            "pip install 'ascend-eval[torch]'."
        ) from e
    return AutoTokenizer.from_pretrained(str(path), local_files_only=True)  # type: ignore[no-any-return]
