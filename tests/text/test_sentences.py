"""Sentence splitting on tricky Chinese, English and mixed text."""

from __future__ import annotations

import pytest

from ascend_eval.text import split_sentences


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        # Chinese terminators split wherever they stand; the punctuation stays with its sentence.
        ("我爱北京。你呢？太好了！", ["我爱北京。", "你呢？", "太好了！"]),
        ("第一，准备材料；第二，开始实验。", ["第一，准备材料；", "第二，开始实验。"]),
        ("等等……然后呢？", ["等等……", "然后呢？"]),
        ("真的吗？！是的。", ["真的吗？！", "是的。"]),
        ("他犹豫了…最后还是去了。", ["他犹豫了…", "最后还是去了。"]),
        # Full-width forms: ！？ split; the full-width point is a decimal point between digits.
        ("ＡＢＣ！ＤＥＦ？", ["ＡＢＣ！", "ＤＥＦ？"]),
        ("圆周率约为３．１４。它是无理数。", ["圆周率约为３．１４。", "它是无理数。"]),
        # Numbers and decimals.
        ("圆周率约为3.14。它是无理数。", ["圆周率约为3.14。", "它是无理数。"]),
        ("Pi is about 3.14. It never ends.", ["Pi is about 3.14.", "It never ends."]),
        ("It costs $3.50. That is cheap.", ["It costs $3.50.", "That is cheap."]),
        (
            "Version 1.2.3 of example.com is out. Update now!",
            ["Version 1.2.3 of example.com is out.", "Update now!"],
        ),
        # Abbreviations and initials.
        (
            "He was born in the U.S. in 1990. He moved to Beijing.",
            ["He was born in the U.S. in 1990.", "He moved to Beijing."],
        ),
        ("Dr. Smith arrived. Mr. Lee left.", ["Dr. Smith arrived.", "Mr. Lee left."]),
        ("Use a tokenizer, e.g. BERT's. It works.", ["Use a tokenizer, e.g. BERT's.", "It works."]),
        ("J. K. Rowling wrote it. It sold well.", ["J. K. Rowling wrote it.", "It sold well."]),
        ("See Fig. 3 and No. 5 for details. Next.", ["See Fig. 3 and No. 5 for details.", "Next."]),
        ("Smith et al. showed it. Next.", ["Smith et al. showed it.", "Next."]),
        # ASCII terminators before a lowercase word do not split; ";" does.
        ("Wait... what? Really.", ["Wait... what?", "Really."]),
        ("Use v1.2; it works; done", ["Use v1.2;", "it works;", "done"]),
        ("Hello!!! World?!", ["Hello!!!", "World?!"]),
        # Mixed text: an ASCII terminator followed by a CJK character splits.
        ("GPT-4发布于2023年.它很强大.", ["GPT-4发布于2023年.", "它很强大."]),
        ("I love NY.我也爱北京。", ["I love NY.", "我也爱北京。"]),
        (
            "RAG是什么？RAG is retrieval-augmented generation. 明白了吗？",
            ["RAG是什么？", "RAG is retrieval-augmented generation.", "明白了吗？"],
        ),
        (
            "用 PyTorch 训练 BERT 模型需要 16 GB 显存。够吗?",
            ["用 PyTorch 训练 BERT 模型需要 16 GB 显存。", "够吗?"],
        ),
        # Quotes: no split inside; the closing quote stays with its sentence.
        ("他说：“今天下雨。我们不去了。”然后走了。", ["他说：“今天下雨。我们不去了。”", "然后走了。"]),
        ("“你好！”他说。", ["“你好！”", "他说。"]),
        ("「走吧。」她说。", ["「走吧。」", "她说。"]),
        ("他读了《你好！》这本书。", ["他读了《你好！》这本书。"]),  # a title mark never ends a sentence
        (
            'She said "Stop. Now." and left. Then he came.',
            ['She said "Stop. Now." and left.', "Then he came."],
        ),
        ('He said "Go." Then he left.', ['He said "Go."', "Then he left."]),
        ('他说："你好。" 然后走了。', ['他说："你好。"', "然后走了。"]),
        ("(见第2章。)下一句。", ["(见第2章。)", "下一句。"]),
        # Newlines end sentences, and whitespace is stripped.
        ("第一行\n第二行", ["第一行", "第二行"]),
        ("Title\r\n\r\n  Body text.  ", ["Title", "Body text."]),
        # A newline closes a quote left open.
        ("未闭合的“引号。第二句。\n新行。", ["未闭合的“引号。第二句。", "新行。"]),
        ("“你好。”\n“再见。”", ["“你好。”", "“再见。”"]),
        # Nothing to split.
        ("", []),
        ("  \n\t ", []),
        ("没有标点", ["没有标点"]),
        ("你好。  \n  ", ["你好。"]),
    ],
)
def test_split_sentences(text, expected):
    assert split_sentences(text) == expected


def test_sentences_cover_the_text():
    text = "爱因斯坦1879年出生于德国乌尔姆。He won the Nobel Prize in 1921! 他的理论……改变了物理学？\n完。"
    sentences = split_sentences(text)
    assert len(sentences) == 5
    # Only the whitespace between sentences is lost.
    assert "".join("".join(sentences).split()) == "".join(text.split())
    assert sentences[1] == "He won the Nobel Prize in 1921!"
