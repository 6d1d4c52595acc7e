"""Was one retrieved context useful for arriving at an answer? (context_precision, context_utilization)

One request per retrieved context, in rank order. The "answer" is the reference for context_precision and
the response for context_utilization; the question is the same either way. Two forms of one judgement:

* `CONTEXT_USEFUL`: a `Classify` request answered "1" (useful) or "0" from next-token probabilities.
* `CONTEXT_USEFUL_VERDICT`: JSON `{reason, verdict}` (RAGAS's procedure, the "generate" judge mode).
"""

from __future__ import annotations

from pydantic import BaseModel

from ascend_eval.prompts.base import yes_no_forms

USEFUL, NOT_USEFUL = "1", "0"


class UsefulnessInput(BaseModel):
    question: str
    context: str
    answer: str


class UsefulnessVerdict(BaseModel):
    reason: str
    """Written first, so that the verdict follows the reasoning."""
    verdict: int
    """1 if the context was useful, 0 if not (RAGAS reads any non-zero value as 1)."""


_TASK = {
    "en": (
        "You are given a question, an answer to it and one retrieved context. Decide whether the context "
        "was useful for arriving at this answer: it is useful (1) if it contains information the answer "
        "states, relies on or can be derived from, and not useful (0) if it is off-topic or about "
        "something the answer does not use. Judge the context only against this answer."
    ),
    "zh": (
        "给定一个问题、对它的一个回答，以及一段检索到的上下文。判断这段上下文对得出该回答是否有用："
        "如果上下文包含回答所陈述、所依赖或可据以推出回答的信息，则有用（1）；如果上下文离题，或讲的是"
        "回答没有用到的内容，则无用（0）。只针对这个回答来判断。"
    ),
}
_REASON_FIRST = {
    "en": " First give a short reason, then the verdict: 1 if useful, 0 if not.",
    "zh": "先给出简短理由，再给出结论：有用为 1，无用为 0。",
}

_EXAMPLES = {
    "en": [
        (
            UsefulnessInput(
                question="What is the capital of Australia?",
                context="Canberra was chosen as the capital of Australia in 1908 as a compromise between "
                "Sydney and Melbourne.",
                answer="The capital of Australia is Canberra.",
            ),
            UsefulnessVerdict(
                reason="The context names Canberra as the capital, which is the answer.", verdict=1
            ),
        ),
        (
            UsefulnessInput(
                question="What is the capital of Australia?",
                context="Sydney is the largest city in Australia and is known for its Opera House.",
                answer="The capital of Australia is Canberra.",
            ),
            UsefulnessVerdict(
                reason="The context is about Sydney and says nothing about Canberra or the capital.",
                verdict=0,
            ),
        ),
    ],
    "zh": [
        (
            UsefulnessInput(
                question="李白是哪个朝代的诗人？",
                context="李白，字太白，号青莲居士，唐朝浪漫主义诗人，被后人誉为“诗仙”。",
                answer="李白是唐朝诗人。",
            ),
            UsefulnessVerdict(reason="上下文说明李白是唐朝诗人，正是回答的内容。", verdict=1),
        ),
        (
            UsefulnessInput(
                question="李白是哪个朝代的诗人？",
                context="苏轼是北宋文学家、书法家，唐宋八大家之一。",
                answer="李白是唐朝诗人。",
            ),
            UsefulnessVerdict(reason="上下文讲的是苏轼，与李白及其朝代无关。", verdict=0),
        ),
    ],
}

_ANCHOR_TEXTS = {
    "en": [
        (
            "When does the city library open on Saturdays?",
            "The city library opens at ten on Saturdays and closes at four; on weekdays it stays open late.",
            "The city library was renovated in 2015 and now has a children's reading room.",
            "On Saturdays the city library opens at ten.",
        ),
        (
            "Who designed the harbour bridge?",
            "The harbour bridge was designed by the engineer Maria Lindqvist and opened to traffic in 1974.",
            "The harbour bridge is painted grey and carries four lanes of traffic.",
            "The engineer Maria Lindqvist designed the harbour bridge.",
        ),
        (
            "What does the factory produce?",
            "The factory, founded in 1962, produces bicycle frames and exports most of them to Germany.",
            "The factory employs about three hundred people and runs two shifts a day.",
            "The factory produces bicycle frames.",
        ),
    ],
    "zh": [
        (
            "市图书馆周六几点开门？",
            "市图书馆周六上午十点开门，下午四点闭馆；工作日开放到晚上八点。",
            "市图书馆于2015年翻修，新增了一间儿童阅览室。",
            "市图书馆周六上午十点开门。",
        ),
        (
            "港口大桥是谁设计的？",
            "港口大桥由工程师林慧敏设计，1974年建成通车。",
            "港口大桥通体漆成灰色，桥面有四条车道。",
            "港口大桥是工程师林慧敏设计的。",
        ),
        (
            "这家工厂生产什么？",
            "这家工厂创办于1962年，生产自行车车架，产品大多出口德国。",
            "这家工厂有大约三百名员工，每天两班倒。",
            "这家工厂生产自行车车架。",
        ),
    ],
}  # fmt: skip
"""(question, context holding the answer's fact, same-subject context without it, answer) per language:
invented facts, so that no judge knows them beforehand, in the shape of a retrieved passage and a short
answer. They calibrate `CONTEXT_USEFUL` (see `prompts/calibration.py` for why this prompt has its own)."""

_ANCHORS = {
    lang: [
        (
            UsefulnessInput(question=q, context=useful, answer=a),
            UsefulnessInput(question=q, context=off, answer=a),
        )
        for q, useful, off, a in rows
    ]
    for lang, rows in _ANCHOR_TEXTS.items()
}

CONTEXT_USEFUL, CONTEXT_USEFUL_VERDICT = yes_no_forms(
    "context_useful",
    _TASK,
    _REASON_FIRST,
    UsefulnessInput,
    UsefulnessVerdict,
    _EXAMPLES,
    _ANCHORS,  # type: ignore[arg-type]
    sample_first=False,  # context_utilization lost a pair sample first (docs/metrics.md, "Prompt layout")
)
