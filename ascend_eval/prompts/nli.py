"""Is a statement supported by a context? One `Classify` request per statement, answered "1" or "0".

Fanning out one request per statement (rather than one JSON list per sample, as RAGAS does) lets the
engine batch every statement of every sample into one forward pass, and gives a probability per verdict.
"""

from __future__ import annotations

from pydantic import BaseModel

from ascend_eval.prompts.base import ClassifyPromptSpec

SUPPORTED, UNSUPPORTED = "1", "0"


class SupportInput(BaseModel):
    context: str
    statement: str


STATEMENT_SUPPORT = ClassifyPromptSpec(
    name="statement_support",
    version=1,
    instruction={
        "en": (
            "Decide whether the statement can be inferred from the context alone. Answer 1 if the context "
            "states it or directly implies it, and 0 if the context contradicts it, does not mention it, or "
            "supports only part of it. Do not use outside knowledge."
        ),
        "zh": (
            "判断这条陈述能否仅凭上下文推出。如果上下文明确说明或直接蕴含该陈述，回答 1；如果上下文与之矛盾、"
            "没有提到，或只支持其中一部分，回答 0。不要使用上下文以外的知识。"
        ),
    },
    input=SupportInput,
    labels=(UNSUPPORTED, SUPPORTED),
    positive=SUPPORTED,
    examples={
        "en": [
            (
                SupportInput(
                    context="The Eiffel Tower was completed in 1889 for the World's Fair in Paris.",
                    statement="The Eiffel Tower is in Paris.",
                ),
                SUPPORTED,
            ),
            (
                SupportInput(
                    context="The Eiffel Tower was completed in 1889 for the World's Fair in Paris.",
                    statement="The Eiffel Tower is 330 metres tall.",
                ),
                UNSUPPORTED,
            ),
        ],
        "zh": [
            (
                SupportInput(context="故宫位于北京市中心，始建于明朝永乐年间。", statement="故宫在北京。"),
                SUPPORTED,
            ),
            (
                SupportInput(
                    context="故宫位于北京市中心，始建于明朝永乐年间。", statement="故宫有九千多间房屋。"
                ),
                UNSUPPORTED,
            ),
        ],
    },
)
