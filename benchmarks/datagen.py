"""A benchmark dataset generator: English and Chinese RAG samples of realistic length, every one unique.

Throughput depends on prompt and answer lengths, so the samples have the shape of real RAG traffic:
a question of 10-30 words, K = 3 or 5 retrieved contexts of 80-200 words (one or two about the subject of
the question, the rest about other subjects: distractors), an answer of 20-80 words (faithful, or with a
planted error or an unsupported claim) and a reference answer. Chinese lengths are counted in characters
at 1.6 characters per English word (question 16-48, contexts 128-320, answer 32-128 characters).

The text is generated from templates and word lists written for this project about fictional places,
people and buildings, so it can ship with the repository and never matches a model's memorised facts.
The same seed and size give the same dataset; every question, context set and answer differs from every
other sample's.

    python -m benchmarks datagen --samples 200 --out benchmarks/results/data-200.json
"""

from __future__ import annotations

import argparse
import json
import random
import sys
from dataclasses import dataclass
from pathlib import Path

MIN_SAMPLES, MAX_SAMPLES = 1, 10_000
ZH_CHARS_PER_WORD = 1.6
LIMITS = {"question": (10, 30), "context": (80, 200), "answer": (20, 80)}
"""Lengths in English words (Chinese: characters / ZH_CHARS_PER_WORD)."""

# --- English word lists ---------------------------------------------------------------------------------
EN_ONSETS = (
    "Var",
    "Quil",
    "Bram",
    "Ost",
    "Tel",
    "Mor",
    "Ash",
    "Cal",
    "Dun",
    "Fen",
    "Gal",
    "Hart",
    "Kel",
    "Lun",
    "Nor",
    "Pell",
    "Rav",
    "Sel",
    "Thorn",
    "Wick",
    "Yar",
    "Zen",
    "Brin",
    "Corr",
)
EN_CODAS = (
    "holt",
    "mere",
    "wick",
    "ford",
    "stead",
    "vale",
    "moor",
    "bury",
    "crest",
    "haven",
    "ley",
    "mouth",
    "gate",
    "field",
    "stow",
    "by",
    "wold",
    "combe",
)
EN_MODIFIERS = (
    "Upper",
    "Lower",
    "North",
    "South",
    "Old",
    "New",
    "Market",
    "Bridge",
    "Green",
    "Cross",
    "Abbey",
    "Marsh",
)
EN_RIVERS = ("Tamble", "Orrin", "Lisk", "Wendle", "Corran", "Hessa", "Brume", "Aldry", "Vesk", "Morrow")
EN_FIRST = (
    "Amelia",
    "Tobias",
    "Greta",
    "Silas",
    "Ingrid",
    "Rowan",
    "Petra",
    "Anselm",
    "Mira",
    "Caspar",
    "Lidia",
    "Oskar",
    "Hester",
    "Jonas",
    "Elin",
    "Matteo",
    "Nadia",
    "Felix",
    "Irene",
    "Leopold",
)
EN_KINDS = (
    (
        "bridge",
        "main span",
        "The main span is {size} metres long.",
        "carry the coastal railway over the estuary",
    ),
    (
        "observatory",
        "main telescope",
        "The main telescope is {size} centimetres across.",
        "map comets for the regional almanac",
    ),
    ("library", "reading hall", "The reading hall has {size} seats.", "lend books to the mining villages"),
    ("dam", "spillway", "The spillway is {size} metres high.", "hold back the spring floods"),
    (
        "lighthouse",
        "lamp",
        "The lamp can be seen from {size} kilometres away.",
        "guide fishing boats past the shoals",
    ),
    ("market hall", "roof", "The roof covers {size} market stalls.", "shelter the weekly grain trade"),
    (
        "botanical garden",
        "glasshouse",
        "The glasshouse holds {size} plant species.",
        "grow medicinal herbs for the hospital",
    ),
    (
        "canal",
        "lock chain",
        "The lock chain is {size} metres long.",
        "move timber from the uplands to the port",
    ),
)
"""(kind, the part a question may ask about, the sentence stating its size, what it was built to do)"""
EN_MATERIALS = (
    "granite",
    "cast iron",
    "red brick",
    "oak timber",
    "reinforced concrete",
    "limestone",
    "sandstone",
    "steel lattice",
)
EN_FILLER = (
    "Local guides describe the site as a quiet place that rewards an early visit.",
    "The town council publishes a short history of the site every few years.",
    "Visitors often combine the trip with a walk along the old harbour road.",
    "Several photographs from its first decade survive in the county archive.",
    "Repairs in later decades kept most of the original details intact.",
    "A small exhibition near the entrance explains how the work was organised.",
    "School groups visit in spring, when the surrounding meadows are in flower.",
    "The regional newspaper reported on the opening ceremony at some length.",
    "Maintenance is funded partly by a volunteer society founded by residents.",
    "Older residents still remember the noise of the construction crews.",
    "The site appears on the regional heritage list with a detailed entry.",
    "A footpath signposted from the railway station leads to the main gate.",
)
EN_QUESTION = (
    (
        "According to the records, in which year was the {kind} at {place} opened, and who was responsible "
        "for its design?"
    ),
    "What was the {kind} at {place} originally built to do, and what material was chosen for its {part}?",
    "Who designed the {kind} at {place}, how large is its {part}, and in which year did it open?",
    "Can you explain why the town of {place} built its {kind}, and when the work was finished?",
)
EN_EXTRA_CLAIMS = (
    "It was later damaged by a storm and rebuilt in the same style.",
    "It is widely considered the largest structure of its kind in the country.",
    "The design won an international award soon after the opening.",
    "It was briefly closed during a dispute over maintenance costs.",
)

