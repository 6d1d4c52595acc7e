"""context_recall: the reference's statements against the joined contexts, in both judge modes, on
recorded judge outputs (data/judge/context_recall.json). The judge makes the same decisions either way:
a sentence of the reference is attributed in generate mode exactly when its statement is supported."""

from __future__ import annotations

import math

import pytest

from ascend_eval.data import Sample
from ascend_eval.engine import Backends, Engine
from ascend_eval.metrics import PlanContext
from ascend_eval.metrics.context_recall import ContextRecall
from ascend_eval.models.judge.replay import ReplayJudge
from tests.recorded_judge import recorded_judge


@pytest.fixture
def judge() -> ReplayJudge:
    return recorded_judge("context_recall")


EN = Sample(
    user_input="Tell me about water.",
    reference="Water boils at 100 degrees. Ice floats on water. Water is wet.",
    retrieved_contexts=(
        "Water boils at 100 degrees at sea level.",
        "Ice floats on water because it is light.",
    ),
)
ZH = Sample(
    user_input="介绍一下长城。",
    reference="长城始建于春秋时期。长城全长两万多公里。",
    retrieved_contexts=("长城始建于春秋时期，秦朝将其连接。", "故宫位于北京。"),
)


def run(sample, judge, *, language="en", compat=False, mode="classify"):
    ctx = PlanContext(language, ragas_compat=compat, judge_mode=mode)
    return Engine(Backends(judge=judge)).run({0: ContextRecall().plan(sample, ctx)})[0]


@pytest.mark.parametrize("mode", ["classify", "generate"])
@pytest.mark.parametrize("compat", [False, True])
def test_statements_across_joined_contexts(judge, mode, compat):
    result = run(EN, judge, mode=mode, compat=compat)
    assert result.score == pytest.approx(2 / 3)
    assert result.details["statements"] == [
        "Water boils at 100 degrees.",
        "Ice floats on water.",
        "Water is wet.",
    ]


@pytest.mark.parametrize("mode", ["classify", "generate"])
def test_chinese(judge, mode):
    assert run(ZH, judge, language="zh", mode=mode).score == 0.5


def test_a_fenced_attribution_list_scores_the_same():
    fenced = recorded_judge("context_recall", variant="code-fenced")
    assert run(ZH, fenced, language="zh", mode="generate").score == 0.5


def test_classify_mode_requests(judge):
    result = run(EN, judge)
    assert judge.calls == [("generate", 1), ("classify", 3)]
    assert result.details["p_supported"] == [0.9, 0.9, 0.2]


def test_generate_mode_is_one_call(judge):
    result = run(EN, judge, mode="generate")
    assert judge.calls == [("generate", 1)]
    assert result.details["attributed"] == [1, 1, 0]


def test_no_contexts_supports_nothing(judge):
    sample = Sample(user_input="Q?", reference="A holds. B holds.", retrieved_contexts=())
    assert run(sample, judge).score == 0.0
    assert run(sample, judge, mode="generate").score == 0.0


@pytest.mark.parametrize("mode", ["classify", "generate"])
def test_blank_reference(mode):
    sample = Sample(user_input="Q?", reference="  ", retrieved_contexts=("c",))
    default = recorded_judge("context_recall")
    result = run(sample, default, mode=mode)
    assert result.reason == "no_statements" and default.calls == []
    compat = recorded_judge("context_recall")
    result = run(sample, compat, mode=mode, compat=True)
    assert math.isnan(result.score) and compat.calls == [("generate", 1)]
    assert result.reason == ("no_statements" if mode == "classify" else "no_classifications")


def test_no_statements_from_the_judge_is_nan():
    judge = recorded_judge("context_recall", variant="no-statements")
    assert run(EN, judge).reason == "no_statements"


@pytest.mark.parametrize("mode", ["classify", "generate"])
def test_parse_failure_keeps_raw_text(mode):
    result = run(EN, ReplayJudge(lambda r: "cannot say"), mode=mode)  # the same text to every request
    assert result.reason.startswith("parse_failure") and result.details["raw"] == "cannot say"


def test_verdicts_count_any_nonzero_flag():
    # two sentences listed, flagged 2 and 0: one attributed of two
    assert run(EN, recorded_judge("context_recall", variant="attributed-two"), mode="generate").score == 0.5
