"""Which of a list of statements does a context support? One JSON request per (context, statement list).

The `judge_mode="generate"` counterpart of `nli.STATEMENT_SUPPORT`: RAGAS's procedure, where the judge
writes a reason and then a 0/1 verdict for every statement in one answer. Used by faithfulness (context =
the joined contexts) and noise_sensitivity (each context, and the reference, in turn).
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field

from ascend_eval.prompts.base import PromptSpec
from ascend_eval.prompts.ratings import LenientInts
from ascend_eval.prompts.statements import MAX_STATEMENTS


class SupportListInput(BaseModel):
    context: str
    statements: list[str]


class StatementVerdict(LenientInts):  # a verdict written "1" or 1.0 is read as RAGAS's int reads it
    # Field order is the order a constrained decoder writes them: the reason comes before the verdict.
    statement: str
    reason: str
    verdict: Literal[0, 1]


class StatementVerdicts(BaseModel):
    statements: list[StatementVerdict] = Field(json_schema_extra={"maxItems": MAX_STATEMENTS})


STATEMENT_VERDICTS = PromptSpec(
    name="statement_verdicts",
    version=1,
    instruction={
        "en": (
            "You are given a context and a list of statements. For every statement, in the given order, "
            "copy the statement, explain in one sentence whether the context alone establishes it, and give "
            "a verdict: 1 if the context states it or directly implies it, 0 if the context contradicts it, "
            "does not mention it, or supports only part of it. Do not use outside knowledge."
        ),
        "zh": (
            "给定一段上下文和一组陈述。请按给定顺序逐条处理：抄写该陈述，用一句话说明能否仅凭上下文确认它，"
            "并给出判定：上下文明确说明或直接蕴含该陈述为 1；上下文与之矛盾、没有提到或只支持其中一部分为 0。"
            "不要使用上下文以外的知识。"
        ),
    },
    input=SupportListInput,
    output=StatementVerdicts,
    examples={
        "en": [
            (
                SupportListInput(
                    context="The Sydney Opera House opened in 1973. It was designed by the Danish architect "
                    "Jørn Utzon.",
                    statements=[
                        "The Sydney Opera House opened in 1973.",
                        "Jørn Utzon was Danish.",
                        "The Sydney Opera House cost 102 million dollars.",
                    ],
                ),
                StatementVerdicts(
                    statements=[
                        StatementVerdict(
                            statement="The Sydney Opera House opened in 1973.",
                            reason="The context gives the same opening year.",
                            verdict=1,
                        ),
                        StatementVerdict(
                            statement="Jørn Utzon was Danish.",
                            reason="The context calls Utzon a Danish architect.",
                            verdict=1,
                        ),
                        StatementVerdict(
                            statement="The Sydney Opera House cost 102 million dollars.",
                            reason="The context says nothing about the cost.",
                            verdict=0,
                        ),
                    ]
                ),
            ),
            (
                SupportListInput(
                    context="Honey bees communicate the direction of food with a waggle dance.",
                    statements=["Honey bees live for about six weeks in summer."],
                ),
                StatementVerdicts(
                    statements=[
                        StatementVerdict(
                            statement="Honey bees live for about six weeks in summer.",
                            reason="The context is about the waggle dance, not about lifespan.",
                            verdict=0,
                        )
                    ]
                ),
            ),
        ],
        "zh": [
            (
                SupportListInput(
                    context="都江堰由秦国蜀郡太守李冰主持修建，至今仍在灌溉成都平原。",
                    statements=[
                        "都江堰由李冰主持修建。",
                        "都江堰至今仍在使用。",
                        "都江堰建成于公元前256年。",
                    ],
                ),
                StatementVerdicts(
                    statements=[
                        StatementVerdict(
                            statement="都江堰由李冰主持修建。", reason="上下文直接说明了这一点。", verdict=1
                        ),
                        StatementVerdict(
                            statement="都江堰至今仍在使用。",
                            reason="上下文说它至今仍在灌溉成都平原。",
                            verdict=1,
                        ),
                        StatementVerdict(
                            statement="都江堰建成于公元前256年。",
                            reason="上下文没有提到建成年份。",
                            verdict=0,
                        ),
                    ]
                ),
            ),
            (
                SupportListInput(
                    context="大熊猫主要以竹子为食。",
                    statements=["大熊猫生活在四川。"],
                ),
                StatementVerdicts(
                    statements=[
                        StatementVerdict(
                            statement="大熊猫生活在四川。",
                            reason="上下文只谈食物，没有提到分布地区。",
                            verdict=0,
                        )
                    ]
                ),
            ),
        ],
    },
    # One fixed budget for every request: requests are batched by their generation params, so a budget
    # scaled to each statement count would split one batch into many.
    max_tokens=2048,
)
