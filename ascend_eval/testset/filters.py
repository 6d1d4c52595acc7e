"""What a candidate goes through: the judge writes a question and its answer, a text check makes sure the
question is not a sentence of its chunks, and two yes/no verdicts say whether the question stands alone
and whether its chunks answer it. The near-duplicate filter runs after, over a round's survivors in order
(`DuplicateFilter`).

A candidate that fails is dropped with one reason, the first that applies in this order:

- `unreadable_question`: the judge's question-and-answer JSON could not be read (not JSON, cut at
  max_tokens, an empty field, the prompt's own wording written back).
- `copied_from_context`: the question is a sentence of its chunks, or nearly (`copies_context`).
- `answer_copies_context`: the reference answer is a passage of its chunks pasted, not an answer
  (`pastes_passage`): a small judge asked for a theme answers with the chunk itself.
- `unreadable_verdict`: a yes/no verdict could not be read (probabilities over other labels, all zero).
- `not_standalone`: the judge says the question cannot be understood without its document.
- `not_answerable`: the judge says the chunks do not hold the answer.
- `near_duplicate`: its embedding's cosine with an accepted question is above the threshold.

An answer that cannot be read drops its candidate, never the run. A backend failure is not an answer: the
plan reports it (`Failed`), and the run stops after the round, with every answer so far cached.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from ascend_eval.errors import BACKEND_ERROR
from ascend_eval.prompts.base import ParseFailure, Verdict
from ascend_eval.testset.candidates import Candidate
from ascend_eval.testset.prompts import (
    ANSWERABLE,
    STANDALONE,
    WRITERS,
    AnswerableInput,
    PassageInput,
    PassagesInput,
    QuestionInput,
)
from ascend_eval.text.normalize import normalize_for_match
from ascend_eval.text.sentences import split_sentences

DROP_REASONS = (
    "unreadable_question",
    "copied_from_context",
    "answer_copies_context",
    "unreadable_verdict",
    "not_standalone",
    "not_answerable",
    "near_duplicate",
)
"""Why a candidate is dropped, in the order the filters run."""

COPY_SHARE = 0.8
"""A question is a copy of a sentence when, compared without case, spaces or punctuation, one contains the
other and the shorter is at least this share of the longer."""

PASTE_SHARE = 0.6
"""A reference answer pastes a passage when the sentences it takes word for word from one of its chunks
(two at least) make up this share of that chunk or more."""


@dataclass(frozen=True)
class Written:
    """A candidate that passed the judge's filters: its question and reference answer."""

    question: str
    answer: str


@dataclass(frozen=True)
class Dropped:
    """A candidate that failed a filter: the reason (one of `DROP_REASONS`) and what it was in detail."""

    reason: str
    detail: str


@dataclass(frozen=True)
class Failed:
    """A candidate whose request failed in the backend (after its retries): not a verdict on it."""

    detail: str


def copies_context(question: str, contexts: Sequence[str]) -> bool:
    """Whether `question` is, or nearly is, one sentence of `contexts`: compared without case, spaces or
    punctuation, one contains the other and the shorter is at least `COPY_SHARE` of the longer.

    >>> ctx = ["The lighthouse was built in 1874. Its lamp went electric in 1952."]
    >>> copies_context("The lighthouse was built in 1874?", ctx)
    True
    >>> copies_context("When was the lighthouse built?", ctx)
    False
    >>> copies_context("白石村的石桥建于1763年？", ["白石村的石桥建于1763年。桥长四十二米。"])
    True
    """
    asked = normalize_for_match(question)
    if not asked:
        return False
    for context in contexts:
        for sentence in split_sentences(context):
            said = normalize_for_match(sentence)
            if not said:
                continue
            short, long = sorted((asked, said), key=len)
            if short in long and len(short) >= COPY_SHARE * len(long):
                return True
    return False


