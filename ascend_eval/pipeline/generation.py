"""The RAG model's answers: one prompt per question with its retrieved contexts, all in one engine round.

The requests go through the engine like the judge's, so they are batched into one `generate` call, and
cached by content: two experiment points that retrieve the same contexts for a question share the answer.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence

from ascend_eval.engine import Engine
from ascend_eval.models.base import GenerateRequest, GenerateResult, GenerationParams, Message
from ascend_eval.pipeline.retrieval import ask
from ascend_eval.text.language import Language

logger = logging.getLogger("ascend_eval.pipeline")

ANSWER_TAG = "rag_answer@1"
"""Prompt name@version of the answer prompt; part of the cache key, bumped when the wording changes."""

_SYSTEM = {
    "en": (
        "You answer questions using only the numbered context passages you are given. If the passages do "
        "not contain the answer, say that you do not know. Answer in one or two sentences."
    ),
    "zh": "请只根据给出的编号参考资料回答问题。如果资料中没有答案，请回答“不知道”。用一两句话作答。",
}
_LAYOUT = {
    "en": ("Context passages:", "Question: ", "Answer:"),
    "zh": ("参考资料：", "问题：", "回答："),
}


def answer_messages(question: str, contexts: Sequence[str], language: Language) -> tuple[Message, ...]:
    """The chat that asks the RAG model to answer `question` from `contexts` (static text first).

    >>> msgs = answer_messages("Who?", ["Ann did it."], "en")
    >>> print(msgs[1].content)
    Context passages:
    [1] Ann did it.
    <BLANKLINE>
    Question: Who?
    Answer:
    """
    heading, ask_label, answer_label = _LAYOUT[language]
    passages = "\n".join(f"[{i}] {c}" for i, c in enumerate(contexts, 1))
    user = f"{heading}\n{passages}\n\n{ask_label}{question}\n{answer_label}"
    return (Message("system", _SYSTEM[language]), Message("user", user))


def generate_answers(
    engine: Engine,
    questions: Sequence[str],
    contexts: Sequence[Sequence[str]],
    languages: Sequence[Language],
    params: GenerationParams,
) -> list[str]:
    """Answer every question from its contexts with the engine's judge backend (the RAG model).

    Returns:
        The answers' text, stripped, in input order. An answer cut at `max_tokens` is kept and logged.
    """
    requests = [
        GenerateRequest(answer_messages(q, c, lang), params, tag=ANSWER_TAG)
        for q, c, lang in zip(questions, contexts, languages, strict=True)
    ]
    results: list[GenerateResult] = ask(engine, requests, "generate")
    cut = sum(r.finish_reason in ("length", "repetition") for r in results)
    if cut:
        logger.warning(
            "%d of %d RAG answers reached answer_max_tokens=%d and were cut; raise it for whole answers.",
            cut,
            len(results),
            params.max_tokens,
        )
    return [r.text.strip() for r in results]
