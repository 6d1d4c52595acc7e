"""Was one retrieved context useful for arriving at an answer? (context_precision, context_utilization)

One request per retrieved context, in rank order. The "answer" is the reference for context_precision and
the response for context_utilization; the question is the same either way. Two forms of one judgement:

* `CONTEXT_USEFUL`: a `Classify` request answered "1" (useful) or "0" from next-token probabilities.
* `CONTEXT_USEFUL_VERDICT`: JSON `{reason, verdict}` (RAGAS's procedure, the "generate" judge mode).
"""

from __future__ import annotations

from pydantic import BaseModel

from ascend_eval.prompts.base import ClassifyPromptSpec, PromptSpec

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

CONTEXT_USEFUL = ClassifyPromptSpec(
    name="context_useful",
    version=1,
    instruction=_TASK,
    input=UsefulnessInput,
    labels=(NOT_USEFUL, USEFUL),
    positive=USEFUL,
    examples={
        lang: [(x, USEFUL if y.verdict else NOT_USEFUL) for x, y in pairs]
        for lang, pairs in _EXAMPLES.items()
    },
)

CONTEXT_USEFUL_VERDICT = PromptSpec(
    name="context_useful_verdict",
    version=1,
    instruction={lang: _TASK[lang] + _REASON_FIRST[lang] for lang in _TASK},  # type: ignore[index]
    input=UsefulnessInput,
    output=UsefulnessVerdict,
    examples=_EXAMPLES,
    max_tokens=256,
)
