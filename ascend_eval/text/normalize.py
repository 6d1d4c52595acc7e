"""Unicode normalisation and punctuation handling that treat Chinese and full-width text as first-class.

Punctuation is recognised by Unicode category (every `P*` category), not by `string.punctuation`, which
only knows ASCII and so leaves "，。？「」" in place (HF evaluate's `exact_match` has that gap).
"""

from __future__ import annotations

import re
import unicodedata

_WHITESPACE = re.compile(r"\s+")
# Chinese and Japanese are written without spaces, so a space next to a Han or kana character carries no
# meaning: "2023 年" and "2023年" are the same answer.
_CJK_CLASS = "[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\U00020000-\U0002a6df]"  # kana, Han
_SPACE_NEXT_TO_CJK = re.compile(f"(?<={_CJK_CLASS}) | (?={_CJK_CLASS})")


def normalize(text: str) -> str:
    """NFKC-normalise, collapse every run of whitespace to one space, and strip.

    NFKC folds full-width Latin letters, digits and punctuation to their ASCII forms ("ＡＢＣ１２３！" ->
    "ABC123!"), the ideographic space to a plain space, and "…" to "...". The ideographic full stop "。"
    and the Chinese quotes “” have no compatibility form and stay as they are.

    Args:
        text: Any text.

    Returns:
        The normalised text.

    >>> normalize("  ＡＢＣ１２３！\\n\\t北京　欢迎你  ")
    'ABC123! 北京 欢迎你'
    >>> normalize("你好，世界。")
    '你好,世界。'
    """
    return _WHITESPACE.sub(" ", unicodedata.normalize("NFKC", text)).strip()


def is_punctuation(ch: str) -> bool:
    """Whether one character is punctuation: any Unicode `P*` category (connector, dash, open, close,
    initial and final quote, other).

    Symbols (`S*`: "$", "+", "~", "°") are not punctuation by this definition, although
    `string.punctuation` lists some of them.

    Args:
        ch: A single character.

    Returns:
        True for punctuation.

    Raises:
        ValueError: `ch` is not exactly one character.

    >>> [is_punctuation(c) for c in "，。？「」—…"]
    [True, True, True, True, True, True, True]
    >>> [is_punctuation(c) for c in "a中1 $+"]
    [False, False, False, False, False, False]
    """
    if len(ch) != 1:
        raise ValueError(
            f"is_punctuation takes one character, got {ch!r} ({len(ch)} characters). "
            "Call it per character, or use strip_punctuation(text) for a whole text."
        )
    return unicodedata.category(ch).startswith("P")


def strip_punctuation(text: str) -> str:
    """Remove every punctuation character (see `is_punctuation`), wherever it is. Nothing else changes.

    Args:
        text: Any text.

    Returns:
        The text without punctuation.

    >>> strip_punctuation("“你好！”他说，“再见。”")
    '你好他说再见'
    >>> strip_punctuation("Hello, world! (e.g. GPT-4)")
    'Hello world eg GPT4'
    """
    return "".join(ch for ch in text if not unicodedata.category(ch).startswith("P"))


def normalize_for_match(text: str) -> str:
    """A key for comparing short answers and entities: NFKC, casefolded, punctuation removed, whitespace
    collapsed, and spaces next to Han or kana characters removed.

    A point between two digits is kept, so "3.5" and "35" stay different; all other punctuation goes,
    including the hyphen in "GPT-4" and the thousands separator in "1,000".

    Args:
        text: An answer, an entity, or any short text.

    Returns:
        The comparison key ("" when nothing but punctuation and whitespace was given).

    >>> normalize_for_match("Ｅｉｆｆｅｌ　Ｔｏｗｅｒ！")
    'eiffel tower'
    >>> normalize_for_match("８８４８．８６ 米")
    '8848.86米'
    >>> normalize_for_match("“GPT-4”， 1,000 tokens")
    'gpt4 1000 tokens'
    >>> normalize_for_match("The U.S.") == normalize_for_match("the us")
    True
    """
    folded = unicodedata.normalize("NFKC", text).casefold()
    kept = []
    last = len(folded) - 1
    for i, ch in enumerate(folded):
        if unicodedata.category(ch).startswith("P"):
            is_decimal_point = (
                ch == "." and 0 < i < last and folded[i - 1].isdigit() and folded[i + 1].isdigit()
            )
            if not is_decimal_point:
                continue
        kept.append(ch)
    collapsed = _WHITESPACE.sub(" ", "".join(kept)).strip()
    return _SPACE_NEXT_TO_CJK.sub("", collapsed)