# --- Chinese word lists ---------------------------------------------------------------------------------
ZH_PLACE_A = (
    "青",
    "云",
    "石",
    "松",
    "临",
    "安",
    "白",
    "清",
    "东",
    "南",
    "西",
    "北",
    "宁",
    "平",
    "永",
    "长",
    "金",
    "玉",
    "桐",
    "柳",
)
ZH_PLACE_B = ("溪", "岭", "川", "湾", "原", "山", "河", "泉", "阳", "门", "州", "桥", "林", "湖", "坪")
ZH_SURNAMES = ("林", "陈", "周", "吴", "郑", "王", "赵", "孙", "杨", "许", "何", "沈", "韩", "唐", "冯")
ZH_GIVEN = ("文远", "若兰", "启明", "思齐", "秋实", "景和", "嘉言", "子衡", "雨桐", "承志", "慧敏", "书恒")
ZH_KINDS = (
    ("大桥", "主跨", "它的主跨长{size}米。", "让沿海铁路跨过河口"),
    ("天文台", "主望远镜", "它的主望远镜口径为{size}厘米。", "为地方历书观测彗星"),
    ("图书馆", "阅览大厅", "它的阅览大厅有{size}个座位。", "向矿区村庄出借图书"),
    ("水坝", "溢洪道", "它的溢洪道高{size}米。", "拦蓄春季洪水"),
    ("灯塔", "灯光", "它的灯光在{size}公里外都能看到。", "引导渔船绕过浅滩"),
    ("粮食市场", "屋顶", "它的屋顶下能容纳{size}个摊位。", "为每周的粮食交易遮风挡雨"),
    ("植物园", "温室", "它的温室里种有{size}种植物。", "为医院种植药用植物"),
    ("运河", "船闸", "它的船闸全长{size}米。", "把木材从山区运到港口"),
)
ZH_MATERIALS = ("花岗岩", "铸铁", "红砖", "橡木", "钢筋混凝土", "石灰岩", "砂岩", "钢桁架")
ZH_FILLER = (
    "当地导游常说，这里最适合在清晨安静的时候参观。",
    "镇政府每隔几年就会出版一本介绍它历史的小册子。",
    "游客常常顺路沿着旧港口的石板路散步。",
    "县档案馆里还保存着它建成后头十年的许多照片。",
    "后来几十年的维修基本保留了最初的建筑细节。",
    "入口附近的小型展览介绍了当年施工是如何组织的。",
    "每到春天草地开花的时候，都有学校组织学生来参观。",
    "地方报纸曾用很长的篇幅报道了当年的落成典礼。",
    "日常维护的经费有一部分来自居民自发成立的志愿者协会。",
    "一些老居民至今还记得当年施工队的喧闹声。",
)
ZH_QUESTION = (
    "根据现有记载，{place}的{kind}是哪一年建成开放的？它是由谁负责设计的？",
    "{place}的{kind}最初是为了什么目的而修建的？它主要采用了哪种建筑材料？",
    "请介绍一下{place}的{kind}：设计者是谁，{part}有多大，又是在哪一年投入使用的？",
)
ZH_EXTRA_CLAIMS = (
    "后来它曾在一场风暴中受损，并按原样重建。",
    "它被普遍认为是全国同类建筑中规模最大的一座。",
    "它建成后不久就获得了一项国际设计奖。",
)


