"""noise_sensitivity: how often the response makes wrong claims that the retrieved contexts led it to.

Lower is better. Both modes build exactly the same requests, so computing both costs no more than one.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from typing import Any, Literal, TypeVar

from ascend_eval.data import Column, Sample
from ascend_eval.errors import ConfigError
from ascend_eval.metrics.base import Metric, MetricResult, Plan, PlanContext
from ascend_eval.metrics.verdicts import Asked
from ascend_eval.models.base import ClassifyResult, GenerateResult
from ascend_eval.prompts.base import ParseFailure
from ascend_eval.prompts.nli import STATEMENT_SUPPORT, SupportInput
from ascend_eval.prompts.nli_json import STATEMENT_VERDICTS, SupportListInput
from ascend_eval.prompts.statements import STATEMENTS, StatementsInput, read_statements

Mode = Literal["relevant", "irrelevant"]
T = TypeVar("T")
MODES: tuple[Mode, ...] = ("relevant", "irrelevant")


def relevant_contexts(ctx_supports_ref: Sequence[Sequence[bool]], n_contexts: int) -> list[bool]:
    """Which contexts are relevant: those that support at least one reference statement.

    Args:
        ctx_supports_ref: `[g][c]`, context c supports reference statement g.
        n_contexts: the number of contexts (needed when there are no reference statements).

    >>> relevant_contexts([[True, False, False], [False, False, True]], 3)
    [True, False, True]
    >>> relevant_contexts([], 2)
    [False, False]
    """
    return [any(row[c] for row in ctx_supports_ref) for c in range(n_contexts)]


def noise_sensitivity_score(
    ctx_supports_ref: Sequence[Sequence[bool]],
    ctx_supports_answer: Sequence[Sequence[bool]],
    ref_supports_answer: Sequence[bool],
    mode: Mode,
) -> float:
    """RAGAS's noise sensitivity from the three verdict matrices.

    An answer statement a counts when it is incorrect (the reference does not support it) and faithful to
    a context of the kind the mode looks at:

    * relevant: some relevant context (one that supports a reference statement) supports a;
    * irrelevant: some irrelevant context supports a, and no relevant one does.

    Score = counted statements / answer statements (`len(ref_supports_answer)`).

    Args:
        ctx_supports_ref: `[g][c]`, context c supports reference statement g.
        ctx_supports_answer: `[a][c]`, context c supports answer statement a.
        ref_supports_answer: `[a]`, the reference supports answer statement a.
        mode: "relevant" or "irrelevant".

    Returns:
        The share in [0, 1]; NaN when there are no answer statements or no contexts (RAGAS raises there).

    Two contexts; c0 supports reference statement g0, c1 supports nothing of the reference. Answer
    statement a0 is correct, a1 is wrong but taken from c0, a2 is wrong and taken from c1 only:

    >>> r2g = [[True, False]]
    >>> r2a = [[True, False], [True, False], [False, True]]
    >>> g2a = [True, False, False]
    >>> noise_sensitivity_score(r2g, r2a, g2a, "relevant")
    0.3333333333333333
    >>> noise_sensitivity_score(r2g, r2a, g2a, "irrelevant")
    0.3333333333333333

    A wrong statement that both kinds of context support counts as relevant only:

    >>> noise_sensitivity_score(r2g, [[True, True]], [False], "relevant")
    1.0
    >>> noise_sensitivity_score(r2g, [[True, True]], [False], "irrelevant")
    0.0

    Wrong statements that no context supports are the model's own errors, not noise:

    >>> noise_sensitivity_score(r2g, [[False, False]], [False], "relevant")
    0.0
    >>> noise_sensitivity_score(r2g, [], [], "relevant")
    nan
    """
    n_contexts = len(ctx_supports_answer[0]) if ctx_supports_answer else 0
    if not ref_supports_answer or n_contexts == 0:
        return math.nan
    relevant = relevant_contexts(ctx_supports_ref, n_contexts)
    counted = 0
    for row, correct in zip(ctx_supports_answer, ref_supports_answer, strict=True):
        from_relevant = any(r and s for r, s in zip(relevant, row, strict=True))
        from_irrelevant = any(not r and s for r, s in zip(relevant, row, strict=True))
        hit = from_relevant if mode == "relevant" else from_irrelevant and not from_relevant
        counted += (not correct) and hit
    return counted / len(ref_supports_answer)


EXACT_CONTEXTS = 12
"""Up to this many contexts the expected score sums over every relevant/irrelevant split (2^k of them);
above it, each context's relevance enters by its probability (a mean-field approximation)."""


