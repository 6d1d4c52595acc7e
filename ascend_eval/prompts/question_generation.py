"""Write the question a response answers, and flag evasive responses (answer_relevancy).

The judge sees the response only, never the user's question: the metric then compares the written
question with the real one by embeddings. answer_relevancy asks several times with different sampling
seeds (`sampled_request`), so the questions differ the way RAGAS's n>1 generations do.
"""

from __future__ import annotations

from dataclasses import replace

from pydantic import BaseModel

from ascend_eval.models.base import GenerateRequest
from ascend_eval.prompts.base import PromptSpec
from ascend_eval.text.language import Language

SAMPLING_TEMPERATURE = 0.3
"""RAGAS's temperature whenever it asks for more than one generation of a prompt."""


class QuestionFromResponseInput(BaseModel):
    response: str


class GeneratedQuestion(BaseModel):
    question: str
    noncommittal: int
    """1 if the response is evasive or vague, 0 if it commits to an answer (RAGAS reads any non-zero
    value as 1)."""


RESPONSE_QUESTION = PromptSpec(
    name="response_question",
    version=1,
    instruction={
        "en": (
            "Read the response below and write the one question that it most directly answers, phrased "
            "the way a user would ask it. Write the question in the same language as the response. Also "
            "rate the response as noncommittal: 1 if it evades, stays vague or declines to answer (for "
            "example 'I don't know', 'I'm not sure', 'it depends' without saying on what), 0 if it "
            "commits to an answer."
        ),
        "zh": (
            "阅读下面的回答，写出它最直接回答的那个问题，措辞要像用户提问一样。问题使用与回答相同的语言。"
            "同时判断回答是否含糊其辞（noncommittal）：如果回答回避、含糊或拒绝作答（例如“我不知道”"
            "“我不确定”“视情况而定”却不说明依据），记为 1；如果回答给出了明确的答案，记为 0。"
        ),
    },
    input=QuestionFromResponseInput,
    output=GeneratedQuestion,
    examples={
        "en": [
            (
                QuestionFromResponseInput(
                    response="The Amazon River flows through Peru, Colombia and Brazil before it reaches "
                    "the Atlantic Ocean."
                ),
                GeneratedQuestion(
                    question="Which countries does the Amazon River flow through?", noncommittal=0
                ),
            ),
            (
                QuestionFromResponseInput(
                    response="I'm not sure in which year the first modern Olympic marathon was run; I have "
                    "no reliable information about it."
                ),
                GeneratedQuestion(
                    question="In which year was the first modern Olympic marathon run?", noncommittal=1
                ),
            ),
        ],
        "zh": [
            (
                QuestionFromResponseInput(response="珠穆朗玛峰海拔约8849米，位于中国与尼泊尔的边境上。"),
                GeneratedQuestion(question="珠穆朗玛峰有多高，位于哪里？", noncommittal=0),
            ),
            (
                QuestionFromResponseInput(
                    response="这个我无法确定，我没有关于这家公司2025年营收的可靠信息。"
                ),
                GeneratedQuestion(question="这家公司2025年的营收是多少？", noncommittal=1),
            ),
        ],
    },
    max_tokens=256,
    writes_from=("response",),  # the response always in the request (`PromptSpec.writes_from`)
)


def sampled_request(
    inputs: QuestionFromResponseInput, language: Language, *, seed: int, sampled: bool = True
) -> GenerateRequest:
    """One RESPONSE_QUESTION request drawn with its own sampling seed.

    Args:
        inputs: the response to write a question for.
        language: the prompt language.
        seed: the sampling seed; requests with different seeds are different requests (never deduplicated)
            and give different questions.
        sampled: False for greedy decoding (RAGAS decodes a single generation at near-zero temperature).

    Returns:
        The request, at temperature `SAMPLING_TEMPERATURE` (or 0 when not `sampled`).
    """
    request = RESPONSE_QUESTION.request(inputs, language)
    temperature = SAMPLING_TEMPERATURE if sampled else 0.0
    return replace(request, params=replace(request.params, temperature=temperature, seed=seed))
