"""Sort a response's statements and a reference's statements into TP, FP and FN (answer_correctness).

Used only in the "generate" judge mode, where one JSON call per sample does what RAGAS's correctness
classifier does. In the default "classify" mode answer_correctness asks STATEMENT_SUPPORT once per
statement instead (see `ascend_eval.metrics.answer_correctness`).
"""

from __future__ import annotations

from pydantic import BaseModel, Field

from ascend_eval.prompts.base import PromptSpec
from ascend_eval.prompts.statements import MAX_STATEMENTS


class CorrectnessInput(BaseModel):
    question: str
    response_statements: list[str]
    reference_statements: list[str]


class JudgedStatement(BaseModel):
    statement: str
    reason: str


# RAGAS's output shape: true positives, false positives, false negatives, each with a reason. (No class
# docstring: pydantic would put it into the JSON schema the judge sees.)
class CorrectnessVerdicts(BaseModel):
    TP: list[JudgedStatement] = Field(json_schema_extra={"maxItems": MAX_STATEMENTS})
    FP: list[JudgedStatement] = Field(json_schema_extra={"maxItems": MAX_STATEMENTS})
    FN: list[JudgedStatement] = Field(json_schema_extra={"maxItems": MAX_STATEMENTS})


def _judged(statement: str, reason: str) -> JudgedStatement:
    return JudgedStatement(statement=statement, reason=reason)


CORRECTNESS = PromptSpec(
    name="correctness",
    version=1,
    instruction={
        "en": (
            "You are given a question, the statements made by a response to it, and the statements of a "
            "reference answer that is known to be correct. Sort the statements into three lists:\n"
            "- TP: response statements that the reference statements support, stated there or clearly "
            "implied.\n"
            "- FP: response statements that the reference statements do not support, because they "
            "contradict the reference or go beyond what it says.\n"
            "- FN: reference statements that no response statement covers.\n"
            "Put every response statement in exactly one of TP and FP, and every reference statement that "
            "the response misses in FN. Copy each statement as written and add a short reason. Judge only "
            "by the reference statements, never by your own knowledge."
        ),
        "zh": (
            "给定一个问题、某个回答中的陈述，以及一个已知正确的参考答案中的陈述。请把这些陈述分成三组：\n"
            "- TP：参考答案的陈述能够支持的回答陈述（参考答案明确说明或清楚蕴含）。\n"
            "- FP：参考答案的陈述不能支持的回答陈述（与参考答案矛盾，或超出了参考答案所说的内容）。\n"
            "- FN：没有任何回答陈述覆盖到的参考答案陈述。\n"
            "每条回答陈述必须且只能放入 TP 或 FP 之一；参考答案中被回答遗漏的陈述放入 FN。"
            "按原文抄写每条陈述，并附上简短理由。只依据参考答案的陈述判断，不要使用你自己的知识。"
        ),
    },
    input=CorrectnessInput,
    output=CorrectnessVerdicts,
    examples={
        "en": [
            (
                CorrectnessInput(
                    question="Who painted the Mona Lisa and where is it displayed?",
                    response_statements=[
                        "Leonardo da Vinci painted the Mona Lisa.",
                        "The Mona Lisa is displayed in the British Museum.",
                    ],
                    reference_statements=[
                        "Leonardo da Vinci painted the Mona Lisa.",
                        "The Mona Lisa is displayed in the Louvre.",
                        "The Louvre is in Paris.",
                    ],
                ),
                CorrectnessVerdicts(
                    TP=[
                        _judged(
                            "Leonardo da Vinci painted the Mona Lisa.",
                            "The reference names the same painter.",
                        )
                    ],
                    FP=[
                        _judged(
                            "The Mona Lisa is displayed in the British Museum.",
                            "The reference places the painting in the Louvre, not the British Museum.",
                        )
                    ],
                    FN=[
                        _judged(
                            "The Mona Lisa is displayed in the Louvre.",
                            "The response gives a different museum.",
                        ),
                        _judged("The Louvre is in Paris.", "The response does not say where the museum is."),
                    ],
                ),
            ),
            (
                CorrectnessInput(
                    question="What do honeybees produce?",
                    response_statements=[
                        "Honeybees produce honey.",
                        "Honeybees produce beeswax.",
                        "Honeybees are insects.",
                    ],
                    reference_statements=["Honeybees produce honey.", "Honeybees produce beeswax."],
                ),
                CorrectnessVerdicts(
                    TP=[
                        _judged("Honeybees produce honey.", "The reference states it."),
                        _judged("Honeybees produce beeswax.", "The reference states it."),
                    ],
                    FP=[
                        _judged(
                            "Honeybees are insects.",
                            "True, but the reference does not say it, so it is not supported.",
                        )
                    ],
                    FN=[],
                ),
            ),
        ],
        "zh": [
            (
                CorrectnessInput(
                    question="《红楼梦》的作者是谁？成书于哪个朝代？",
                    response_statements=["《红楼梦》的作者是曹雪芹。", "《红楼梦》成书于明朝。"],
                    reference_statements=["《红楼梦》的作者是曹雪芹。", "《红楼梦》成书于清朝。"],
                ),
                CorrectnessVerdicts(
                    TP=[_judged("《红楼梦》的作者是曹雪芹。", "参考答案给出的作者相同。")],
                    FP=[_judged("《红楼梦》成书于明朝。", "参考答案说成书于清朝，与此矛盾。")],
                    FN=[_judged("《红楼梦》成书于清朝。", "回答给出的朝代不同。")],
                ),
            ),
            (
                CorrectnessInput(
                    question="大熊猫主要吃什么？",
                    response_statements=["大熊猫主要吃竹子。", "大熊猫是中国的国宝。"],
                    reference_statements=["大熊猫主要吃竹子。", "大熊猫偶尔也吃小动物。"],
                ),
                CorrectnessVerdicts(
                    TP=[_judged("大熊猫主要吃竹子。", "参考答案明确说明。")],
                    FP=[_judged("大熊猫是中国的国宝。", "参考答案没有提到这一点。")],
                    FN=[_judged("大熊猫偶尔也吃小动物。", "回答没有提到大熊猫吃小动物。")],
                ),
            ),
        ],
    },
    # A reason per statement for up to 2 x MAX_STATEMENTS statements does not fit the default 512.
    max_tokens=2048,
)
