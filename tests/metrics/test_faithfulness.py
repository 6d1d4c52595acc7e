"""faithfulness: its pure scoring and its plan."""

from __future__ import annotations

import json
import math

from ascend_eval.data import Sample
from ascend_eval.engine import Backends, Engine
from ascend_eval.metrics import Faithfulness, PlanContext
from ascend_eval.metrics.faithfulness import supported_ratio
from tests.conftest import sample_input, statements_rule


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


# judge_mode="generate": one JSON request with a verdict per statement, RAGAS's procedure.


def verdicts_text(verdicts):
    items = [{"statement": f"s{i}", "reason": "r", "verdict": v} for i, v in enumerate(verdicts)]
    return json.dumps({"statements": items})


def generate_judge(verdicts_rule):
    from ascend_eval.models.judge.replay import ReplayJudge

    def rule(request):
        if request.tag.startswith("statement_verdicts@"):
            return verdicts_rule(request)
        return statements_rule(request)

    return ReplayJudge(generate_rule=rule)


def score_generate(judge, sample, language="en", **ctx):
    out = Engine(Backends(judge=judge)).run(
        {0: Faithfulness().plan(sample, PlanContext(language, judge_mode="generate", **ctx))}
    )
    return out[0]


def substring_verdicts(request):
    data = sample_input(request)
    return verdicts_text([int(s.rstrip(".。") in data["context"]) for s in data["statements"]])


def test_generate_mode_one_request_for_all_statements():
    judge = generate_judge(substring_verdicts)
    sample = Sample(
        user_input="Q?",
        response="A holds. B holds. C is made up.",
        retrieved_contexts=("A holds", "B holds"),
    )
    result = score_generate(judge, sample)
    assert result.score == 2 / 3 and result.details["verdicts"] == [1, 1, 0]
    assert judge.calls == [("generate", 1), ("generate", 1)]


def test_generate_mode_chinese_and_ragas_compat_agree():
    zh = Sample(
        user_input="问？",
        response="长城始建于春秋时期。长城是用巧克力建造的。",
        retrieved_contexts=("长城始建于春秋时期",),
    )
    for compat in (False, True):
        assert score_generate(generate_judge(substring_verdicts), zh, "zh", ragas_compat=compat).score == 0.5


def test_generate_mode_denominator_is_the_verdicts_returned():
    sample = Sample(user_input="Q?", response="A. B. C. D.", retrieved_contexts=("c",))
    assert score_generate(generate_judge(lambda r: verdicts_text([1, 0])), sample).score == 0.5
    # any non-zero verdict would be truthy in RAGAS; the schema only allows 0 and 1
    assert score_generate(generate_judge(lambda r: verdicts_text([1, 1, 1, 1, 1])), sample).score == 1.0


def test_generate_mode_no_verdicts_and_parse_failures_are_nan():
    sample = Sample(user_input="Q?", response="A. B.", retrieved_contexts=("c",))
    empty = score_generate(generate_judge(lambda r: '{"statements": []}'), sample)
    assert math.isnan(empty.score) and empty.reason == "no_verdicts"
    bad = score_generate(generate_judge(lambda r: verdicts_text([2])), sample)
    assert bad.reason.startswith("parse_failure: statements.0.verdict") and bad.details["raw"]
