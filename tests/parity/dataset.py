"""The parity dataset: English and Chinese samples, each with the judge and embedder decisions for it.

Every `Case` is one RAG sample plus what the judge decides about it: how it splits the response into
statements (or the raw text it answers instead), whether the joined retrieved contexts support each
statement, and the vectors of the reference and the response. `build()` turns the cases into rows and one
`Script` holding every decision.

Vectors are small integer vectors whose norms are integers (3, 5, 7, 9, ...), so both libraries compute
them exactly and any difference is in the formula; a few cases use realistic float32 unit vectors
(`real(...)`), as a real embedder returns, to test the arithmetic on ordinary numbers.

A case that does not reach parity for a reason in ascend-eval's metric code names the metric and the
reason in `known_mismatch`; the test marks it `xfail(strict=True)`, so it stays visible and fails loudly
once fixed.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from tests.parity.script import Script

DIM = 8
Vector = tuple[float, ...]


def vec(*components: float) -> Vector:
    """An embedding padded with zeros to `DIM` components."""
    return tuple(float(c) for c in components) + (0.0,) * (DIM - len(components))


def real(*components: float) -> Vector:
    """A realistic embedding: L2-normalised in float32, as an embedding model returns it."""
    v = np.asarray(components, dtype=np.float32)
    v = (v / np.linalg.norm(v)).astype(np.float32)
    return tuple(float(x) for x in v)


ZERO = vec()


@dataclass(frozen=True)
class Case:
    """One sample and the decisions about it.

    Attributes:
        statements: the statements the judge extracts from (question, response).
        verdicts: per statement, 1 if the joined contexts support it, else 0.
        raw: if set, the judge's literal output for the statement extraction instead of the canonical
            JSON of `statements` (unparseable text, a fenced answer, full-width JSON punctuation).
        fix: if set, what the judge answers when RAGAS's output fixer shows it `raw`; otherwise it repeats
            `raw`.
        vectors: (reference vector, response vector).
        known_mismatch: metric -> why ascend-eval cannot match RAGAS on this case (xfail, strict).
    """

    id: str
    question: str
    response: str
    contexts: tuple[str, ...]
    reference: str
    statements: tuple[str, ...]
    verdicts: tuple[int, ...]
    vectors: tuple[Vector, Vector]
    raw: str | None = None
    fix: str | None = None
    known_mismatch: dict[str, str] = field(default_factory=dict)
    note: str = ""


EIFFEL = "The Eiffel Tower was completed in 1889 as the entrance arch to the World's Fair in Paris."
EIFFEL_H = "The tower is 330 metres tall, about the height of an 81-storey building."
EIFFEL_D = "Gustave Eiffel's company designed and built the tower."
PHOTO = "Photosynthesis converts light energy into chemical energy stored in glucose."
MITO = "Mitochondria produce most of the cell's supply of ATP through cellular respiration."
PYTHON = "Python 3.12 was released on 2 October 2023."
PYTHON_F = "Python 3.12 improved error messages and made f-strings more flexible (PEP 701)."
CHANGJIANG = "长江全长约6300公里，是中国第一长河、世界第三长河。"
CHANGJIANG_E = "长江发源于青藏高原的唐古拉山脉，最终在上海注入东海。"
GUGONG = "故宫位于北京市中心，旧称“紫禁城”，始建于明朝永乐四年（1406年）。"
GUGONG_R = "故宫是世界上现存规模最大、保存最完整的木质结构古建筑群之一。"
TEA = "龙井茶产于浙江省杭州市西湖一带，属于绿茶。"

CASES: tuple[Case, ...] = (
    # ---- English: verdict patterns and context counts ------------------------------------------------
    Case(
        id="en-all-supported-k3",
        question="When was the Eiffel Tower completed and how tall is it?",
        response=(
            "The Eiffel Tower was completed in 1889. It is 330 metres tall. "
            "Gustave Eiffel's company built it."
        ),
        contexts=(EIFFEL, EIFFEL_H, EIFFEL_D),
        reference="It was completed in 1889 and is 330 metres tall.",
        statements=(
            "The Eiffel Tower was completed in 1889.",
            "The Eiffel Tower is 330 metres tall.",
            "Gustave Eiffel's company built the Eiffel Tower.",
        ),
        verdicts=(1, 1, 1),
        vectors=(vec(1, 2, 2), vec(2, 1, 2)),
    ),
    Case(
        id="en-partial-k2",
        question="What does photosynthesis do?",
        response=(
            "Photosynthesis turns light into chemical energy. It happens in mitochondria. It makes glucose."
        ),
        contexts=(PHOTO, MITO),
        reference="Photosynthesis converts light energy into chemical energy.",
        statements=(
            "Photosynthesis turns light into chemical energy.",
            "Photosynthesis happens in mitochondria.",
            "Photosynthesis makes glucose.",
        ),
        verdicts=(1, 0, 1),
        vectors=(vec(2, 3, 6), vec(3, 2, 6)),
    ),
    Case(
        id="en-k1",
        question="When was Python 3.12 released?",
        response="Python 3.12 came out in October 2023 and removed the GIL.",
        contexts=(PYTHON,),
        reference="Python 3.12 was released in October 2023.",
        statements=("Python 3.12 came out in October 2023.", "Python 3.12 removed the GIL."),
        verdicts=(1, 0),
        vectors=(vec(1, 4, 8), vec(4, 4, 7)),
    ),
    Case(
        id="en-k5",
        question="Tell me about the Eiffel Tower.",
        response=(
            "The Eiffel Tower opened in 1889 for the World's Fair. It stands 330 metres tall. "
            "It was painted gold. Gustave Eiffel's company built it."
        ),
        contexts=(EIFFEL, PHOTO, EIFFEL_H, MITO, EIFFEL_D),
        reference="A 330-metre iron tower in Paris, completed in 1889.",
        statements=(
            "The Eiffel Tower opened in 1889.",
            "The Eiffel Tower opened for the World's Fair.",
            "The Eiffel Tower was painted gold.",
            "Gustave Eiffel's company built the Eiffel Tower.",
        ),
        verdicts=(1, 1, 0, 1),
        vectors=(vec(2, 6, 9), vec(6, 6, 7)),
    ),
    Case(
        id="en-all-irrelevant-contexts",
        question="Who wrote Pride and Prejudice?",
        response="Jane Austen wrote Pride and Prejudice in 1813. It is a novel of manners.",
        contexts=(PHOTO, MITO, PYTHON),
        reference="Jane Austen.",
        statements=(
            "Jane Austen wrote Pride and Prejudice.",
            "Pride and Prejudice was published in 1813.",
            "Pride and Prejudice is a novel of manners.",
        ),
        verdicts=(0, 0, 0),
        vectors=(vec(3, 4, 12), vec(4, 3, 12)),
    ),
    Case(
        id="en-single-unsupported",
        question="How many moons does Mars have?",
        response="Mars has three moons.",
        contexts=("Mars has two small moons, Phobos and Deimos.",),
        reference="Two: Phobos and Deimos.",
        statements=("Mars has three moons.",),
        verdicts=(0,),
        vectors=(vec(1, 2, 2, 4), vec(2, 1, 4, 2)),
    ),
    Case(
        id="en-seven-statements",
        question="Summarise the facts about the Eiffel Tower and Python 3.12.",
        response=(
            "The Eiffel Tower was finished in 1889, is 330 m tall and was built by Eiffel's company. "
            "It is in Berlin. Python 3.12 was released in 2023, improved error messages "
            "and dropped f-strings."
        ),
        contexts=(EIFFEL, EIFFEL_H, EIFFEL_D, PYTHON, PYTHON_F),
        reference="The tower dates from 1889; Python 3.12 from October 2023.",
        statements=(
            "The Eiffel Tower was finished in 1889.",
            "The Eiffel Tower is 330 m tall.",
            "Eiffel's company built the Eiffel Tower.",
            "The Eiffel Tower is in Berlin.",
            "Python 3.12 was released in 2023.",
            "Python 3.12 improved error messages.",
            "Python 3.12 dropped f-strings.",
        ),
        verdicts=(1, 1, 1, 0, 1, 1, 0),
        vectors=(vec(2, 4, 5, 6), vec(6, 5, 4, 2)),
    ),
    Case(
        id="en-duplicate-statements",
        question="Where is the Eiffel Tower?",
        response="The Eiffel Tower is in Paris. The Eiffel Tower is in Paris! It is made of wood.",
        contexts=(EIFFEL,),
        reference="In Paris.",
        statements=(
            "The Eiffel Tower is in Paris.",
            "The Eiffel Tower is in Paris.",
            "The Eiffel Tower is made of wood.",
        ),
        verdicts=(1, 1, 0),
        vectors=(vec(1, 2, 2), vec(2, 2, 1)),
        note="identical statements are two verdicts on both sides (our engine dedupes the request only)",
    ),
    Case(
        id="en-padded-statements",
        question="What colour are the sky and grass?",
        response="The sky is blue and grass is green.",
        contexts=("On a clear day the sky is blue.", "Grass is green because of chlorophyll."),
        reference="Blue and green.",
        statements=("  The sky is blue. ", "Grass is green.\n"),
        verdicts=(1, 1),
        vectors=(vec(2, 3, 6), vec(2, 6, 3)),
        note="RAGAS judges the statements as generated, ours stripped; same decision either way",
    ),
    Case(
        id="en-tricky-context-text",
        question='What does the config line "Input: {\\"a\\": 1}" mean?',
        response='The line sets key "a" to 1. It is JSON.',
        contexts=(
            'Config lines look like Input: {"a": 1}\nOutput: the key "a" is set to 1.',
            "A backslash \\ escapes quotes; the format is JSON.\n\nSee section 2.",
        ),
        reference='It sets "a" to 1.',
        statements=('The line sets key "a" to 1.', "The line is JSON."),
        verdicts=(1, 1),
        vectors=(vec(4, 4, 7), vec(7, 4, 4)),
        note="prompt markers, quotes, backslashes and blank lines inside the inputs",
    ),
    Case(
        id="en-no-statements",
        question="What is the capital of Atlantis?",
        response="I'm not sure.",
        contexts=("Atlantis is a fictional island in Plato's dialogues.",),
        reference="Atlantis is fictional and has no capital.",
        statements=(),
        verdicts=(),
        vectors=(vec(1, 4, 8), vec(8, 4, 1)),
        note="empty statement list: RAGAS returns NaN without the NLI call; so do we",
    ),
    Case(
        id="en-garbage-output",
        question="How far is the Moon from the Earth?",
        response="About 384,400 km on average.",
        contexts=("The average distance from the Earth to the Moon is 384,400 km.",),
        reference="384,400 km on average.",
        statements=(),
        verdicts=(),
        raw="garbage",
        vectors=(vec(2, 6, 9), vec(2, 9, 6)),
        note="unparseable: RAGAS asks its fixer once more (the judge repeats itself) and scores NaN",
    ),
    Case(
        id="en-fenced-output",
        question="What do mitochondria do?",
        response="Mitochondria make most of the cell's ATP.",
        contexts=(MITO,),
        reference="They produce ATP.",
        statements=("Mitochondria make most of the cell's ATP.",),
        verdicts=(1,),
        raw=(
            "Sure! Here are the statements:\n```json\n"
            '{"statements": ["Mitochondria make most of the cell\'s ATP."]}\n```\nHope this helps.'
        ),
        vectors=(vec(6, 6, 7), vec(6, 7, 6)),
    ),
    Case(
        id="en-empty-response",
        question="What is the boiling point of water at sea level?",
        response="",
        contexts=("At sea level water boils at 100 degrees Celsius.",),
        reference="100 degrees Celsius.",
        statements=(),
        verdicts=(),
        vectors=(vec(3, 4, 12), vec(1, 2, 2)),
        note="RAGAS extracts no statements from '' (NaN); ours skips the call (NaN); both embed ' '",
    ),
    Case(
        id="en-blank-statement",
        question="What is the speed of light?",
        response="Light travels at about 300,000 km/s.",
        contexts=("The speed of light in vacuum is 299,792 km/s.",),
        reference="About 299,792 km/s.",
        statements=("Light travels at about 300,000 km/s.", ""),
        verdicts=(1, 0),
        vectors=(vec(2, 1, 2), vec(1, 2, 2, 4)),
    ),
    Case(
        id="en-33-statements",
        question="List the numbers one to thirty-three.",
        response=" ".join(f"Number {i} is in the list." for i in range(1, 34)),
        contexts=("The list holds the numbers 1 to 32.",),
        reference="1, 2, ..., 33.",
        statements=tuple(f"Number {i} is in the list." for i in range(1, 34)),
        verdicts=(1,) * 32 + (0,),
        vectors=(vec(4, 3, 12), vec(3, 4, 12)),
    ),
    # ---- English: answer_similarity geometry ----------------------------------------------------------
    Case(
        id="en-identical-texts",
        question="What is the chemical symbol for gold?",
        response="The chemical symbol for gold is Au.",
        contexts=("Gold is a chemical element with the symbol Au and atomic number 79.",),
        reference="The chemical symbol for gold is Au.",
        statements=("The chemical symbol for gold is Au.",),
        verdicts=(1,),
        vectors=(vec(2, 4, 5, 6), vec(2, 4, 5, 6)),
        note="reference == response: one text, one vector, cosine 1",
    ),
    Case(
        id="en-orthogonal",
        question="What is the largest planet?",
        response="Jupiter is the largest planet in the Solar System.",
        contexts=("Jupiter is the largest planet in the Solar System.",),
        reference="Saturn.",
        statements=("Jupiter is the largest planet in the Solar System.",),
        verdicts=(1,),
        vectors=(vec(1, 2, 2), vec(2, -2, 1)),
    ),
    Case(
        id="en-opposite",
        question="Is the Earth flat?",
        response="Yes, the Earth is flat.",
        contexts=("The Earth is an oblate spheroid.",),
        reference="No, the Earth is round.",
        statements=("The Earth is flat.",),
        verdicts=(0,),
        vectors=(vec(1, 2, 2), vec(-1, -2, -2)),
        note="cosine -1: neither side clips",
    ),
    Case(
        id="en-zero-vector",
        question="What is 2 + 2?",
        response="4",
        contexts=("Two plus two equals four.",),
        reference="Four.",
        statements=("2 + 2 is 4.",),
        verdicts=(1,),
        vectors=(vec(2, 3, 6), ZERO),
    ),
    Case(
        id="en-real-vectors",
        question="What did Python 3.12 change about f-strings?",
        response="Python 3.12 made f-strings more flexible under PEP 701.",
        contexts=(PYTHON, PYTHON_F),
        reference="PEP 701 lifted restrictions on f-string syntax in Python 3.12.",
        statements=("Python 3.12 made f-strings more flexible.", "The change is PEP 701."),
        verdicts=(1, 1),
        vectors=(
            real(0.12, -0.53, 0.33, 0.08, 0.61, -0.27, 0.19, 0.31),
            real(0.15, -0.49, 0.29, 0.11, 0.58, -0.22, 0.25, 0.27),
        ),
    ),
    # ---- Chinese ---------------------------------------------------------------------------------------
    Case(
        id="zh-all-supported-k2",
        question="长江有多长？它流入哪里？",
        response="长江全长约6300公里，是中国第一长河。它最终注入东海。",
        contexts=(CHANGJIANG, CHANGJIANG_E),
        reference="约6300公里，注入东海。",
        statements=("长江全长约6300公里。", "长江是中国第一长河。", "长江最终注入东海。"),
        verdicts=(1, 1, 1),
        vectors=(vec(1, 2, 2), vec(2, 2, 1)),
    ),
    Case(
        id="zh-partial-k3",
        question="故宫在哪里？有什么特点？",
        response="故宫位于北京市中心，旧称“紫禁城”。它建于清朝。它是石质建筑群。它是现存最大的木质古建筑群之一。",
        contexts=(GUGONG, GUGONG_R, TEA),
        reference="故宫位于北京，是现存规模最大的木质结构古建筑群之一。",
        statements=(
            "故宫位于北京市中心。",
            "故宫建于清朝。",
            "故宫是石质建筑群。",
            "故宫是现存最大的木质古建筑群之一。",
        ),
        verdicts=(1, 0, 0, 1),
        vectors=(vec(2, 3, 6), vec(3, 6, 2)),
    ),
    Case(
        id="zh-k1",
        question="龙井茶产自哪里？",
        response="龙井茶产于杭州西湖一带，属于绿茶，也是红茶。",
        contexts=(TEA,),
        reference="浙江杭州西湖一带。",
        statements=("龙井茶产于杭州西湖一带。", "龙井茶属于绿茶。", "龙井茶是红茶。"),
        verdicts=(1, 1, 0),
        vectors=(vec(1, 4, 8), vec(4, 1, 8)),
    ),
    Case(
        id="zh-k5",
        question="请介绍长江和故宫。",
        response="长江长约6300公里，发源于唐古拉山脉，注入东海。故宫旧称紫禁城，位于上海。",
        contexts=(CHANGJIANG, GUGONG, TEA, CHANGJIANG_E, GUGONG_R),
        reference="长江约6300公里，注入东海；故宫即紫禁城，在北京。",
        statements=(
            "长江长约6300公里。",
            "长江发源于唐古拉山脉。",
            "长江注入东海。",
            "故宫位于上海。",
            "故宫旧称紫禁城。",
        ),
        verdicts=(1, 1, 1, 0, 1),
        vectors=(vec(4, 4, 7), vec(4, 7, 4)),
    ),
    Case(
        id="zh-all-irrelevant-contexts",
        question="《红楼梦》的作者是谁？",
        response="《红楼梦》的作者是曹雪芹。它成书于清代。",
        contexts=(TEA, CHANGJIANG),
        reference="曹雪芹。",
        statements=("《红楼梦》的作者是曹雪芹。", "《红楼梦》成书于清代。"),
        verdicts=(0, 0),
        vectors=(vec(6, 6, 7), vec(7, 6, 6)),
    ),
    Case(
        id="zh-fullwidth-punctuation",
        question="「紫禁城」是什么？（请简要回答）",
        response="紫禁城就是故宫：明清两代的皇宫！它始建于1406年；至今已有六百多年？",
        contexts=(GUGONG, "明清两代共有二十四位皇帝在此居住、执政……"),
        reference="紫禁城是故宫的旧称，即明清皇宫。",
        statements=(
            "紫禁城就是故宫：明清两代的皇宫！",
            "紫禁城始建于1406年；",
            "紫禁城至今已有六百多年？",
        ),
        verdicts=(1, 1, 0),
        vectors=(vec(2, 6, 9), vec(9, 6, 2)),
        note="full-width ：；！？…「」（） inside the texts, in valid JSON",
    ),
    Case(
        id="zh-duplicate-statements",
        question="龙井茶属于哪类茶？",
        response="龙井茶属于绿茶。龙井茶属于绿茶。",
        contexts=(TEA,),
        reference="绿茶。",
        statements=("龙井茶属于绿茶。", "龙井茶属于绿茶。"),
        verdicts=(1, 1),
        vectors=(vec(3, 4, 12), vec(12, 4, 3)),
    ),
    Case(
        id="zh-mixed-english",
        question="Python 3.12 是什么时候发布的？",
        response="Python 3.12 于2023年10月2日发布，改进了错误提示（error messages）。",
        contexts=(PYTHON, PYTHON_F),
        reference="2023年10月2日。",
        statements=("Python 3.12 于2023年10月2日发布。", "Python 3.12 改进了错误提示。"),
        verdicts=(1, 1),
        vectors=(vec(2, 4, 5, 6), vec(4, 2, 6, 5)),
    ),
    Case(
        id="zh-empty-context-item",
        question="长江注入哪里？",
        response="长江注入东海。",
        contexts=("", CHANGJIANG_E),
        reference="东海。",
        statements=("长江注入东海。",),
        verdicts=(1,),
        vectors=(vec(1, 2, 2, 4), vec(4, 2, 2, 1)),
        note="an empty string among the contexts: the joined context starts with a newline",
    ),
    Case(
        id="zh-no-statements",
        question="火星上有长江吗？",
        response="这个问题我无法回答。",
        contexts=(CHANGJIANG,),
        reference="没有。",
        statements=(),
        verdicts=(),
        vectors=(vec(2, 2, 1), vec(-2, 1, 2)),
    ),
    Case(
        id="zh-unparseable-output",
        question="故宫有多少个房间？",
        response="故宫大约有九千多间房屋。",
        contexts=(GUGONG, GUGONG_R),
        reference="约九千间。",
        statements=(),
        verdicts=(),
        raw="抱歉，我无法完成这个任务。",
        vectors=(vec(6, 7, 6), vec(6, 6, 7)),
    ),
    Case(
        id="zh-fullwidth-json",
        question="中国最长的河流是哪条？",
        response="中国最长的河流是长江。",
        contexts=(CHANGJIANG,),
        reference="长江。",
        statements=("中国最长的河流是长江。",),
        verdicts=(1,),
        raw="｛“statements”：［“中国最长的河流是长江。”］｝",
        fix='{"statements": ["中国最长的河流是长江。"]}',
        vectors=(vec(1, 2, 2), vec(1, 2, 2, 4)),
        note="JSON written with full-width punctuation: ours reads it directly; RAGAS after its fixer call",
    ),
    Case(
        id="zh-negative-cosine",
        question="长江流入哪个海？",
        response="长江流入渤海。",
        contexts=(CHANGJIANG_E,),
        reference="长江流入东海。",
        statements=("长江流入渤海。",),
        verdicts=(0,),
        vectors=(vec(2, 3, 6), vec(-6, -3, -2)),
    ),
    Case(
        id="zh-real-vectors",
        question="故宫旧称什么？",
        response="故宫旧称紫禁城，是明清两代的皇宫。",
        contexts=(GUGONG,),
        reference="紫禁城。",
        statements=("故宫旧称紫禁城。", "故宫是明清两代的皇宫。"),
        verdicts=(1, 0),
        vectors=(
            real(0.41, 0.07, -0.36, 0.52, -0.18, 0.23, 0.44, -0.09),
            real(0.38, 0.12, -0.29, 0.47, -0.25, 0.31, 0.35, -0.14),
        ),
    ),
)


def rows(cases: Sequence[Case] = CASES) -> list[dict[str, object]]:
    """The samples as RAGAS `SingleTurnSample` fields."""
    return [
        {
            "user_input": c.question,
            "response": c.response,
            "retrieved_contexts": list(c.contexts),
            "reference": c.reference,
        }
        for c in cases
    ]


def build_script(cases: Sequence[Case] = CASES) -> Script:
    """Every decision the cases make, in one script."""
    script = Script()
    for c in cases:
        if len(c.statements) != len(c.verdicts):
            raise ValueError(f"{c.id}: {len(c.statements)} statements but {len(c.verdicts)} verdicts.")
        script.set_statements(c.question, c.response, c.raw if c.raw is not None else list(c.statements))
        if c.fix is not None:
            if c.raw is None:
                raise ValueError(f"{c.id}: a fix needs the raw output it fixes.")
            script.set_fix(c.raw, c.fix)
        context = "\n".join(c.contexts)
        for statement, verdict in zip(c.statements, c.verdicts, strict=True):
            script.set_verdict(context, statement, verdict)
        # RAGAS and ours embed an empty text as a single space.
        script.set_embedding(c.reference or " ", c.vectors[0])
        script.set_embedding(c.response or " ", c.vectors[1])
    return script
