"""faithfulness: its pure scoring and its plan."""

from __future__ import annotations

import math

from ascend_eval.data import Sample
from ascend_eval.engine import Backends, Engine
from ascend_eval.metrics import Faithfulness, PlanContext
from ascend_eval.metrics.faithfulness import supported_ratio


def test_supported_ratio_edges():
    assert supported_ratio([0.51, 0.49]) == 0.5
    assert supported_ratio([0.9, 0.9], threshold=0.95) == 0.0
    assert math.isnan(supported_ratio([]))


def score(judge, sample, language="en"):
    out = Engine(Backends(judge=judge)).run({0: Faithfulness().plan(sample, PlanContext(language))})
    return out[0]


def test_fully_supported_english_and_chinese(rule_judge):
    en = Sample(
        user_input="Q?",
        response="Water boils at 100 degrees.",
        retrieved_contexts=("Water boils at 100 degrees at sea level.",),
    )
    zh = Sample(
        user_input="问？",
        response="长城始建于春秋时期。秦朝连接了长城。",
        retrieved_contexts=("长城始建于春秋时期", "秦朝连接了长城，明朝重修。"),
    )
    assert score(rule_judge, en).score == 1.0
    result = score(rule_judge, zh, "zh")
    assert result.score == 1.0 and result.details["statements"] == [
        "长城始建于春秋时期。",
        "秦朝连接了长城。",
    ]


def test_contexts_are_joined_for_each_verdict(rule_judge):
    sample = Sample(user_input="Q?", response="A holds. B holds.", retrieved_contexts=("A holds", "B holds"))
    assert score(rule_judge, sample).score == 1.0


def test_empty_response_needs_no_judge_call(rule_judge):
    result = score(rule_judge, Sample(user_input="Q?", response="  ", retrieved_contexts=("c",)))
    assert result.reason == "no_statements" and rule_judge.calls == []


def test_no_statements_from_judge_is_undefined(rule_judge):
    from ascend_eval.models.judge.replay import ReplayJudge

    judge = ReplayJudge(lambda r: '{"statements": []}', rule_judge.classify_rule)
    result = score(judge, Sample(user_input="Q?", response="Hmm.", retrieved_contexts=("c",)))
    assert math.isnan(result.score) and result.reason == "no_statements"
