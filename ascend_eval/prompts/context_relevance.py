"""nv_context_relevance's two judges: do the retrieved contexts hold what the question needs? Ratings 0-2.

Judge 1 shows the question, then the context; judge 2 has its own (first-person) wording and shows the
context first.
"""

from __future__ import annotations

from pydantic import BaseModel

from ascend_eval.prompts.ratings import rating_prompt


class RelevanceInput(BaseModel):
    question: str
    context: str


class RelevanceInputContextFirst(BaseModel):
    context: str
    question: str


_EN_EXAMPLES = [
    (
        "What is the boiling point of water at sea level?",
        "At sea level, pure water boils at 100 °C (212 °F).",
        2,
    ),
    (
        "When was the Louvre founded, and who designed its glass pyramid?",
        "The Louvre opened as a museum in 1793 in the former royal palace.",
        1,
    ),
    ("What does a koala eat?", "The Great Barrier Reef is the largest coral reef system in the world.", 0),
]
_ZH_EXAMPLES = [
    ("珠穆朗玛峰海拔多少米？", "珠穆朗玛峰是世界最高峰，海拔8848.86米。", 2),
    ("苏州园林有什么特点？有几座被列入世界遗产？", "苏州园林讲究移步换景，以小见大。", 1),
    ("如何申请护照？", "西湖位于杭州市西部，是著名的风景区。", 0),
]

_EN_SCALE = (
    "0: the context holds nothing that helps answer the question.\n"
    "1: the context answers part of the question, or gives only some of what the answer needs.\n"
    "2: the context holds the information needed to answer the question."
)
_ZH_SCALE = (
    "0：上下文中没有任何有助于回答问题的信息。\n"
    "1：上下文只能回答问题的一部分，或只提供了回答所需信息的一部分。\n"
    "2：上下文包含回答问题所需的信息。"
)

RELEVANCE_JUDGE_1 = rating_prompt(
    name="nv_context_relevance_judge1",
    version=1,
    instruction={
        "en": (
            "Rate how relevant a retrieved context is to a question: does it contain the information "
            "needed to answer it? Judge only from the question and the context, not from what you know.\n"
            + _EN_SCALE
        ),
        "zh": (
            "评估检索到的上下文与问题的相关程度：它是否包含回答该问题所需的信息？只依据问题和上下文判断，"
            "不要使用你自己的知识。\n" + _ZH_SCALE
        ),
    },
    input=RelevanceInput,
    scale=(0, 1, 2),
    examples={
        "en": [(RelevanceInput(question=q, context=c), s) for q, c, s in _EN_EXAMPLES],
        "zh": [(RelevanceInput(question=q, context=c), s) for q, c, s in _ZH_EXAMPLES],
    },
)

RELEVANCE_JUDGE_2 = rating_prompt(
    name="nv_context_relevance_judge2",
    version=1,
    instruction={
        "en": (
            "I read a context that a search system returned and the question it was retrieved for, and I "
            "decide how much of what the question needs the context provides. I use only these two texts.\n"
            "I answer 0 if nothing in the context helps, 1 if it helps with only part of the question, "
            "and 2 if it provides what the answer needs."
        ),
        "zh": (
            "我阅读检索系统返回的一段上下文以及对应的问题，判断上下文提供了多少回答该问题所需的信息。我只依据"
            "这两段文字。\n上下文中没有任何帮助，我回答 0；只对问题的一部分有帮助，我回答 1；提供了回答所需的"
            "信息，我回答 2。"
        ),
    },
    input=RelevanceInputContextFirst,
    scale=(0, 1, 2),
    examples={
        "en": [(RelevanceInputContextFirst(context=c, question=q), s) for q, c, s in _EN_EXAMPLES],
        "zh": [(RelevanceInputContextFirst(context=c, question=q), s) for q, c, s in _ZH_EXAMPLES],
    },
)