def expected_noise_sensitivity(
    p_ctx_ref: Sequence[Sequence[float]],
    p_ctx_answer: Sequence[Sequence[float]],
    p_ref_answer: Sequence[float],
    mode: Mode,
) -> float:
    """The expected `noise_sensitivity_score` when every verdict is yes with its probability, independently
    (`scoring="expected"`). Same arguments as `noise_sensitivity_score`, as probabilities.

    Given which contexts are relevant (a split R), the answer statements count independently: statement a
    counts with probability (1 - p(reference supports a)) * P(hit | R), where for "relevant" P(hit) =
    1 - prod_{c in R} (1 - p_ac), and for "irrelevant" it is (1 - prod_{c not in R} (1 - p_ac)) *
    prod_{c in R} (1 - p_ac). The score's expectation is the sum over splits of P(R) times the mean over
    statements, exact up to `EXACT_CONTEXTS` contexts.

    >>> r2g, r2a, g2a = [[1.0, 0.0]], [[1.0, 0.0], [1.0, 0.0], [0.0, 1.0]], [1.0, 0.0, 0.0]
    >>> expected_noise_sensitivity(r2g, r2a, g2a, "relevant")  # hard verdicts: the hard score
    0.3333333333333333
    >>> round(expected_noise_sensitivity([[0.5]], [[1.0]], [0.0], "relevant"), 6)  # relevant half the time
    0.5
    >>> round(expected_noise_sensitivity([[0.5]], [[1.0]], [0.0], "irrelevant"), 6)
    0.5
    """
    n_contexts = len(p_ctx_answer[0]) if p_ctx_answer else 0
    if not p_ref_answer or n_contexts == 0:
        return math.nan
    p_relevant = [1 - math.prod(1 - row[c] for row in p_ctx_ref) for c in range(n_contexts)]

    def wrong_and_hit(split: Sequence[float]) -> float:
        """Mean over answer statements of P(counted), contexts relevant with probabilities `split`."""
        total = 0.0
        for row, p_correct in zip(p_ctx_answer, p_ref_answer, strict=True):
            none_relevant = math.prod(1 - r * p for r, p in zip(split, row, strict=True))
            none_irrelevant = math.prod(1 - (1 - r) * p for r, p in zip(split, row, strict=True))
            hit = 1 - none_relevant if mode == "relevant" else (1 - none_irrelevant) * none_relevant
            total += (1 - p_correct) * hit
        return total / len(p_ref_answer)

    if n_contexts > EXACT_CONTEXTS:
        return wrong_and_hit(p_relevant)
    expected = 0.0
    for split in itertools.product((0.0, 1.0), repeat=n_contexts):
        weight = math.prod(r if s else 1 - r for r, s in zip(p_relevant, split, strict=True))
        if weight:
            expected += weight * wrong_and_hit(split)
    return expected


def transpose(columns: Sequence[Sequence[T]], n_rows: int) -> list[list[T]]:
    """Per-context verdict lists `[c][s]` as a statement-by-context matrix `[s][c]`.

    >>> transpose([[True, False], [False, False], [True, True]], 2)
    [[True, False, True], [False, False, True]]
    """
    return [[col[s] for col in columns] for s in range(n_rows)]


