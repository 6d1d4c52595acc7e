"""jieba segmentation on a private tokenizer: lazy import, our cache directory, real segmentations."""

from __future__ import annotations

import logging
import os
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from ascend_eval.text import Segmenter, default_segmenter


@pytest.fixture(scope="module")
def segmenter(tmp_path_factory) -> Segmenter:
    return Segmenter(cache_dir=tmp_path_factory.mktemp("jieba"))


def _run(code: str, tmp_path: Path) -> str:
    env = {**os.environ, "ASCEND_EVAL_HOME": str(tmp_path), "PYTHONWARNINGS": "ignore"}
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120, check=False
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_import_and_english_only_work_do_not_import_jieba(tmp_path):
    out = _run(
        "import sys\n"
        "import ascend_eval.text as t\n"
        "print('jieba' in sys.modules)\n"
        "t.Segmenter(); t.default_segmenter()\n"  # constructing loads nothing either
        "t.extract_entities('The Eiffel Tower in Paris was completed in March 1889.')\n"
        "t.split_sentences('一。二。'); t.normalize_for_match('ＡＢＣ')\n"
        "print('jieba' in sys.modules)\n",
        tmp_path,
    )
    assert out.split() == ["False", "False"]


def test_private_tokenizer_leaves_jiebas_global_alone_and_caches_under_our_home(tmp_path):
    out = _run(
        "import logging, jieba\n"
        "from ascend_eval.text import default_segmenter\n"
        "seg = default_segmenter()\n"
        "print(seg.words('北京大学成立于1898年。'))\n"
        "print(seg.tagged('北京大学成立于1898年。')[0])\n"
        "print(seg.tokenizer is not jieba.dt, jieba.dt.initialized, seg.tokenizer.initialized)\n"
        "print(logging.getLogger('jieba').level == logging.WARNING)\n",
        tmp_path,
    )
    words, first_tag, identity, level = out.splitlines()
    assert words == "['北京大学', '成立', '于', '1898', '年', '。']"
    assert first_tag == "('北京大学', 'nt')"
    assert identity == "True False True"  # our own, initialised; jieba.dt was never initialised
    assert level == "True"
    caches = list((tmp_path / "jieba").glob("jieba-*.cache"))
    assert [p.name for p in caches] == ["jieba-0.42.1.cache"]


def test_cache_is_written_where_asked(segmenter, tmp_path_factory):
    segmenter.words("你好")
    cache_dir = Path(segmenter.tokenizer.tmp_dir)
    assert (cache_dir / segmenter.tokenizer.cache_file).is_file()
    assert cache_dir.is_relative_to(tmp_path_factory.getbasetemp())
    assert logging.getLogger("jieba").level == logging.WARNING


def test_words_drop_whitespace_and_keep_latin_words_whole(segmenter):
    assert segmenter.words("用 PyTorch 训练 BERT 模型") == ["用", "PyTorch", "训练", "BERT", "模型"]
    assert segmenter.words("  \n ") == []
    assert segmenter.words("") == []


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("清华大学位于北京市海淀区。", ["清华大学", "位于", "北京市", "海淀区", "。"]),
        ("珠穆朗玛峰高8848.86米", ["珠穆朗玛峰", "高", "8848.86", "米"]),
        # jieba's HMM pass glues "年出" here (the dictionary has no better path through "年出生于").
        ("爱因斯坦1879年出生于德国乌尔姆。", ["爱因斯坦", "1879", "年出", "生于", "德国", "乌尔姆", "。"]),
        ("增长了25%。", ["增长", "了", "25%", "。"]),
    ],
)
def test_words(segmenter, text, expected):
    words = segmenter.words(text)
    assert words == expected
    assert "".join(words) == "".join(text.split())


def test_tagged(segmenter):
    assert segmenter.tagged("爱因斯坦1879年出生于德国乌尔姆。") == [
        ("爱因斯坦", "nrt"),
        ("1879", "m"),
        ("年", "m"),
        # Unlike `words`, posseg splits "出生于" as "出" + "生于": its HMM works on different states.
        ("出", "v"),
        ("生于", "v"),
        ("德国", "ns"),
        ("乌尔姆", "nr"),
        ("。", "x"),
    ]
    assert segmenter.tagged("OpenAI 在 2023年 发布了 GPT-4。") == [
        ("OpenAI", "eng"),
        ("在", "p"),
        ("2023", "m"),
        ("年", "m"),
        ("发布", "v"),
        ("了", "ul"),
        ("GPT", "eng"),
        ("-", "x"),
        ("4", "x"),  # a digit after "-" is tagged x, not m
        ("。", "x"),
    ]


def test_default_segmenter_is_one_instance_across_threads():
    seen = []

    def grab():
        seen.append(default_segmenter())

    threads = [threading.Thread(target=grab) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(seen) == 8
    assert all(s is seen[0] for s in seen)
    assert default_segmenter() is seen[0]


def test_concurrent_first_use_builds_one_tokenizer(tmp_path):
    segmenter = Segmenter(cache_dir=tmp_path)
    results: list[list[str]] = []
    tokenizers = []

    def segment():
        results.append(segmenter.words("张三和李四在上海见面。"))
        tokenizers.append(segmenter.tokenizer)

    threads = [threading.Thread(target=segment) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert results == [["张三", "和", "李四", "在", "上海", "见面", "。"]] * 4
    assert all(t is tokenizers[0] for t in tokenizers)
