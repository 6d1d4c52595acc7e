"""The parity dataset: English and Chinese samples, each with the judge and embedder decisions for it.

Every `Case` is one RAG sample plus what the judge decides about it: how it splits the response and the
reference into statements (or the raw text it answers instead), which texts support each statement (the
joined contexts, each single context, the reference, the response), which contexts were useful, the
entities it lists, the questions it writes for answer_relevancy, the NV judges' ratings, and the vectors.
Where a case leaves a decision out, a documented default derives it from the case's other decisions.
`build_script()` turns the cases into one `Script` holding every decision, `rows()` into the samples.

Vectors are small integer vectors whose norms are integers (3, 5, 7, 9, ...), so both libraries compute
them exactly and any difference is in the formula; a few cases use realistic float32 unit vectors
(`real(...)`), as a real embedder returns, to test the arithmetic on ordinary numbers. The questions of
answer_relevancy default to small integer vectors with arbitrary norms (`auto_vector`).

A case that does not reach parity for a reason in ascend-eval's metric code names the metric and the
reason in `known_mismatch`; the test marks it `xfail(strict=True)`, so it stays visible and fails loudly
once fixed.
"""

from __future__ import annotations

import json
import re
import zlib
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from tests.parity.script import Script, ragas_reading

DIM = 8
STRICTNESS = 3
"""answer_relevancy's generations per response (RAGAS's default strictness, and ours)."""
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
        sources: per response statement, the single contexts that support it, as a string of context
            indices ("02": contexts 0 and 2; "": none). Needed with two or more contexts; with one it is
            `verdicts`. A statement may be supported by the joined contexts and by no single one.
        ref_statements: the statements the judge extracts from (question, reference).
        ref_raw: if set, the judge's unparseable output for the reference's statement extraction (and for
            RAGAS's sentence attribution of the reference).
        ref_sources: per reference statement, the single contexts that support it (as `sources`).
        ref_verdicts: per reference statement, "1" if the joined contexts support it; default: some single
            context does.
        tp: per response statement, "1" if the reference supports it (a true positive).
        covered: per reference statement, "1" if the response supports it (else a false negative).
        useful_ref / useful_resp: per context, "1" if it was useful for arriving at the reference
            (context_precision) / the response (context_utilization); default: it supports one of the
            reference's / response's statements.
        ref_entities / ctx_entities: the entities the judge lists for the reference / the joined contexts
            (a raw string: unparseable); default: the `LEXICON` entries found in the text.
        questions: answer_relevancy's three generations for the response, (question, noncommittal) or raw
            text; default: the user's question and two variants, noncommittal when there are no statements.
        ratings: "metric/judge" -> the NV judge's free text; default: a digit derived from the verdicts
            (`_default_ratings`).
        extra_vectors: text -> vector, for answer_relevancy's question texts (default `auto_vector`).
        slips: the judge's raw answer to a one-call JSON prompt instead of the one derived from the
            verdicts: "nli/joined" (the response's statements against the joined contexts),
            "nli/reference" (against the reference), "correctness" (the TP/FP/FN classifier). Such a
            case is compared in generate mode only (see `SLIPS`).
        known_mismatch: metric, or "metric/judge_mode" -> why ascend-eval cannot match RAGAS on this case
            (xfail, strict).
        not_comparable: "metric/judge_mode" -> why the decision cannot be made identical (skipped); judges
            that write no rating are added automatically for classify mode.
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
    sources: tuple[str, ...] | None = None
    ref_statements: tuple[str, ...] = ()
    ref_raw: str | None = None
    ref_sources: tuple[str, ...] = ()
    ref_verdicts: str | None = None
    tp: str = ""
    covered: str = ""
    useful_ref: str | None = None
    useful_resp: str | None = None
    ref_entities: tuple[str, ...] | str | None = None
    ctx_entities: tuple[str, ...] | str | None = None
    questions: tuple[tuple[str, int] | str, ...] | None = None
    ratings: dict[str, str] = field(default_factory=dict)
    extra_vectors: dict[str, Vector] = field(default_factory=dict)
    slips: dict[str, str] = field(default_factory=dict)
    known_mismatch: dict[str, str] = field(default_factory=dict)
    not_comparable: dict[str, str] = field(default_factory=dict)
    note: str = ""

    @property
    def joined(self) -> str:
        return "\n".join(self.contexts)

    def supports(self, which: str) -> list[list[int]]:
        """[statement][context]: does single context c support the response's ("response") or the
        reference's ("reference") statement?"""
        if which == "response":
            statements, spec = self.statements, self.sources
            if spec is None and len(self.contexts) == 1:
                spec = tuple("0" if v else "" for v in self.verdicts)
        else:
            statements, spec = self.ref_statements, self.ref_sources
        if not statements:
            return []
        if spec is None or len(spec) != len(statements):
            raise ValueError(f"{self.id}: give the supporting contexts of every {which} statement.")
        return [[int(str(c) in s) for c in range(len(self.contexts))] for s in spec]

    def ref_joined_verdicts(self) -> list[int]:
        """Per reference statement: do the joined contexts support it?"""
        if self.ref_verdicts is not None:
            return _bits(self.ref_verdicts)
        return [int(any(row)) for row in self.supports("reference")]

    def comparability(self) -> dict[str, str]:
        """`not_comparable`, plus classify mode of every NV metric where a judge writes no rating."""
        out = dict(self.not_comparable)
        for slip in self.slips:
            for metric in SLIPS[slip]:
                out.setdefault(
                    f"{metric}/classify",
                    f"the judge's slip in a one-call answer ({slip}) has no per-statement Classify form",
                )
        for key, text in self.ratings.items():
            metric = key.partition("/")[0]
            if ragas_reading(metric, text) is None:
                out.setdefault(
                    f"{metric}/classify",
                    f"judge {key.partition('/')[2]} writes no rating ({text!r}): RAGAS's judge is NaN "
                    "after 5 tries, while a Classify judge always rates",
                )
        return out


SLIPS: dict[str, tuple[str, ...]] = {
    "nli/joined": ("faithfulness",),
    "nli/reference": ("noise_sensitivity(mode=relevant)", "noise_sensitivity(mode=irrelevant)"),
    "correctness": ("answer_correctness",),
}
"""Where a judge can slip in one call, and the metrics that then see the slip."""


def _bits(text: str) -> list[int]:
    if any(ch not in "01" for ch in text):
        raise ValueError(f"A verdict string holds only 0 and 1, got {text!r}.")
    return [int(ch) for ch in text]


def _verdict_list(*verdicts: tuple[str, int]) -> str:
    items = [{"statement": s, "reason": "scripted slip", "verdict": v} for s, v in verdicts]
    return json.dumps({"statements": items})


def auto_vector(text: str) -> Vector:
    """A deterministic small-integer vector for a text whose geometry no case is about (never all zero)."""
    rng = np.random.default_rng(zlib.crc32(text.encode("utf-8")))
    components = rng.integers(-4, 5, size=DIM)
    if not components.any():
        components[0] = 1
    return tuple(float(c) for c in components)


LEXICON = (
    # English
    "Eiffel Tower", "Gustave Eiffel", "1889", "World's Fair", "Paris", "330 metres", "330 m",
    "81-storey", "Photosynthesis", "glucose", "Mitochondria", "ATP", "Python 3.12", "2 October 2023",
    "October 2023", "2023", "PEP 701", "GIL", "Jane Austen", "Pride and Prejudice", "1813", "Mars",
    "Phobos", "Deimos", "Berlin", "Atlantis", "Plato", "Moon", "Earth", "384,400 km", "100 degrees Celsius",
    "299,792 km/s", "300,000 km/s", "Jupiter", "Saturn", "Solar System", "Au", "DNA", "France", "Nile",
    "Egyptian", "Red Planet", "0 °C", "Louvre",
    # Chinese
    "长江", "6300公里", "中国", "东海", "青藏高原", "唐古拉山脉", "上海", "故宫", "北京", "紫禁城", "明朝",
    "1406年", "清朝", "龙井茶", "浙江省", "杭州", "西湖", "绿茶", "红茶", "红楼梦", "曹雪芹", "清代",
    "渤海", "2023年10月2日", "明清",
)  # fmt: skip
"""The default entity judge: lists the lexicon entries a text contains, in order of first occurrence (ASCII
entries as whole words, so "Au" is not found in "Austen")."""


def lexicon_entities(text: str) -> list[str]:
    found = []
    for entity in LEXICON:
        if entity.isascii():
            match = re.search(rf"(?<!\w){re.escape(entity)}(?!\w)", text)
            at = match.start() if match else -1
        else:
            at = text.find(entity)
        if at >= 0:
            found.append((at, -len(entity), entity))
    return [entity for _, _, entity in sorted(found)]


def _share(bits: Sequence[int], *, all_of: str, some: str, none: str) -> str:
    if bits and all(bits):
        return all_of
    return some if any(bits) else none


def _default_ratings(c: Case) -> dict[str, str]:
    """Each NV judge's rating when a case does not script it, derived from the case's verdicts (judge 2
    looks at a different aspect than judge 1, so the two sometimes disagree)."""
    answer, reference = c.statements, c.ref_statements
    tp = _bits(c.tp) if c.tp else [0] * len(answer)
    covered = _bits(c.covered) if c.covered else [0] * len(reference)
    in_single = [int(any(row)) for row in c.supports("response")] if c.contexts else []
    useful = _useful(c, "reference")
    return {
        "nv_accuracy/1": "0" if not answer else _share([*tp, *covered], all_of="4", some="2", none="0"),
        "nv_accuracy/2": "0" if not reference else _share(covered, all_of="4", some="2", none="0"),
        "nv_context_relevance/1": _share(c.ref_joined_verdicts(), all_of="2", some="1", none="0"),
        "nv_context_relevance/2": "2" if any(useful) else "0",
        "nv_response_groundedness/1": _share(list(c.verdicts[: len(answer)]), all_of="2", some="1", none="0"),
        "nv_response_groundedness/2": _share(in_single, all_of="2", some="1", none="0"),
    }


def _useful(c: Case, which: str) -> list[int]:
    spec = c.useful_ref if which == "reference" else c.useful_resp
    if spec is not None:
        if len(spec) != len(c.contexts):
            raise ValueError(f"{c.id}: one usefulness verdict per context, got {spec!r}.")
        return _bits(spec)
    rows = c.supports(which)
    return [int(any(row[i] for row in rows)) for i in range(len(c.contexts))]


def _questions(c: Case) -> list[tuple[str, int] | str]:
    if c.questions is not None:
        if len(c.questions) != STRICTNESS:
            raise ValueError(f"{c.id}: answer_relevancy asks for {STRICTNESS} generations.")
        return list(c.questions)
    noncommittal = 0 if c.statements else 1
    return [(c.question, noncommittal)] + [(f"{c.question} ({i})", noncommittal) for i in (2, 3)]


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
        sources=("0", "1", "2"),
        ref_statements=("The Eiffel Tower was completed in 1889.", "The Eiffel Tower is 330 metres tall."),
        ref_sources=("0", "1"),
        tp="110",
        covered="11",
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
        sources=("0", "", "0"),
        ref_statements=("Photosynthesis converts light energy into chemical energy.",),
        ref_sources=("0",),
        tp="100",
        covered="1",
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
        ref_statements=("Python 3.12 was released in October 2023.",),
        ref_sources=("0",),
        tp="10",
        covered="1",
        questions=(
            ("When was Python 3.12 released?", 0),
            ("What did Python 3.12 remove?", 0),
            ("When did Python 3.12 come out?", 0),
        ),
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
        sources=("0", "0", "", "4"),
        ref_statements=(
            "The Eiffel Tower is 330 metres tall.",
            "The Eiffel Tower is made of iron.",
            "The Eiffel Tower is in Paris.",
            "The Eiffel Tower was completed in 1889.",
        ),
        ref_sources=("2", "", "0", "0"),
        tp="1000",
        covered="1001",
        ratings={
            "nv_accuracy/1": "4.0",
            "nv_context_relevance/1": "Relevance: 1.0",
            "nv_response_groundedness/2": "[2]",
        },
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
        sources=("", "", ""),
        ref_statements=("Jane Austen wrote Pride and Prejudice.",),
        ref_sources=("",),
        tp="100",
        covered="1",
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
        ref_statements=("Mars has two moons.", "The moons of Mars are Phobos and Deimos."),
        ref_sources=("0", "0"),
        tp="0",
        covered="00",
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
        sources=("0", "1", "2", "", "3", "4", ""),
        ref_statements=("The Eiffel Tower dates from 1889.", "Python 3.12 was released in October 2023."),
        ref_sources=("0", "3"),
        tp="1000100",
        covered="10",
        ratings={"nv_accuracy/2": "Rating: 2", "nv_context_relevance/2": "1"},
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
        ref_statements=("The Eiffel Tower is in Paris.",),
        ref_sources=("0",),
        tp="110",
        covered="1",
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
        sources=("0", "1"),
        ref_statements=("The sky is blue.", "Grass is green."),
        ref_sources=("0", "1"),
        tp="11",
        covered="11",
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
        sources=("0", "1"),
        ref_statements=('The line sets key "a" to 1.',),
        ref_sources=("0",),
        tp="10",
        covered="1",
        ratings={
            "nv_context_relevance/2": "Based on the provided Question and Context, the Relevance score is [2]"
        },
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
        ref_statements=("Atlantis is fictional.", "Atlantis has no capital."),
        ref_sources=("0", ""),
        covered="00",
        questions=(
            ("What is the capital of Atlantis?", 1),
            ("Where is the capital of Atlantis?", 2),
            ("What is Atlantis's capital city?", 1),
        ),
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
        ref_statements=("The average distance from the Earth to the Moon is 384,400 km.",),
        ref_sources=("0",),
        covered="1",
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
        ref_statements=("Mitochondria produce ATP.",),
        ref_sources=("0",),
        tp="1",
        covered="1",
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
        ref_statements=("Water boils at 100 degrees Celsius at sea level.",),
        ref_sources=("0",),
        covered="0",
        questions=(("", 1), ("", 1), ("", 1)),
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
        ref_statements=("The speed of light is about 299,792 km/s.", ""),
        ref_sources=("0", ""),
        tp="10",
        covered="10",
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
        ref_statements=("The list contains the numbers 1 to 33.",),
        ref_sources=("",),
        tp="1" * 33,
        covered="1",
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
        ref_statements=("The chemical symbol for gold is Au.",),
        ref_sources=("0",),
        tp="1",
        covered="1",
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
        ref_statements=("The largest planet is Saturn.",),
        ref_sources=("",),
        tp="0",
        covered="0",
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
        ref_statements=("The Earth is not flat.", "The Earth is round."),
        ref_sources=("0", "0"),
        tp="0",
        covered="00",
        questions=(("Is the Earth flat?", 0), ("Is the Earth round?", 0), ("What shape is the Earth?", 1)),
        extra_vectors={
            "Is the Earth flat?": vec(1, 2, 2),
            "Is the Earth round?": vec(-2, -1, -2),
            "What shape is the Earth?": vec(2, -2, 1),
        },
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
        ref_statements=("The answer is four.",),
        ref_sources=("0",),
        tp="1",
        covered="1",
        questions=(("What is 2 + 2?", 0), ("What is two plus two?", 0), ("Sum?", 0)),
        extra_vectors={"Sum?": ZERO},
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
        sources=("1", "1"),
        ref_statements=("PEP 701 lifted restrictions on f-string syntax.", "PEP 701 is part of Python 3.12."),
        ref_sources=("1", "1"),
        tp="11",
        covered="11",
        questions=(
            ("What did Python 3.12 change about f-strings?", 0),
            ("What is PEP 701?", 0),
            ("How did f-strings change in Python 3.12?", 0),
        ),
        extra_vectors={
            "What did Python 3.12 change about f-strings?": real(
                0.21, -0.44, 0.35, 0.02, 0.57, -0.31, 0.12, 0.4
            ),
            "What is PEP 701?": real(0.05, -0.61, 0.18, 0.33, 0.42, -0.12, 0.29, 0.45),
            "How did f-strings change in Python 3.12?": real(
                0.19, -0.47, 0.31, 0.06, 0.55, -0.29, 0.16, 0.37
            ),
        },
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
        sources=("0", "0", "1"),
        ref_statements=("长江全长约6300公里。", "长江注入东海。"),
        ref_sources=("0", "1"),
        tp="101",
        covered="11",
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
        sources=("0", "", "", "1"),
        ref_statements=("故宫位于北京。", "故宫是现存规模最大的木质结构古建筑群之一。"),
        ref_sources=("0", "1"),
        tp="1001",
        covered="11",
        ratings={"nv_response_groundedness/1": "评分：1"},
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
        ref_statements=("龙井茶产于浙江杭州西湖一带。",),
        ref_sources=("0",),
        tp="100",
        covered="0",
        questions=(("龙井茶产自哪里？", 0), ("", 0), ("龙井茶属于什么茶？", 0)),
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
        sources=("0", "3", "3", "", "1"),
        ref_statements=("长江长约6300公里。", "长江注入东海。", "故宫即紫禁城。", "故宫位于北京。"),
        ref_sources=("0", "3", "1", "1"),
        tp="10101",
        covered="1110",
        ratings={"nv_accuracy/2": "我的评分是 4"},
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
        sources=("", ""),
        ref_statements=("《红楼梦》的作者是曹雪芹。",),
        ref_sources=("",),
        tp="10",
        covered="1",
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
        sources=("", "0", ""),
        ref_statements=("紫禁城是故宫的旧称。", "紫禁城是明清两代的皇宫。"),
        ref_sources=("0", ""),
        ref_verdicts="11",
        tp="100",
        covered="11",
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
        ref_statements=("龙井茶属于绿茶。",),
        ref_sources=("0",),
        tp="11",
        covered="1",
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
        sources=("0", "1"),
        ref_statements=("Python 3.12 于2023年10月2日发布。",),
        ref_sources=("0",),
        tp="10",
        covered="1",
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
        sources=("1",),
        ref_statements=("长江注入东海。",),
        ref_sources=("1",),
        tp="1",
        covered="1",
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
        ref_statements=("故宫约有九千间房屋。",),
        ref_sources=("",),
        covered="1",
        questions=(("故宫有多少个房间？", 0), "抱歉，我无法完成这个任务。", ("故宫有几间房？", 0)),
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
        ref_statements=("中国最长的河流是长江。",),
        ref_sources=("0",),
        tp="1",
        covered="1",
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
        ref_statements=("长江流入东海。",),
        ref_sources=("0",),
        tp="0",
        covered="0",
        ctx_entities="抱歉，无法提取实体。",
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
        ref_statements=("故宫旧称紫禁城。",),
        ref_sources=("0",),
        tp="10",
        covered="1",
        vectors=(
            real(0.41, 0.07, -0.36, 0.52, -0.18, 0.23, 0.44, -0.09),
            real(0.38, 0.12, -0.29, 0.47, -0.25, 0.31, 0.35, -0.14),
        ),
    ),
    # ---- Added for the other ten metrics --------------------------------------------------------------
    Case(
        id="en-blank-statement-noise",
        question="How tall is the Eiffel Tower?",
        response="It is about as tall as an 81-storey building.",
        contexts=(EIFFEL_H,),
        reference="It is 330 metres tall.",
        statements=("The Eiffel Tower is about as tall as an 81-storey building.", ""),
        verdicts=(1, 0),
        ref_statements=("The Eiffel Tower is 330 metres tall.",),
        ref_sources=("0",),
        tp="00",
        covered="0",
        vectors=(vec(1, 2, 2, 4), vec(2, 1, 2, 4)),
        note="a wrong claim taken from a relevant context, and a blank statement: the blank is counted "
        "in noise_sensitivity's denominator by RAGAS",
    ),
    Case(
        id="en-reference-no-statements",
        question="Who designed the Eiffel Tower?",
        response="Gustave Eiffel's company designed it.",
        contexts=(EIFFEL_D,),
        reference="See the linked article.",
        statements=("Gustave Eiffel's company designed the Eiffel Tower.",),
        verdicts=(1,),
        tp="0",
        vectors=(vec(2, 3, 6), vec(6, 2, 3)),
        note="the reference has no statements: legacy answer_correctness still asks the classifier",
    ),
    Case(
        id="en-reference-unparseable",
        question="What is the capital of France?",
        response="Paris is the capital of France.",
        contexts=("Paris is the capital and largest city of France.",),
        reference="Paris.",
        statements=("Paris is the capital of France.",),
        verdicts=(1,),
        ref_raw="I cannot split this into statements.",
        vectors=(vec(2, 2, 1), vec(1, 2, 2)),
        note="the judge fails on the reference: RAGAS's sentence attribution gets the same raw text",
    ),
    Case(
        id="en-blank-reference",
        question="What does DNA stand for?",
        response="DNA stands for deoxyribonucleic acid.",
        contexts=("Deoxyribonucleic acid (DNA) carries genetic information.",),
        reference="",
        statements=("DNA stands for deoxyribonucleic acid.",),
        verdicts=(1,),
        tp="0",
        vectors=(vec(1, 2, 2), vec(4, 4, 7)),
        note="RAGAS still decomposes and classifies the blank reference; noise_sensitivity raises (NaN)",
    ),
    Case(
        id="en-whitespace-question",
        question="   ",
        response="Honey never spoils.",
        contexts=(
            "Archaeologists have found edible honey in ancient Egyptian tombs.",
            "Bees make honey from nectar.",
        ),
        reference="Honey keeps for thousands of years.",
        statements=("Honey never spoils.",),
        verdicts=(1,),
        sources=("0",),
        ref_statements=("Honey keeps for thousands of years.",),
        ref_sources=("0",),
        tp="1",
        covered="1",
        vectors=(vec(1, 4, 8), vec(8, 1, 4)),
        note="a whitespace-only question is truthy for RAGAS (only '' is missing)",
    ),
    Case(
        id="en-context-in-question",
        question="Is it true that the Nile flows north?",
        response="Yes, the Nile flows north.",
        contexts=("the Nile flows north",),
        reference="Yes.",
        statements=("The Nile flows north.",),
        verdicts=(1,),
        ref_statements=("The Nile flows north.",),
        ref_sources=("0",),
        tp="1",
        covered="1",
        vectors=(vec(2, 3, 6), vec(3, 6, 2)),
        note="nv_context_relevance shortcut: the context is a substring of the question (0.0, no judge)",
    ),
    Case(
        id="en-response-in-context",
        question="What do mitochondria produce?",
        response="most of the cell's supply of ATP",
        contexts=(MITO, PHOTO),
        reference="ATP.",
        statements=("Mitochondria produce most of the cell's supply of ATP.",),
        verdicts=(1,),
        sources=("0",),
        ref_statements=("Mitochondria produce ATP.",),
        ref_sources=("0",),
        tp="1",
        covered="1",
        vectors=(vec(4, 4, 7), vec(7, 4, 4)),
        note="nv_response_groundedness shortcut: the response is a substring of the joined contexts (1.0)",
    ),
    Case(
        id="en-nv-judge1-no-rating",
        question="Which planet is known as the Red Planet?",
        response="Mars is known as the Red Planet.",
        contexts=("Mars is often called the Red Planet because of the iron oxide on its surface.",),
        reference="Mars.",
        statements=("Mars is known as the Red Planet.",),
        verdicts=(1,),
        ref_statements=("Mars is the Red Planet.",),
        ref_sources=("0",),
        tp="1",
        covered="1",
        ratings={
            "nv_accuracy/1": "I am unable to rate this answer.",
            "nv_context_relevance/1": "Not applicable.",
            "nv_response_groundedness/1": "N/A",
        },
        vectors=(vec(6, 6, 7), vec(7, 6, 6)),
        note="judge 1 writes no rating (RAGAS asks 5 times), judge 2 rates: legacy max(nan, x) is NaN",
    ),
    Case(
        id="en-nv-judge2-no-rating",
        question="What is the freezing point of water?",
        response="Water freezes at 0 degrees Celsius.",
        contexts=("Pure water freezes at 0 °C at standard pressure.",),
        reference="0 °C.",
        statements=("Water freezes at 0 degrees Celsius.",),
        verdicts=(1,),
        ref_statements=("Water freezes at 0 °C.",),
        ref_sources=("0",),
        tp="1",
        covered="1",
        ratings={
            "nv_accuracy/2": "Unable to judge.",
            "nv_context_relevance/2": "No score.",
            "nv_response_groundedness/2": "?",
        },
        vectors=(vec(2, 6, 9), vec(6, 2, 9)),
        note="judge 2 writes no rating: legacy max(x, nan) keeps judge 1's rating",
    ),
    Case(
        id="en-entities-duplicates",
        question="Where is the Eiffel Tower and when was it completed?",
        response="It is in Paris and was completed in 1889.",
        contexts=("The Eiffel Tower stands in Paris. The Eiffel Tower was completed in 1889.",),
        reference="The Eiffel Tower is in Paris; the eiffel tower was finished in 1889.",
        statements=("The Eiffel Tower is in Paris.", "The Eiffel Tower was completed in 1889."),
        verdicts=(1, 1),
        ref_statements=("The Eiffel Tower is in Paris.", "The Eiffel Tower was finished in 1889."),
        ref_sources=("0", "0"),
        tp="11",
        covered="11",
        ref_entities=("Eiffel Tower", "Paris", "eiffel tower", "1889", "Paris", " Paris"),
        ctx_entities=("Eiffel Tower", "Paris", "Eiffel Tower", "1889"),
        vectors=(vec(3, 4, 12), vec(4, 12, 3)),
        note="entity lists with duplicates, a case variant and a padded variant: exact strings, list length",
    ),
    Case(
        id="en-entities-blank-entity",
        question="What is the Louvre?",
        response="The Louvre is a museum in Paris.",
        contexts=("The Louvre is the world's most-visited museum.",),
        reference="The Louvre is an art museum in Paris.",
        statements=("The Louvre is a museum.", "The Louvre is in Paris."),
        verdicts=(1, 0),
        ref_statements=("The Louvre is an art museum.", "The Louvre is in Paris."),
        ref_sources=("0", ""),
        tp="11",
        covered="01",
        ref_entities=("Louvre", "", "Paris"),
        ctx_entities=("Louvre", ""),
        vectors=(vec(2, 4, 5, 6), vec(5, 4, 2, 6)),
        note="the judge lists an empty string as an entity on both sides",
    ),
    Case(
        id="en-judge-slips",
        question="Name two moons of Jupiter.",
        response="Io and Europa orbit Jupiter. Ganymede is the largest moon.",
        contexts=(
            "Io and Europa are two of Jupiter's Galilean moons.",
            "Ganymede is the largest moon in the Solar System.",
        ),
        reference="Io and Europa.",
        statements=("Io orbits Jupiter.", "Europa orbits Jupiter.", "Ganymede is the largest moon."),
        verdicts=(1, 1, 1),
        sources=("0", "0", "1"),
        ref_statements=("Io is a moon of Jupiter.", "Europa is a moon of Jupiter."),
        ref_sources=("0", "0"),
        tp="110",
        covered="11",
        slips={
            # Two verdicts for three statements: faithfulness counts the verdicts returned (1 of 2) ...
            "nli/joined": _verdict_list(("Io orbits Jupiter.", 1), ("Europa orbits Jupiter.", 0)),
            # ... noise_sensitivity's verdict matrices become ragged (RAGAS: numpy raises, NaN).
            "nli/reference": _verdict_list(("Io orbits Jupiter.", 1), ("Europa orbits Jupiter.", 1)),
            # The classifier sorts nothing: legacy F-beta of (0, 0, 0) is 0.
            "correctness": '{"TP": [], "FP": [], "FN": []}',
        },
        vectors=(vec(1, 2, 2, 4), vec(4, 2, 2, 1, 2, 2, 4, 4)),
        note="judge slips in one-call JSON answers (compared in generate mode)",
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
        context = c.joined
        for statement, verdict in zip(c.statements, c.verdicts, strict=True):
            script.set_verdict(context, statement, verdict)
        # RAGAS and ours embed an empty text as a single space.
        script.set_embedding(c.reference or " ", c.vectors[0])
        script.set_embedding(c.response or " ", c.vectors[1])
        _add_reference_side(script, c)
        _add_other_metrics(script, c)
    return script


def _add_reference_side(script: Script, c: Case) -> None:
    """The reference's statements and every (text, statement) verdict the other metrics ask for."""
    script.set_texts(c.question, c.response, c.reference)
    script.set_statements(
        c.question, c.reference, c.ref_raw if c.ref_raw is not None else list(c.ref_statements)
    )
    answer, reference = c.statements, c.ref_statements
    # Single contexts (noise_sensitivity) against both statement lists.
    for which, statements in (("response", answer), ("reference", reference)):
        for statement, row in zip(statements, c.supports(which), strict=True):
            for text, verdict in zip(c.contexts, row, strict=True):
                script.set_verdict(text, statement, verdict)
    for statement, row, verdict in zip(answer, c.supports("response"), c.verdicts, strict=True):
        if any(row) and not verdict:
            raise ValueError(f"{c.id}: a single context supports {statement!r} but the joined ones do not.")
    # The joined contexts against the reference's statements (context_recall).
    for statement, verdict in zip(reference, c.ref_joined_verdicts(), strict=True):
        script.set_verdict(c.joined, statement, verdict)
    # The reference against the response's statements (TP; noise_sensitivity), the response against the
    # reference's (FN).
    if answer and c.ref_raw is None:  # RAGAS's noise_sensitivity asks even when the reference has none
        for statement, verdict in zip(answer, _bits(c.tp), strict=True):
            script.set_verdict(c.reference, statement, verdict)
    if reference:
        for statement, verdict in zip(reference, _bits(c.covered), strict=True):
            script.set_verdict(c.response, statement, verdict)


def _add_other_metrics(script: Script, c: Case) -> None:
    """Usefulness, entities, answer_relevancy's generations and vectors, and the NV ratings."""
    for which, answer in (("reference", c.reference), ("response", c.response)):
        for text, useful in zip(c.contexts, _useful(c, which), strict=True):
            script.set_useful(c.question, text, answer, useful)
    for text, entities in ((c.reference, c.ref_entities), (c.joined, c.ctx_entities)):
        script.set_entities(text, lexicon_entities(text) if entities is None else entities)
    generations = _questions(c)
    script.set_questions(c.response, generations)
    for text in [c.question] + [g[0] for g in generations if not isinstance(g, str)]:
        script.set_embedding(text, c.extra_vectors.get(text, auto_vector(text)))
    ratings = _default_ratings(c) | c.ratings
    inputs = {
        "nv_accuracy": (c.question, c.response, c.reference),
        "nv_context_relevance": (c.question, c.joined),
        "nv_response_groundedness": (c.joined, c.response),
    }
    for key, text in ratings.items():
        metric, _, judge = key.partition("/")
        script.set_rating(metric, int(judge), inputs[metric], text)
    for slip, text in c.slips.items():
        if slip == "correctness":
            script.set_correctness_slip(c.question, text)
        else:
            against = c.joined if slip == "nli/joined" else c.reference
            script.set_verdicts_slip(against, c.statements, text)