class NoiseSensitivity(Metric):
    """How often the response states something wrong that a retrieved context supports (lower is better).

    Steps: the judge breaks the reference into statements G and the response into statements A (the same
    requests faithfulness and answer_correctness make, so the engine runs each once), then one round of
    verdicts: every context against every statement of G and of A, and the reference against every
    statement of A. In classify mode that is one `Classify` request per (text, statement) pair, a verdict
    being p(supported) > `VERDICT_THRESHOLD` (0.5); in generate mode one JSON request per (text, statement
    list), as RAGAS does. RAGAS sends its 2K + 1 verdict calls one after another; here they all go out in
    one round.

    Args:
        mode: "relevant" (wrong claims supported by a context that is relevant to the reference) or
            "irrelevant" (wrong claims supported only by contexts that are not). The result column is
            named as RAGAS names it, `noise_sensitivity(mode=relevant)`.

    NaN: `no_statements` when G or A is empty (RAGAS raises, so NaN as well) or the response or reference
    is blank; `no_contexts` without retrieved contexts; under `ragas_compat` also `missing_input` when the
    question is blank (RAGAS requires every column non-empty; by default the statements are extracted
    without it).
    """

    name = "noise_sensitivity"
    required = frozenset({Column.USER_INPUT, Column.RESPONSE, Column.REFERENCE, Column.RETRIEVED_CONTEXTS})

    def __init__(self, mode: Mode = "relevant") -> None:
        if mode not in MODES:
            raise ConfigError(f"noise_sensitivity mode={mode!r}; valid: 'relevant', 'irrelevant'.")
        self.mode: Mode = mode
        # The instance's result column; the class attribute stays the registry name.
        self.name = f"noise_sensitivity(mode={mode})"  # type: ignore[misc]

    @property
    def params(self) -> dict[str, Any]:
        return {"mode": self.mode}

    def plan(self, sample: Sample, ctx: PlanContext) -> Plan:
        question = sample.user_input or ""
        response, reference = sample.response or "", sample.reference or ""
        contexts = list(sample.retrieved_contexts or ())
        if not contexts:
            return MetricResult.nan("no_contexts")
        if ctx.ragas_compat and not question:  # RAGAS refuses "" only; whitespace goes through
            return MetricResult.nan("missing_input", note="RAGAS requires a non-empty user_input")
        if not response.strip() or not reference.strip():
            return MetricResult.nan("no_statements", note="the response or the reference is blank")

        raws = yield [
            STATEMENTS.request(StatementsInput(question=question, answer=reference), ctx.language, ctx.block),
            STATEMENTS.request(StatementsInput(question=question, answer=response), ctx.language, ctx.block),
        ]
        lists: list[list[str]] = []
        for raw in raws:
            parsed = read_statements(raw, question=question, ragas_compat=ctx.ragas_compat)
            if isinstance(parsed, ParseFailure):
                return MetricResult.nan(parsed.reason, raw=parsed.raw)
            lists.append(parsed)
        ref_statements, answer_statements = lists
        if not ref_statements or not answer_statements:
            return MetricResult.nan(
                "no_statements", reference_statements=ref_statements, response_statements=answer_statements
            )

        # Verdict groups, in this order: each context vs G, each context vs A, the reference vs A.
        groups = [(c, ref_statements) for c in contexts]
        groups += [(c, answer_statements) for c in contexts]
        groups.append((reference, answer_statements))
        details: dict[str, Any] = {
            "reference_statements": ref_statements,
            "response_statements": answer_statements,
        }
        p_groups: list[list[float]] | None = None  # verdict probabilities, kept for scoring="expected"
        if ctx.judge_mode == "generate":
            results: list[GenerateResult] = yield [
                STATEMENT_VERDICTS.request(
                    SupportListInput(context=text, statements=stmts), ctx.language, ctx.block
                )
                for text, stmts in groups
            ]
            verdicts = []
            for (_, stmts), result in zip(groups, results, strict=True):
                parsed_verdicts = STATEMENT_VERDICTS.parse(result)
                if isinstance(parsed_verdicts, ParseFailure):
                    return MetricResult.nan(parsed_verdicts.reason, raw=parsed_verdicts.raw, **details)
                if len(parsed_verdicts.statements) != len(stmts):
                    return MetricResult.nan(
                        f"parse_failure: the judge returned {len(parsed_verdicts.statements)} verdicts "
                        f"for {len(stmts)} statements",
                        raw=result.text,
                        **details,
                    )
                verdicts.append([bool(v.verdict) for v in parsed_verdicts.statements])
        else:
            inputs = [SupportInput(context=text, statement=s) for text, stmts in groups for s in stmts]
            asked = Asked(STATEMENT_SUPPORT, inputs, ctx)
            answers: list[ClassifyResult] = yield asked.requests
            read = asked.read_all(answers)
            if isinstance(read, ParseFailure):
                return MetricResult.nan(read.reason, raw=read.raw, **details)
            flat = iter(read)
            v_groups = [[next(flat) for _ in stmts] for _, stmts in groups]
            details["p_supported"] = [[round(v.p_positive, 6) for v in g] for g in v_groups]
            details |= asked.details()
            verdicts = [[v.holds for v in g] for g in v_groups]
            if ctx.scoring == "expected":
                p_groups = [[v.p_positive for v in g] for g in v_groups]

        k = len(contexts)
        ctx_supports_ref = transpose(verdicts[:k], len(ref_statements))
        ctx_supports_answer = transpose(verdicts[k : 2 * k], len(answer_statements))
        ref_supports_answer = verdicts[2 * k]
        details["relevant_contexts"] = relevant_contexts(ctx_supports_ref, k)
        details["ctx_supports_answer"] = ctx_supports_answer
        details["ref_supports_answer"] = ref_supports_answer
        if p_groups is not None:  # scoring="expected" (classify mode only)
            score = expected_noise_sensitivity(
                transpose(p_groups[:k], len(ref_statements)),
                transpose(p_groups[k : 2 * k], len(answer_statements)),
                p_groups[2 * k],
                self.mode,
            )
        else:
            score = noise_sensitivity_score(
                ctx_supports_ref, ctx_supports_answer, ref_supports_answer, self.mode
            )
        return MetricResult(score, details=details)
