"""Normalisation and punctuation by Unicode category, on Chinese, full-width and mixed text."""

from __future__ import annotations

import string

import pytest

from ascend_eval.text import is_punctuation, normalize, normalize_for_match, strip_punctuation


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("ＡＢＣ　１２３", "ABC 123"),  # full-width letters, digits and the ideographic space
        # The full-width comma and exclamation mark have ASCII compatibility forms.
        ("你好，世界！", "你好,世界!"),
        ("句号。引号“”不变", "句号。引号“”不变"),  # these have none and stay
        ("等等……", "等等......"),  # NFKC spells the ellipsis out
        ("  a \t\n b\u3000\u3000c  ", "a b c"),
        ("ﬁle ①", "file 1"),  # ligature and circled digit
        ("", ""),
    ],
)
def test_normalize(text, expected):
    assert normalize(text) == expected


def test_chinese_punctuation_that_string_punctuation_misses():
    chinese = "，。？！：；、“”‘’（）《》「」【】—…·"
    assert not any(ch in string.punctuation for ch in chinese)
    assert all(is_punctuation(ch) for ch in chinese)


@pytest.mark.parametrize("ch", ["$", "+", "~", "°", "€", "^", "|", "a", "中", "5", " ", "\n"])
def test_symbols_letters_digits_and_space_are_not_punctuation(ch):
    assert not is_punctuation(ch)


@pytest.mark.parametrize("bad", ["", "。。", "ab"])
def test_is_punctuation_wants_one_character(bad):
    with pytest.raises(ValueError, match="one character"):
        is_punctuation(bad)


def test_strip_punctuation_removes_every_punctuation_mark_and_nothing_else():
    assert (
        strip_punctuation("“爱因斯坦（Einstein）说：‘想象力比知识更重要。’”")
        == "爱因斯坦Einstein说想象力比知识更重要"
    )
    assert strip_punctuation("Price: $5 + tax, e.g. ~10%!") == "Price $5 + tax eg ~10"
    assert strip_punctuation("") == ""


@pytest.mark.parametrize(
    ("a", "b"),
    [
        ("Ｅｉｆｆｅｌ　Ｔｏｗｅｒ", "eiffel tower"),
        ("“巴黎”。", "巴黎"),
        ("2023 年", "2023年"),  # spaces next to Han carry no meaning
        ("OpenAI 在 2023年 发布了 GPT-4。", "openai在2023年发布了gpt4"),
        ("Straße", "STRASSE"),  # casefold, not lower
        ("  New   York ", "new york"),
        ("１，０００", "1000"),
    ],
)
def test_normalize_for_match_equates(a, b):
    assert normalize_for_match(a) == normalize_for_match(b)


@pytest.mark.parametrize(
    ("a", "b"),
    [
        ("3.5", "35"),  # a decimal point is kept
        ("New York", "Newyork"),  # whitespace between Latin words is collapsed, not removed
        ("8848.86米", "884886米"),
    ],
)
def test_normalize_for_match_keeps_apart(a, b):
    assert normalize_for_match(a) != normalize_for_match(b)


def test_normalize_for_match_of_punctuation_only_is_empty():
    assert normalize_for_match(" 。！？… ") == ""
    assert normalize_for_match("end.") == "end"  # a point not between two digits goes
    assert normalize_for_match(".5") == "5"