@dataclass(frozen=True)
class Subject:
    """One fictional thing a sample asks about, with the facts its contexts state."""

    place: str
    kind: str
    part: str
    size_sentence: str
    purpose: str
    year: int
    size: int
    designer: str
    material: str


def _subject(rng: random.Random, language: str, used: set[str]) -> Subject:
    """A subject whose (place, kind) pair no earlier sample used."""
    for _ in range(10_000):
        if language == "en":
            place = rng.choice(EN_ONSETS) + rng.choice(EN_CODAS)
            roll = rng.random()
            if roll < 0.4:
                place = f"{place} {rng.choice(EN_MODIFIERS)}"
            elif roll < 0.7:
                place = f"{place}-on-{rng.choice(EN_RIVERS)}"
            kind, part, size_sentence, purpose = rng.choice(EN_KINDS)
            designer = f"{rng.choice(EN_FIRST)} {rng.choice(EN_ONSETS)}{rng.choice(EN_CODAS)}"
            material = rng.choice(EN_MATERIALS)
        else:
            place = "".join(rng.choice(ZH_PLACE_A) for _ in range(rng.choice((1, 2)))) + rng.choice(
                ZH_PLACE_B
            )
            place += rng.choice(("镇", "县", "村", "市"))
            kind, part, size_sentence, purpose = rng.choice(ZH_KINDS)
            designer = rng.choice(ZH_SURNAMES) + rng.choice(ZH_GIVEN)
            material = rng.choice(ZH_MATERIALS)
        key = f"{language}:{place}:{kind}"
        if key not in used:
            used.add(key)
            year, size = rng.randint(1820, 1995), rng.randint(12, 960)
            return Subject(place, kind, part, size_sentence, purpose, year, size, designer, material)
    raise RuntimeError("ran out of unique subjects; widen the word lists")


def _facts(s: Subject, language: str) -> list[str]:
    """The sentences that state a subject's facts (one fact each)."""
    if language == "en":
        return [
            f"The {s.kind} at {s.place} was opened in {s.year} after several years of work.",
            f"It was designed by {s.designer}, who had trained as a civil engineer in the capital.",
            f"Its {s.part} was built mainly of {s.material}.",
            s.size_sentence.format(size=s.size),
            f"It was built to {s.purpose}.",
        ]
    return [
        f"{s.place}的{s.kind}于{s.year}年建成开放，前后施工了好几年。",
        f"它由{s.designer}设计，这位设计者早年在省城学习土木工程。",
        f"它的主体结构主要采用{s.material}建造。",
        s.size_sentence.format(size=s.size),
        f"修建它的目的是{s.purpose}。",
    ]


def _length(text: str, language: str) -> float:
    """Length in English words (Chinese: characters / ZH_CHARS_PER_WORD)."""
    return len(text.split()) if language == "en" else len(text) / ZH_CHARS_PER_WORD


def _join(sentences: list[str], language: str) -> str:
    return (" " if language == "en" else "").join(sentences)


def _context(rng: random.Random, s: Subject, facts: list[str], language: str) -> str:
    """80-200 words: the given facts among filler sentences, topped up with filler to a random length."""
    fillers = list(EN_FILLER if language == "en" else ZH_FILLER)
    rng.shuffle(fillers)
    sentences = list(facts)
    target = rng.randint(*LIMITS["context"])
    intro = (
        f"This entry describes the {s.kind} at {s.place}."
        if language == "en"
        else f"本条目介绍{s.place}的{s.kind}。"
    )
    sentences.insert(0, intro)
    while _length(_join(sentences, language), language) < target and fillers:
        sentences.insert(rng.randint(1, len(sentences)), fillers.pop())
    while _length(_join(sentences, language), language) < LIMITS["context"][0]:
        sentences.append(sentences[rng.randint(1, len(sentences) - 1)])  # short facts: repeat one
    text = _join(sentences, language)
    while _length(text, language) > LIMITS["context"][1] and len(sentences) > 2:
        sentences.pop()
        text = _join(sentences, language)
    return text


