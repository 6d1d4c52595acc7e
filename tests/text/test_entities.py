"""Judge-free entity extraction on real Chinese, English and mixed sentences.

The expectations are what jieba 0.42.1 and our patterns really give, including where jieba's tags are
surprising; those cases say so in a comment.
"""

from __future__ import annotations

import pytest

from ascend_eval.text import Segmenter, entity_key, extract_entities


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        # Chinese: jieba tags people (nr/nrt), places (ns), organisations (nt), other proper nouns (nz).
        ("爱因斯坦1879年出生于德国乌尔姆。", ["爱因斯坦", "1879年", "德国", "乌尔姆"]),
        ("北京大学成立于1898年。", ["北京大学", "1898年"]),
        ("清华大学位于北京市海淀区。", ["清华大学", "北京市", "海淀区"]),
        ("张三和李四在上海见面。", ["张三", "李四", "上海"]),
        ("秦始皇于公元前221年统一中国。", ["秦始皇", "公元前221年", "中国"]),
        ("1969年7月20日，阿姆斯特朗登上月球。", ["1969年7月20日", "阿姆斯特朗"]),
        # jieba tags 珠穆朗玛峰 ns and the decimal and 米 both m; the quantity comes from the pattern.
        # 尼泊尔 is tagged nr (a person), not ns; it is an entity either way.
        ("珠穆朗玛峰高8848.86米，位于中国和尼泊尔边境。", ["珠穆朗玛峰", "8848.86米", "中国", "尼泊尔"]),
        # 埃菲尔铁塔 is nz; 法国巴黎 comes out as one ns word.
        ("埃菲尔铁塔于1889年3月建成，位于法国巴黎。", ["埃菲尔铁塔", "1889年3月", "法国巴黎"]),
        ("长江全长6300公里，流域面积180万平方公里。", ["长江", "6300公里", "180万平方公里"]),
        ("2024年1月1日，人口增长了3.5%。", ["2024年1月1日", "3.5%"]),
        ("他花了500元买了3公斤苹果。", ["500元", "3公斤"]),
        ("他出生于20世纪80年代。", ["20世纪", "80年代"]),
        # Name parts jieba tags separately are merged across "·" (卡尔 nrt, 马克思 nr; 列夫 nr, 托尔斯泰 nrt)
        # and when they touch (库比 nrt + 蒂诺 nrt). 苹果公司 is tagged n, so it is missed.
        ("卡尔·马克思出生于德国特里尔。", ["卡尔·马克思", "德国", "特里尔"]),
        ("苹果公司的总部位于加利福尼亚州库比蒂诺。", ["加利福尼亚州", "库比蒂诺"]),
        # A work in book-title marks is taken whole; otherwise jieba would tag 和平 (peace) nz.
        ("列夫·托尔斯泰写了《战争与和平》。", ["列夫·托尔斯泰", "战争与和平"]),
        # Surprising jieba tags, asserted as they are:
        # 阿里巴巴 is nrt (a person) and 集团 a common noun, so the group's full name is not taken.
        ("马云创立了阿里巴巴集团。", ["马云", "阿里巴巴"]),
        # 新手机 ("new phone") is tagged nz, a false positive.
        ("华为公司发布了新手机。", ["华为公司", "新手机"]),
        # 联合国总部 ("UN headquarters") is one nt word.
        ("联合国总部在纽约。", ["联合国总部", "纽约"]),
        # 居里 is tagged q (a measure word) here, so only 玛丽 is a person.
        ("玛丽·居里两次获得诺贝尔奖。", ["玛丽", "诺贝尔奖"]),
        # jieba breaks the long transliteration into 斯克沃 nr, 多 m, 夫斯 nrt, 卡 n.
        (
            "居里夫人出生于波兰华沙，她的原名是玛丽亚·斯克沃多夫斯卡。",
            ["居里夫人", "波兰", "华沙", "玛丽亚·斯克沃", "夫斯"],
        ),
        # 京 (Beijing) is a one-character ns: skipped, as one-character tags are mostly noise.
        ("他在京工作。", []),
        # 微软 is tagged a (adjective) and 谷歌 n: missed.
        ("微软和谷歌都投资了人工智能。", []),
        # English.
        ("The Eiffel Tower in Paris was completed in March 1889.", ["Eiffel Tower", "Paris", "March 1889"]),
        (
            "Marie Curie was born in Warsaw on 7 November 1867. She won the Nobel Prize twice.",
            ["Marie Curie", "Warsaw", "7 November 1867", "Nobel Prize"],
        ),
        ("NASA and the U.S. Army worked with MIT in the 1990s.", ["NASA", "U.S. Army", "MIT", "1990s"]),
        (
            "The trip is 3.5 km long and costs $3.5 billion; it grew 25% since 2020.",
            ["3.5 km", "$3.5 billion", "25%", "2020"],
        ),
        ("It was built in 1889 by Gustave Eiffel's company.", ["1889", "Gustave Eiffel"]),
        (
            "He studied at the University of Oxford with Leonardo da Vinci fans.",
            ["University of Oxford", "Leonardo da Vinci"],
        ),
        (
            "In 2020, Apple released the iPhone 12 on October 13, 2020.",
            ["2020", "Apple", "iPhone", "October 13, 2020"],
        ),
        ("The release date is 2024-01-01.", ["2024-01-01"]),
        # A sentence-initial common word outside the function-word list is kept: a known limitation.
        (
            "Scientists at CERN found the Higgs boson in July 2012.",
            ["Scientists", "CERN", "Higgs", "July 2012"],
        ),
        ("It is what it is. This is fine.", []),
        # Mixed.
        ("OpenAI 在 2023年 发布了 GPT-4。", ["OpenAI", "2023年", "GPT-4"]),
        ("用 PyTorch 训练 BERT 模型需要 16 GB 显存。", ["PyTorch", "BERT", "16 GB"]),
        ("Apple和Google都在2024-01-01之前发布了新产品。", ["Apple", "Google", "2024-01-01"]),
        ("Marie Curie出生于华沙。", ["Marie Curie", "华沙"]),
        # Full-width text: matched on a width-folded copy, returned as written.
        ("ＯｐｅｎＡＩ发布了ＧＰＴ－４。", ["ＯｐｅｎＡＩ", "ＧＰＴ－４"]),
        ("珠峰高８８４８．８６米。", ["珠峰", "８８４８．８６米"]),
        ("", []),
    ],
)
def test_extract_entities(text, expected):
    assert extract_entities(text) == expected


