"""Pick the prompt language of a sample from its text."""

from __future__ import annotations

import unicodedata
from typing import Literal

Language = Literal["en", "zh"]

# Han ideographs (CJK Unified, Extension A, Compatibility). Kana and Hangul are not Chinese and do not count.
_HAN_RANGES = ((0x4E00, 0x9FFF), (0x3400, 0x4DBF), (0xF900, 0xFAFF), (0x20000, 0x2A6DF))

ZH_THRESHOLD = 0.3
"""A text whose units are at least this share Han characters is treated as Chinese."""


def _is_han(ch: str) -> bool:
    cp = ord(ch)
    return any(lo <= cp <= hi for lo, hi in _HAN_RANGES)


def cjk_share(text: str) -> float:
    """Share of Han characters among the text's units: each Han character is one unit and so is each run
    of other letters (a word). Counting Latin letters one by one would let "用 PyTorch 训练 BERT 模型"
    look English; counted by words it is clearly Chinese. 0.0 when the text has no letters.

    >>> cjk_share("北京是中国的首都")
    1.0
    >>> cjk_share("Paris is the capital.")
    0.0
    >>> round(cjk_share("用 PyTorch 训练 BERT 模型"), 2)
    0.71
    """
    units = han = 0
    in_word = False
    for ch in text:
        if _is_han(ch):
            units += 1
            han += 1
            in_word = False
        elif unicodedata.category(ch).startswith("L"):
            units += not in_word
            in_word = True
        else:
            in_word = False
    return han / units if units else 0.0


def detect_language(text: str, *, default: Language = "en") -> Language:
    """ "zh" when the text is mostly Chinese, else "en"; `default` when it has no letters at all.

    >>> detect_language("爱因斯坦出生于德国乌尔姆。")
    'zh'
    >>> detect_language("Einstein was born in Ulm.")
    'en'
    >>> detect_language("2024", default="zh")
    'zh'
    """
    if not any(unicodedata.category(ch).startswith("L") for ch in text):
        return default
    return "zh" if cjk_share(text) >= ZH_THRESHOLD else "en"
