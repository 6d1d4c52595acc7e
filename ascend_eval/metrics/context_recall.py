"""context_recall: how much of the reference answer the retrieved contexts can account for.

* "classify" judge mode: STATEMENTS splits the reference into statements (the request answer_correctness
  and noise_sensitivity make for the reference, so the engine runs it once), then one STATEMENT_SUPPORT
  request per statement against the joined contexts. Score = supported / statements.
* "generate" judge mode: one CONTEXT_ATTRIBUTION JSON call over the whole reference, as RAGAS does; the
  judge splits the reference into sentences and marks each attributed or not. Score = attributed /
  sentences listed.

Either way nothing to count is NaN, as in RAGAS: "no_statements" (classify), "no_classifications"
(generate). The one default that differs from RAGAS: a blank reference is NaN ("no_statements") at once
with no request, where RAGAS (and `ragas_compat=True`) still asks the judge, which can only return nothing.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from ascend_eval.data import Column, Sample
from ascend_eval.metrics.base import Metric, MetricResult, Plan, PlanContext
from ascend_eval.metrics.faithfulness import supported_share
from ascend_eval.prompts.base import ParseFailure, Written, first_items
from ascend_eval.prompts.context_recall import CONTEXT_ATTRIBUTION, AttributionInput
from ascend_eval.prompts.statements import STATEMENTS, StatementsInput, read_statements


def attributed_ratio(attributed: Sequence[int]) -> float:
    """Share of sentences marked attributed (any non-zero flag, as in RAGAS); NaN when there are none.

    >>> attributed_ratio([1, 0, 1, 1])
    0.75
    >>> attributed_ratio([2, 0])
    0.5
    >>> attributed_ratio([])
    nan
    """
    if not attributed:
        return math.nan
    return sum(1 if a else 0 for a in attributed) / len(attributed)


class ContextRecall(Metric):
    """How many of the reference's claims the retrieved contexts support."""

    name = "context_recall"
    required = frozenset({Column.USER_INPUT, Column.RETRIEVED_CONTEXTS, Column.REFERENCE})

    def plan(self, sample: Sample, ctx: PlanContext) -> Plan:
        question, reference = sample.user_input or "", sample.reference or ""
        context = "\n".join(sample.retrieved_contexts or ())
        if not reference.strip() and not ctx.ragas_compat:
            return MetricResult.nan("no_statements", note="the reference is empty")
        if ctx.judge_mode == "generate":
            [raw] = yield [
                CONTEXT_ATTRIBUTION.request(
                    AttributionInput(question=question, context=context, answer=reference),
                    ctx.language,
                    ctx.block,
                )
            ]
            parsed = CONTEXT_ATTRIBUTION.parse(raw, question=question)
            if isinstance(parsed, ParseFailure):
                return MetricResult.nan(parsed.reason, raw=parsed.raw)
            sentences = first_items(parsed.classifications)
            flags = [c.attributed for c in sentences]
            details = {
                "statements": Written([c.statement for c in sentences], given=sentences.given),
                "attributed": flags,
                "reasons": [c.reason for c in sentences],
            }
            if not flags:
                return MetricResult.nan("no_classifications", raw=raw.text)
            return MetricResult(attributed_ratio(flags), details=details)

        [raw] = yield [
            STATEMENTS.request(StatementsInput(question=question, answer=reference), ctx.language, ctx.block)
        ]
        statements = read_statements(raw, question=question, ragas_compat=ctx.ragas_compat)
        if isinstance(statements, ParseFailure):
            return MetricResult.nan(statements.reason, raw=statements.raw)
        if not statements:
            return MetricResult.nan("no_statements")
        return (yield from supported_share(context, statements, ctx))