def test_entities_are_distinct_by_key_in_first_seen_order():
    text = "NASA在2020年成立了新部门。Nasa的预算增长了5%。ＮＡＳＡ总部在华盛顿。"
    assert extract_entities(text) == ["NASA", "2020年", "5%", "华盛顿"]


def test_an_explicit_segmenter_is_used(tmp_path):
    used, unused = tmp_path / "used", tmp_path / "unused"
    assert extract_entities("爱因斯坦出生于德国。", segmenter=Segmenter(cache_dir=used)) == [
        "爱因斯坦",
        "德国",
    ]
    assert list(used.glob("*.cache"))  # this segmenter was loaded, not the default one
    # Text without Han characters never needs jieba, so the segmenter is never loaded.
    assert extract_entities("Einstein was born in Ulm.", segmenter=Segmenter(cache_dir=unused)) == [
        "Einstein",
        "Ulm",
    ]
    assert not unused.exists()


@pytest.mark.parametrize(
    ("a", "b"),
    [
        ("ＮＡＳＡ", "nasa"),
        ("Eiffel Tower", "eiffel  tower"),
        ("８８４８．８６米", "8848.86 米"),
        ("GPT-4", "gpt4"),
        ("“巴黎”", "巴黎"),
        ("U.S.", "us"),
    ],
)
def test_entity_key_equates(a, b):
    assert entity_key(a) == entity_key(b)


def test_entity_key_keeps_numbers_apart():
    assert entity_key("3.5%") != entity_key("35%")
    assert entity_key("1889年") != entity_key("1898年")
