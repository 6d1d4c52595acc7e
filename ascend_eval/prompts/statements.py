"""Break an answer into atomic, self-contained statements.

Shared by faithfulness, answer_correctness and noise_sensitivity: they build the identical request for
the same (question, answer), so the engine runs it once per sample, however many metrics ask.
"""

from __future__ import annotations

from collections.abc import Sequence

from pydantic import BaseModel, Field

from ascend_eval.models.base import GenerateResult
from ascend_eval.prompts.base import ParseFailure, PromptSpec, first_items

MAX_STATEMENTS = 32
"""An upper bound for constrained decoding (`maxItems` in the schema): it keeps a confused judge from
listing statements until max_tokens. Parsing does not enforce it: a longer list from an unconstrained
judge is kept."""


def usable_statements(statements: Sequence[str], *, ragas_compat: bool) -> list[str]:
    """The statements to judge. A blank one is a judge slip and is dropped (the rest are stripped); RAGAS
    keeps the list exactly as parsed and counts blanks in its denominators, so `ragas_compat` does too.

    >>> usable_statements([" A. ", "", "B."], ragas_compat=False)
    ['A.', 'B.']
    >>> usable_statements([" A. ", "", "B."], ragas_compat=True)
    [' A. ', '', 'B.']
    """
    return list(statements) if ragas_compat else [s.strip() for s in statements if s.strip()]


def read_statements(result: GenerateResult, *, question: str, ragas_compat: bool) -> list[str] | ParseFailure:
    """The usable statements of a STATEMENTS answer (see `usable_statements`), the first `MAX_WRITTEN_ITEMS`
    of them (a `Written` list), or why it could not be read: among the reasons, "echo: ..." when the judge
    wrote the prompt's wording or the sample's `question` as statements (`PromptSpec.parse`)."""
    parsed = STATEMENTS.parse(result, question=question)
    if isinstance(parsed, ParseFailure):
        return parsed
    return first_items(usable_statements(parsed.statements, ragas_compat=ragas_compat))


class StatementsInput(BaseModel):
    question: str
    answer: str


class Statements(BaseModel):
    statements: list[str] = Field(json_schema_extra={"maxItems": MAX_STATEMENTS})


STATEMENTS = PromptSpec(
    name="statements",
    version=1,
    instruction={
        "en": (
            "You are given a question and an answer to it. Rewrite the answer as a list of short factual "
            "statements. Each statement makes exactly one claim and can be understood on its own: replace "
            "pronouns and references such as 'he', 'it' or 'this' with what they refer to. Keep every claim "
            "the answer makes, add nothing that it does not say, and leave out filler without content."
        ),
        "zh": (
            "给定一个问题和对它的回答。请把回答改写成一组简短的事实陈述。每条陈述只包含一个论断，并且脱离上下文"
            "也能读懂：把“他”“它”“这”等指代换成所指的具体对象。保留回答中的每一个论断，不要添加回答没有说的"
            "内容，去掉没有实际信息的客套话。"
        ),
    },
    input=StatementsInput,
    output=Statements,
    examples={
        "en": [
            (
                StatementsInput(
                    question="Who was Marie Curie?",
                    answer="Marie Curie was a Polish-born physicist. She won two Nobel Prizes, "
                    "in physics and "
                    "in chemistry.",
                ),
                Statements(
                    statements=[
                        "Marie Curie was a physicist.",
                        "Marie Curie was born in Poland.",
                        "Marie Curie won a Nobel Prize in physics.",
                        "Marie Curie won a Nobel Prize in chemistry.",
                    ]
                ),
            )
        ],
        "zh": [
            (
                StatementsInput(
                    question="长江有多长？",
                    answer="长江全长约6300公里，它是中国最长的河流，最终注入东海。",
                ),
                Statements(statements=["长江全长约6300公里。", "长江是中国最长的河流。", "长江注入东海。"]),
            )
        ],
    },
    writes_from=("answer",),  # the answer always in the request (`PromptSpec.writes_from`)
)
