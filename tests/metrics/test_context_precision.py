"""context_precision and context_utilization: per-context usefulness verdicts and average precision, on
recorded judge outputs (data/judge/context_precision.json)."""

from __future__ import annotations

import math

import pytest

from ascend_eval.data import Sample
from ascend_eval.engine import Backends, Engine
from ascend_eval.metrics import PlanContext
from ascend_eval.metrics.context_precision import (
    RAGAS_EPS,
    ContextPrecision,
    ContextUtilization,
    average_precision,
)
from ascend_eval.models.judge.replay import ReplayJudge
from tests.recorded_judge import recorded_judge


@pytest.fixture
def judge() -> ReplayJudge:
    return recorded_judge("context_precision")


EN = Sample(
    user_input="What is the capital of France?",
    reference="Paris",
    response="Lyon",
    retrieved_contexts=(
        "Paris is the capital of France.",
        "Lyon is a large French city.",
        "The Louvre is in Paris.",
    ),
)
ZH = Sample(
    user_input="法国的首都是哪里？",
    reference="巴黎。",
    response="里昂。",
    retrieved_contexts=("里昂是法国第三大城市。", "巴黎是法国的首都。"),
)


def run(metric, sample, judge, *, language="en", compat=False, mode="classify"):
    ctx = PlanContext(language, ragas_compat=compat, judge_mode=mode)
    return Engine(Backends(judge=judge)).run({0: metric.plan(sample, ctx)})[0]


def test_average_precision_rewards_useful_contexts_ranked_first():
    assert average_precision([1, 1, 0]) == 1.0
    assert average_precision([0, 1, 1]) == pytest.approx((1 / 2 + 2 / 3) / 2)
    assert average_precision([True, 0, 5]) == average_precision([1, 0, 1])


@pytest.mark.parametrize("mode", ["classify", "generate"])
def test_english_verdicts_in_both_modes(judge, mode):
    precision = run(ContextPrecision(), EN, judge, mode=mode)
    assert precision.details["verdicts"] == [1, 0, 1]
    assert precision.score == pytest.approx((1 + 2 / 3) / 2)
    utilization = run(ContextUtilization(), EN, judge, mode=mode)  # judged against the response
    assert utilization.details["verdicts"] == [0, 1, 0]
    assert utilization.score == 0.5


@pytest.mark.parametrize("mode", ["classify", "generate"])
def test_chinese_verdicts_in_both_modes(judge, mode):
    assert run(ContextPrecision(), ZH, judge, language="zh", mode=mode).score == 0.5
    assert run(ContextUtilization(), ZH, judge, language="zh", mode=mode).score == 1.0


def test_a_verdict_in_full_width_punctuation_reads_the_same():
    full_width = recorded_judge("context_precision", variant="full-width")
    result = run(ContextPrecision(), ZH, full_width, language="zh", mode="generate")
    assert result.score == 0.5 and result.details["reasons"][1] == "上下文直接说明巴黎是法国的首都。"


def test_compat_adds_ragas_epsilon(judge):
    all_useful = Sample(
        user_input="Q?", reference="Paris", retrieved_contexts=("Paris.", "In Paris", "Paris!")
    )
    assert run(ContextPrecision(), all_useful, judge).score == 1.0
    compat = run(ContextPrecision(), all_useful, judge, compat=True).score
    assert compat == 3 / (3 + RAGAS_EPS) and compat < 1.0
    assert run(ContextPrecision(), EN, judge, compat=True).score == (1 + 2 / 3) / (2 + RAGAS_EPS)


def test_none_useful_is_zero(judge):
    sample = Sample(user_input="Q?", reference="Rome", retrieved_contexts=("Paris.", "Lyon."))
    for compat in (False, True):
        assert run(ContextPrecision(), sample, judge, compat=compat).score == 0.0


def test_no_contexts(judge):
    sample = Sample(user_input="Q?", reference="Paris", retrieved_contexts=())
    result = run(ContextPrecision(), sample, judge)
    assert math.isnan(result.score) and result.reason == "no_contexts"
    assert run(ContextPrecision(), sample, judge, compat=True).score == 0.0
    assert judge.calls == []


def test_one_request_per_context_in_one_batch(judge):
    result = run(ContextPrecision(), EN, judge)
    assert judge.calls == [("classify", 3)]
    assert result.details["p_useful"] == [0.9, 0.1, 0.9]


def test_an_unparsable_verdict_is_nan_with_raw_text():
    judge = recorded_judge("context_precision", variant="unparsable-rank-2")
    result = run(ContextPrecision(), EN, judge, mode="generate")
    assert result.reason.startswith("parse_failure")
    assert result.details == {"raw": "useful, I think", "rank": 2}


def test_a_verdict_over_other_labels_is_nan_with_its_rank():
    result = run(ContextPrecision(), EN, recorded_judge("context_precision", variant="wrong-labels"))
    assert result.reason.startswith("parse_failure: the judge answered labels ('0', '1', '2')")
    assert result.details["rank"] == 2 and '"probs": [0.8, 0.1, 0.1]' in result.details["raw"]


def test_required_columns():
    assert {c.value for c in ContextPrecision.required} == {"user_input", "retrieved_contexts", "reference"}
    assert {c.value for c in ContextUtilization.required} == {"user_input", "retrieved_contexts", "response"}