def pastes_passage(answer: str, contexts: Sequence[str]) -> bool:
    """Whether `answer` is mostly one of `contexts` pasted: two or more of its sentences appear word for word
    (without case, spaces or punctuation) in one context, and together they are at least `PASTE_SHARE` of
    it. An answer that quotes a sentence or two of a longer chunk is an answer; one that is the chunk is not.

    >>> ctx = ["The lighthouse was built in 1874. Its lamp went electric in 1952. It is 31 metres tall."]
    >>> pastes_passage("The lighthouse was built in 1874. Its lamp went electric in 1952.", ctx)
    True
    >>> pastes_passage("The lighthouse was built in 1874.", ctx)
    False
    >>> pastes_passage("It was built in 1874 and went electric in 1952.", ctx)
    False
    """
    said = [normalize_for_match(s) for s in split_sentences(answer)]
    for context in contexts:
        whole = normalize_for_match(context)
        copied = [s for s in said if s and s in whole]
        if whole and len(copied) >= 2 and sum(map(len, copied)) >= PASTE_SHARE * len(whole):
            return True
    return False


def candidate_plan(candidate: Candidate, texts: Sequence[str], max_tokens: int) -> Any:
    """The engine plan of one candidate: the writing request, then both verdicts in one step.

    Args:
        candidate: what to write (kind, language, persona).
        texts: the texts of its chunks, in its order.
        max_tokens: the writing request's token limit.

    Returns (as the plan's value):
        `Written`, `Dropped` or `Failed`.
    """
    spec = WRITERS[candidate.kind]
    persona = candidate.persona or ""
    inputs: PassageInput | PassagesInput = (
        PassageInput(passage=texts[0], persona=persona)
        if candidate.kind == "single_hop"
        else PassagesInput(passages=list(texts), persona=persona)
    )
    request = spec.request(inputs, candidate.language, max_tokens=max_tokens)  # type: ignore[arg-type]
    [result] = yield [request]
    written = spec.parse(result)
    if isinstance(written, ParseFailure):
        return _unread(written, "unreadable_question")
    question, answer = written.question.strip(), written.answer.strip()
    if not question or not answer:
        return Dropped("unreadable_question", "the judge wrote an empty question or answer")
    if copies_context(question, texts):
        return Dropped("copied_from_context", f"the question {question[:80]!r} is a sentence of its chunks")
    if pastes_passage(answer, texts):
        return Dropped("answer_copies_context", f"the answer {answer[:80]!r} is a chunk pasted")
    lang = candidate.language
    asked = [
        STANDALONE.request(QuestionInput(question=question), lang),
        ANSWERABLE.request(AnswerableInput(passages=list(texts), question=question), lang),
    ]
    alone, answerable = yield asked
    verdicts = (STANDALONE.parse(alone), ANSWERABLE.parse(answerable))
    for verdict in verdicts:
        if isinstance(verdict, ParseFailure):
            return _unread(verdict, "unreadable_verdict")
    for verdict, reason in zip(verdicts, ("not_standalone", "not_answerable"), strict=True):
        assert isinstance(verdict, Verdict)
        if not verdict.holds:
            return Dropped(reason, f"p(Yes)={verdict.p_positive:.2f}")
    return Written(question, answer)


def _unread(failure: ParseFailure, reason: str) -> Dropped | Failed:
    if failure.reason.startswith(BACKEND_ERROR):
        return Failed(failure.reason)
    return Dropped(reason, failure.reason)


class DuplicateFilter:
    """The questions accepted so far, by embedding; a new one is a near-duplicate when its cosine with one
    of them is above `threshold`.

    >>> seen = DuplicateFilter(0.95)
    >>> [seen.admit(np.array(v, dtype=np.float32)) for v in ([1, 0], [0.999, 0.04], [0, 1])]
    [True, False, True]
    """

    def __init__(self, threshold: float) -> None:
        self.threshold = threshold
        self.rows: list[NDArray[np.float32]] = []

    def admit(self, vector: NDArray[np.float32]) -> bool:
        """Whether `vector` is no near-duplicate; if so it is kept, and later ones are compared with it."""
        norm = float(np.linalg.norm(vector))
        unit = vector / norm if norm > 0 else vector
        if self.rows and float(np.max(np.stack(self.rows) @ unit)) > self.threshold:
            return False
        self.rows.append(unit)
        return True
