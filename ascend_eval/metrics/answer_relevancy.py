"""answer_relevancy: how well the response answers the question that was asked.

The judge reads the response alone and writes the question it answers, `strictness` times with different
sampling seeds, flagging evasive responses. The score is the mean cosine similarity between each written
question and the user's question, zeroed when every generation calls the response noncommittal.

By default (`coverage=True`) the judge is also asked, once, whether the response answers every part of the
question (`prompts/answer_coverage.py`), and the score is that mean cosine times the verdict: its calibrated
probability under `scoring="expected"`, 1 or 0 under "threshold" and in the "generate" judge mode. RAGAS
means the metric to penalise incomplete answers and padding, but a question written back from half an answer
is still close to the user's: on WikiEval's incomplete answers both members of a pair scored 0.92-0.99 on
the cosine alone, a gap of sampling noise. `coverage=False` and `ragas_compat=True` leave the verdict out.

Round 1 sends the `strictness` generations and the coverage verdict together with the user question's
embedding; round 2 embeds the written questions. Both texts are embedded as queries (kind="query"): they
are two questions compared with each other, not a query against a passage (RAGAS embeds the written ones as
documents).

Default behaviour, and what `ragas_compat=True` does instead (RAGAS legacy):

* each cosine is clipped at 0, so the score lies in [0, 1]; compat: no clipping.
* empty written questions are dropped; compat keeps them in the mean (embedded as the empty string) and
  gives NaN ("no_questions") only when every question is exactly "".
* when every parsed generation is noncommittal, or the coverage weight is 0, the score is 0.0 at once (no
  embeddings); compat checks for empty questions first, as RAGAS does.
* a generation that fails to parse is dropped, and the score is NaN only when none is left (the first
  failure's reason); compat: any failure makes the score NaN, as RAGAS raises (RAGAS first makes one
  hidden "fix the format" call; we never do).
* a blank response scores 0.0 (it answers nothing) and a blank user_input is NaN ("empty_user_input"),
  with no requests; compat sends the requests as RAGAS does.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from ascend_eval.data import Column, Sample
from ascend_eval.errors import ConfigError
from ascend_eval.metrics.answer_similarity import cosine
from ascend_eval.metrics.base import Metric, MetricResult, Plan, PlanContext, RoleName
from ascend_eval.metrics.verdicts import Asked
from ascend_eval.models.base import EmbedRequest
from ascend_eval.prompts.answer_coverage import ANSWERS_QUESTION, ANSWERS_QUESTION_VERDICT, CoverageInput
from ascend_eval.prompts.base import ParseFailure, Verdict
from ascend_eval.prompts.question_generation import (
    RESPONSE_QUESTION,
    GeneratedQuestion,
    QuestionFromResponseInput,
    sampled_request,
)


def relevancy_score(
    similarities: Sequence[float], noncommittal: Sequence[int], *, clip: bool = True
) -> float:
    """Mean similarity of the written questions to the user's, times 0 if every generation is noncommittal.

    Args:
        similarities: cosine of each written question with the user's question.
        noncommittal: each generation's flag (non-zero means noncommittal, as in RAGAS).
        clip: clip each cosine at 0 first (RAGAS does not).

    Returns:
        The score; NaN when there are no similarities.

    >>> relevancy_score([1.0, 0.5, 0.75], [0, 1, 0])
    0.75
    >>> relevancy_score([1.0, 0.5, 0.75], [1, 1, 1])
    0.0
    >>> relevancy_score([0.5, -0.25], [0, 0]), relevancy_score([0.5, -0.25], [0, 0], clip=False)
    (0.25, 0.125)
    >>> relevancy_score([], [0])
    nan
    """
    if not similarities:
        return math.nan
    values = [max(s, 0.0) for s in similarities] if clip else list(similarities)
    mean = float(np.mean(values))
    return mean * int(not all(noncommittal))


class AnswerRelevancy(Metric):
    """How relevant the response is to the question, by reverse-engineered questions.

    Args:
        strictness: how many questions the judge writes per response (RAGAS's default 3; 3-5 is
            typical). Above 1 they are sampled at temperature 0.3 with seeds 0..strictness-1, so they
            differ; with 1 the single question is decoded greedily.
        coverage: also ask the judge whether the response answers every part of the question, and weight
            the score by that verdict (one more request per sample). Ignored under `ragas_compat`.

    Raises:
        ConfigError: strictness is not a positive integer, or coverage is not a bool.
    """

    name = "answer_relevancy"
    required = frozenset({Column.USER_INPUT, Column.RESPONSE})

    def __init__(self, strictness: int = 3, coverage: bool = True) -> None:
        if isinstance(strictness, bool) or not isinstance(strictness, int) or strictness < 1:
            raise ConfigError(
                f"answer_relevancy strictness={strictness!r}; pass a positive integer, the number of "
                "questions written per response (3 to 5 is typical)."
            )
        if not isinstance(coverage, bool):
            raise ConfigError(
                f"answer_relevancy coverage={coverage!r}; pass True (weight the score by the judge's verdict "
                "that the response answers every part of the question) or False (the cosine alone, as RAGAS)."
            )
        self.strictness = strictness
        self.coverage = coverage

    @property
    def roles(self) -> frozenset[RoleName]:
        return frozenset({"judge", "embedder"})

    @property
    def params(self) -> dict[str, Any]:
        return {"strictness": self.strictness, "coverage": self.coverage}

    def plan(self, sample: Sample, ctx: PlanContext) -> Plan:
        question, response = sample.user_input or "", sample.response or ""
        compat = ctx.ragas_compat
        if not compat and not question.strip():
            return MetricResult.nan("empty_user_input")
        if not compat and not response.strip():
            return MetricResult(0.0, details={"note": "the response is empty: it answers nothing"})
        inputs = QuestionFromResponseInput(response=response)
        generations = [
            sampled_request(inputs, ctx.language, seed=i, sampled=self.strictness > 1)
            for i in range(self.strictness)
        ]
        covered = None if compat or not self.coverage else _Coverage(sample, ctx)
        first = [EmbedRequest(question, kind="query"), *generations]
        [question_vec, *answers] = yield first + (covered.requests if covered else [])
        raws = answers[: self.strictness]
        gate = covered.read(answers[self.strictness :]) if covered else None
        if isinstance(gate, MetricResult):
            return gate

        parsed: list[GeneratedQuestion] = []
        failures: list[ParseFailure] = []
        for raw in raws:
            out = RESPONSE_QUESTION.parse(raw)
            if isinstance(out, ParseFailure):
                failures.append(out)
            else:
                parsed.append(out)
        if failures and (compat or not parsed):
            return MetricResult.nan(
                failures[0].reason, raw=failures[0].raw, failed=len(failures), of=self.strictness
            )
        questions = [p.question for p in parsed]
        flags = [p.noncommittal for p in parsed]
        details: dict[str, Any] = {"questions": questions, "noncommittal": flags}
        if failures:
            details["parse_failures"] = [f.reason for f in failures]

        if covered is not None:
            details |= covered.details
        if compat:
            if all(q == "" for q in questions):
                return MetricResult.nan("no_questions", **details)
            kept = questions
        else:
            if all(flags) or gate == 0.0:  # evasive, or answers nothing asked: no need to embed
                return MetricResult(0.0, details=details)
            kept = [q for q in questions if q.strip()]
            if not kept:
                return MetricResult.nan("no_questions", **details)
        vectors = yield [EmbedRequest(q, kind="query") for q in kept]
        similarities = [cosine(v, question_vec, zero=math.nan if compat else 0.0) for v in vectors]
        details["similarities"] = [round(s, 6) for s in similarities]
        score = relevancy_score(similarities, flags, clip=not compat)
        return MetricResult(score if gate is None else score * gate, details=details)


class _Coverage:
    """The coverage verdict's requests for one sample, and the weight they give the score."""

    def __init__(self, sample: Sample, ctx: PlanContext) -> None:
        self.ctx = ctx
        inputs = CoverageInput(question=sample.user_input or "", response=sample.response or "")
        self.asked = Asked(ANSWERS_QUESTION, [inputs], ctx) if ctx.judge_mode == "classify" else None
        self.requests: list[Any] = (
            list(self.asked.requests)
            if self.asked is not None
            else [ANSWERS_QUESTION_VERDICT.request(inputs, ctx.language, ctx.block)]
        )
        self.details: dict[str, Any] = {}

    def read(self, results: Sequence[Any]) -> float | MetricResult:
        """The weight (a probability under expected scoring, else 1 or 0), or NaN when the verdict cannot
        be read: the score means the cosine *and* the verdict, so it has none without it."""
        if self.asked is None:
            out = ANSWERS_QUESTION_VERDICT.parse(results[0])
            if isinstance(out, ParseFailure):
                return MetricResult.nan(out.reason, raw=out.raw, verdict="answers_question")
            self.details = {"answers_question": int(bool(out.verdict)), "coverage_reason": out.reason}
            return float(bool(out.verdict))
        verdict = self.asked.read(results)[0]
        if isinstance(verdict, ParseFailure):
            return MetricResult.nan(verdict.reason, raw=verdict.raw, verdict="answers_question")
        assert isinstance(verdict, Verdict)
        p = verdict.p_positive
        self.details = {"answers_question": int(verdict.holds), "p_answers": round(p, 6)}
        self.details |= self.asked.details()
        return p if self.ctx.scoring == "expected" else float(verdict.holds)