def _answer(rng: random.Random, s: Subject, language: str) -> tuple[str, str]:
    """(answer, reference): the reference states four true facts; the answer restates some of them, with
    a planted error (30%), an unsupported claim (20%) or faithfully."""
    facts = _facts(s, language)
    reference = _join(facts[:2] + facts[3:5], language)
    chosen = [facts[i] for i in sorted(rng.sample(range(5), rng.randint(2, 4)))]
    roll = rng.random()
    if roll < 0.3:
        wrong = Subject(**{**s.__dict__, "year": s.year + rng.randint(3, 40), "size": s.size * 2})
        bad = _facts(wrong, language)
        chosen = [bad[0] if c == facts[0] else bad[3] if c == facts[3] else c for c in chosen]
        if chosen == [f for f in chosen if f in facts]:
            chosen.append(bad[0])
    elif roll < 0.5:
        chosen.append(rng.choice(EN_EXTRA_CLAIMS if language == "en" else ZH_EXTRA_CLAIMS))
    answer = _join(chosen, language)
    while _length(answer, language) < LIMITS["answer"][0]:
        answer = _join([answer, facts[rng.randint(0, 4)]], language)
    return answer, reference


def _question(rng: random.Random, s: Subject, language: str) -> str:
    template = rng.choice(EN_QUESTION if language == "en" else ZH_QUESTION)
    return template.format(kind=s.kind, place=s.place, part=s.part)


def generate(
    samples: int, *, seed: int = 0, languages: tuple[str, ...] = ("en", "zh"), k: str = "mixed"
) -> dict:
    """A RAGAS-columnar dataset (question, contexts, answer, ground_truth) of `samples` unique samples.

    Args:
        samples: 1 to 10,000.
        seed: the same seed gives the same dataset.
        languages: samples alternate between these ("en", "zh").
        k: retrieved contexts per sample: "3", "5" or "mixed" (3 and 5 alternating at random).

    >>> data = generate(4, seed=1)
    >>> len(data["question"]), len(set(data["question"])), {len(c) for c in data["contexts"]} <= {3, 5}
    (4, 4, True)
    """
    if not MIN_SAMPLES <= samples <= MAX_SAMPLES:
        raise ValueError(f"samples={samples}: generate between {MIN_SAMPLES} and {MAX_SAMPLES} samples.")
    if not languages or any(lang not in ("en", "zh") for lang in languages):
        raise ValueError(f"languages={languages!r}: use 'en' and/or 'zh'.")
    if k not in ("3", "5", "mixed"):
        raise ValueError(f"k={k!r}: use '3', '5' or 'mixed'.")
    rng = random.Random(seed)
    used: set[str] = set()
    rows: dict[str, list] = {"question": [], "contexts": [], "answer": [], "ground_truth": []}
    for i in range(samples):
        language = languages[i % len(languages)]
        subject = _subject(rng, language, used)
        n_contexts = int(k) if k != "mixed" else rng.choice((3, 5))
        facts = _facts(subject, language)
        order = list(range(5))
        rng.shuffle(order)
        relevant = [[facts[j] for j in sorted(order[:3])], [facts[j] for j in sorted(order[3:])]]
        contexts = [_context(rng, subject, f, language) for f in relevant[: rng.choice((1, 2))]]
        while len(contexts) < n_contexts:  # distractors: other fictional subjects, never reused
            other = _subject(rng, language, used)
            contexts.append(_context(rng, other, rng.sample(_facts(other, language), 3), language))
        rng.shuffle(contexts)
        answer, reference = _answer(rng, subject, language)
        rows["question"].append(_question(rng, subject, language))
        rows["contexts"].append(contexts)
        rows["answer"].append(answer)
        rows["ground_truth"].append(reference)
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--samples", type=int, default=100)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--languages", nargs="+", default=["en", "zh"], choices=["en", "zh"])
    parser.add_argument("--k", default="mixed", choices=["3", "5", "mixed"])
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args(argv)
    data = generate(args.samples, seed=args.seed, languages=tuple(args.languages), k=args.k)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(data, ensure_ascii=False, indent=1))
    print(f"wrote {args.samples} samples to {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
