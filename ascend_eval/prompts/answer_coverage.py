"""Does the response answer the question, all of it? (answer_relevancy's coverage verdict)

answer_relevancy compares the user's question with questions the judge writes back from the response. That
cosine sees a response about another subject, but not one that answers half of a two-part question, or
pads a partial answer with unrelated facts: the question written back from it is still close to the user's.
RAGAS defines the metric as penalising exactly those (incomplete answers and redundant information), so by
default the metric also asks the judge this verdict and weights its score by it. Two forms of one judgement:

* `ANSWERS_QUESTION`: a `Classify` request answered "1" (answers every part) or "0" from next-token
  probabilities, calibrated on its own anchors (a complete answer and a partial, padded one).
* `ANSWERS_QUESTION_VERDICT`: JSON `{reason, verdict}`, for the "generate" judge mode.
"""

from __future__ import annotations

from pydantic import BaseModel

from ascend_eval.prompts.base import yes_no_forms


class CoverageInput(BaseModel):
    question: str
    response: str


class CoverageVerdict(BaseModel):
    reason: str
    """Written first, so that the verdict follows the reasoning."""
    verdict: int
    """1 if the response answers every part of the question, 0 if not."""


_TASK = {
    "en": (
        "You are given a question and a response to it. Decide whether the response answers the question: "
        "1 if it directly answers every part of the question, 0 if it leaves a part of the question "
        "unanswered, answers a different question, or evades. Judge only whether the question is "
        "answered, not whether the answer is true."
    ),
    "zh": (
        "给定一个问题和对它的回答。判断回答是否回答了这个问题：如果回答直接回答了问题的每一部分，记为 1；"
        "如果回答漏掉了问题的某一部分、答非所问或回避作答，记为 0。"
        "只判断问题有没有被回答，不判断回答是否正确。"
    ),
}

_REASON_FIRST = {
    "en": " First give a short reason, then the verdict: 1 if every part is answered, 0 if not.",
    "zh": "先给出简短理由，再给出结论：每一部分都回答了为 1，否则为 0。",
}

_EXAMPLES = {
    "en": [
        (
            CoverageInput(
                question="When did the Eiffel Tower open, and how tall is it?",
                response="The Eiffel Tower opened in 1889 and is about 330 metres tall.",
            ),
            CoverageVerdict(reason="It gives both the opening year and the height.", verdict=1),
        ),
        (
            CoverageInput(
                question="When did the Eiffel Tower open, and how tall is it?",
                response="The Eiffel Tower opened in 1889. Paris is the capital of France.",
            ),
            CoverageVerdict(
                reason="It gives the opening year but not the height; the sentence about Paris answers "
                "nothing that was asked.",
                verdict=0,
            ),
        ),
    ],
    "zh": [
        (
            CoverageInput(question="长江有多长，流入哪片海？", response="长江全长约6300公里，最终流入东海。"),
            CoverageVerdict(reason="回答给出了长度，也说明了流入的海。", verdict=1),
        ),
        (
            CoverageInput(
                question="长江有多长，流入哪片海？", response="长江全长约6300公里。长江流域物产丰富。"
            ),
            CoverageVerdict(reason="回答只给出了长度，没有说明流入哪片海；物产一句与提问无关。", verdict=0),
        ),
    ],
}

_ANCHOR_TEXTS = {
    "en": [
        (
            "When does the city library open on Saturdays, and when does it close?",
            "On Saturdays the city library opens at ten and closes at four.",
            "On Saturdays the city library opens at ten. It has a children's reading room.",
        ),
        (
            "Who designed the harbour bridge, and when did it open?",
            "The engineer Maria Lindqvist designed the harbour bridge, and it opened in 1974.",
            "The harbour bridge is painted grey and carries four lanes of traffic.",
        ),
        (
            "What does the factory produce, and where does it export them?",
            "The factory produces bicycle frames and exports most of them to Germany.",
            "The factory produces bicycle frames. It employs about three hundred people.",
        ),
    ],
    "zh": [
        (
            "市图书馆周六几点开门，几点闭馆？",
            "市图书馆周六上午十点开门，下午四点闭馆。",
            "市图书馆周六上午十点开门。馆内有一间儿童阅览室。",
        ),
        (
            "港口大桥是谁设计的，哪一年通车？",
            "港口大桥由工程师林慧敏设计，1974年建成通车。",
            "港口大桥通体漆成灰色，桥面有四条车道。",
        ),
        (
            "这家工厂生产什么，产品主要出口到哪里？",
            "这家工厂生产自行车车架，产品大多出口德国。",
            "这家工厂生产自行车车架。工厂有大约三百名员工。",
        ),
    ],
}  # fmt: skip
"""(two-part question, a response answering both parts, one answering a part or none, padded) per
language: invented facts, in the shape of a question and a short answer. They calibrate `ANSWERS_QUESTION`:
the generic sentence anchors of `prompts/calibration.py` are a statement judged against itself, which says
nothing about whether a question was answered."""

_ANCHORS = {
    lang: [
        (CoverageInput(question=q, response=full), CoverageInput(question=q, response=partial))
        for q, full, partial in rows
    ]
    for lang, rows in _ANCHOR_TEXTS.items()
}

ANSWERS_QUESTION, ANSWERS_QUESTION_VERDICT = yes_no_forms(
    "answers_question",
    _TASK,
    _REASON_FIRST,
    CoverageInput,
    CoverageVerdict,
    _EXAMPLES,
    _ANCHORS,  # type: ignore[arg-type]
    # on the long English pairs the verdicts pointed to the sample read 3 of 6 pairs right, against 6 of 6
    # with the question and response written out (docs/metrics.md, "Prompt layout")
    sample_first=False,
)
