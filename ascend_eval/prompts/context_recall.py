"""Which sentences of the reference can the retrieved contexts account for? (context_recall, "generate" mode)

One JSON call per sample over the whole reference, as RAGAS does: the judge splits the reference into
sentences and marks each one attributed (1) or not (0), with a reason. The default "classify" mode does not
use this prompt: it splits the reference with STATEMENTS and asks STATEMENT_SUPPORT per statement.
"""

from __future__ import annotations

from pydantic import BaseModel, Field

from ascend_eval.prompts.base import PromptSpec
from ascend_eval.prompts.statements import MAX_STATEMENTS


class AttributionInput(BaseModel):
    question: str
    context: str
    answer: str


class Attribution(BaseModel):
    statement: str
    reason: str
    attributed: int
    """1 if the context supports the sentence, 0 if not (RAGAS reads any non-zero value as 1)."""


class Attributions(BaseModel):
    classifications: list[Attribution] = Field(json_schema_extra={"maxItems": MAX_STATEMENTS})


CONTEXT_ATTRIBUTION = PromptSpec(
    name="context_attribution",
    version=1,
    instruction={
        "en": (
            "You are given a question, a context and an answer. Go through the answer one sentence at a "
            "time. For each sentence, copy it as the statement, give a short reason, and set attributed "
            "to 1 if the context supports the sentence (states it or clearly implies it) or 0 if it does "
            "not. Use only the context, never your own knowledge, and list every sentence of the answer."
        ),
        "zh": (
            "给定一个问题、一段上下文和一个回答。逐句检查回答：对每一句，把它抄写为 statement，给出简短理由，"
            "如果上下文支持这句话（明确说明或清楚蕴含）则 attributed 记为 1，否则记为 0。只依据上下文判断，"
            "不要使用你自己的知识，并列出回答中的每一句。"
        ),
    },
    input=AttributionInput,
    output=Attributions,
    examples={
        "en": [
            (
                AttributionInput(
                    question="Tell me about the Golden Gate Bridge.",
                    context="The Golden Gate Bridge is a suspension bridge spanning the Golden Gate strait "
                    "in San Francisco. It opened to traffic in 1937.",
                    answer="The Golden Gate Bridge is a suspension bridge in San Francisco. It opened in "
                    "1937. Its towers are painted a color called International Orange.",
                ),
                Attributions(
                    classifications=[
                        Attribution(
                            statement="The Golden Gate Bridge is a suspension bridge in San Francisco.",
                            reason="The context says it is a suspension bridge in San Francisco.",
                            attributed=1,
                        ),
                        Attribution(
                            statement="It opened in 1937.",
                            reason="The context gives 1937 as the opening year.",
                            attributed=1,
                        ),
                        Attribution(
                            statement="Its towers are painted a color called International Orange.",
                            reason="The context does not mention the color of the towers.",
                            attributed=0,
                        ),
                    ]
                ),
            )
        ],
        "zh": [
            (
                AttributionInput(
                    question="介绍一下都江堰。",
                    context="都江堰位于四川省成都市，是战国时期秦国蜀郡太守李冰主持修建的水利工程。",
                    answer="都江堰位于四川成都。都江堰由李冰主持修建。都江堰至今仍在灌溉农田。",
                ),
                Attributions(
                    classifications=[
                        Attribution(
                            statement="都江堰位于四川成都。",
                            reason="上下文说它位于四川省成都市。",
                            attributed=1,
                        ),
                        Attribution(
                            statement="都江堰由李冰主持修建。",
                            reason="上下文说是李冰主持修建的。",
                            attributed=1,
                        ),
                        Attribution(
                            statement="都江堰至今仍在灌溉农田。",
                            reason="上下文没有提到今天的灌溉用途。",
                            attributed=0,
                        ),
                    ]
                ),
            )
        ],
    },
    # A reason per sentence of a long reference does not fit the default 512.
    max_tokens=1536,
    writes_from=("answer",),  # it copies the answer's sentences (`PromptSpec.writes_from`)
)
