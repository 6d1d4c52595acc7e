"""Language detection on mixed, short and tricky text."""

from __future__ import annotations

import pytest

from ascend_eval.text import cjk_share, detect_language


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("用 PyTorch 训练 BERT 模型需要多少显存？", "zh"),  # Latin product names inside Chinese
        ("什么是RAG？RAG是retrieval-augmented generation的缩写。", "zh"),
        ("The Forbidden City (故宫) is in Beijing.", "en"),  # a Chinese gloss inside English
        ("ＡＢＣ是什么意思？", "zh"),  # full-width Latin letters count as one word
        ("H₂O", "en"),
        ("日本の首都は東京です", "zh"),  # kana are not Han, but the kanji dominate: treated as CJK text
        ("서울은 한국의 수도입니다", "en"),  # Hangul is not Chinese
        ("", "en"),
        ("12345 ！？", "en"),
    ],
)
def test_detect_language(text, expected):
    assert detect_language(text) == expected


def test_default_applies_only_without_letters():
    assert detect_language("2024-01-01", default="zh") == "zh"
    assert detect_language("Paris", default="zh") == "en"


def test_share_counts_han_characters_and_latin_words():
    assert cjk_share("北京 Beijing") == pytest.approx(2 / 3)
    assert cjk_share("𠀀") == 1.0  # CJK Extension B
