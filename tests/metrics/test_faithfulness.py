"""faithfulness: its pure scoring and its plan, on recorded judge outputs (data/judge/faithfulness.json)."""

from __future__ import annotations

import math

import pytest

from ascend_eval.data import Sample
from ascend_eval.engine import Backends, Engine
from ascend_eval.metrics import Faithfulness, PlanContext
from ascend_eval.metrics.faithfulness import supported_ratio
from ascend_eval.models.judge.replay import ReplayJudge
from tests.recorded_judge import recorded_judge


def test_supported_ratio_edges():
    assert supported_ratio([0.51, 0.49]) == 0.5
    assert supported_ratio([0.9, 0.9], threshold=0.95) == 0.0
    assert math.isnan(supported_ratio([]))


@pytest.fixture
def judge() -> ReplayJudge:
    return recorded_judge("faithfulness")


def score(judge, sample, language="en"):
    out = Engine(Backends(judge=judge)).run({0: Faithfulness().plan(sample, PlanContext(language))})
    return out[0]


EN = Sample(
    user_input="Q?",
    response="Water boils at 100 degrees.",
    retrieved_contexts=("Water boils at 100 degrees at sea level.",),
)
ZH = Sample(
    user_input="问？",
    response="长城始建于春秋时期。秦朝连接了长城。",
    retrieved_contexts=("长城始建于春秋时期", "秦朝连接了长城，明朝重修。"),
)


def test_fully_supported_english_and_chinese(judge):
    assert score(judge, EN).score == 1.0
    result = score(judge, ZH, "zh")
    assert result.score == 1.0 and result.details["statements"] == [
        "长城始建于春秋时期。",
        "秦朝连接了长城。",
    ]


@pytest.mark.parametrize(("variant", "sample", "language"), [
    ("code-fenced", EN, "en"), ("full-width", ZH, "zh"), ("prose", ZH, "zh"),
])  # fmt: skip
def test_statements_in_fences_prose_or_full_width_punctuation_score_the_same(variant, sample, language):
    assert score(recorded_judge("faithfulness", variant=variant), sample, language).score == 1.0


def test_statements_cut_at_max_tokens_are_nan_not_parsed():
    result = score(recorded_judge("faithfulness", variant="truncated"), EN)
    assert math.isnan(result.score) and result.reason.startswith("truncated")
    assert result.details["raw"] == '{"statements": ["Water boils at 1'


def test_verdicts_over_other_labels_are_nan_with_the_answer_kept():
    result = score(recorded_judge("faithfulness", variant="wrong-labels"), EN)
    assert math.isnan(result.score) and result.reason.startswith("parse_failure: the judge answered labels")
    assert "yes" in result.details["raw"] and result.details["statements"] == ["Water boils at 100 degrees."]


def test_contexts_are_joined_for_each_verdict(judge):
    sample = Sample(user_input="Q?", response="A holds. B holds.", retrieved_contexts=("A holds", "B holds"))
    assert score(judge, sample).score == 1.0


def test_empty_response_needs_no_judge_call(judge):
    result = score(judge, Sample(user_input="Q?", response="  ", retrieved_contexts=("c",)))
    assert result.reason == "no_statements" and judge.calls == []


def test_no_statements_from_judge_is_undefined(judge):
    result = score(judge, Sample(user_input="Q?", response="Hmm.", retrieved_contexts=("c",)))
    assert math.isnan(result.score) and result.reason == "no_statements"


# judge_mode="generate": one JSON request with a verdict per statement, RAGAS's procedure.


def score_generate(judge, sample, language="en", **ctx):
    out = Engine(Backends(judge=judge)).run(
        {0: Faithfulness().plan(sample, PlanContext(language, judge_mode="generate", **ctx))}
    )
    return out[0]


def test_generate_mode_one_request_for_all_statements(judge):
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
        assert score_generate(recorded_judge("faithfulness"), zh, "zh", ragas_compat=compat).score == 0.5


def test_generate_mode_denominator_is_the_verdicts_returned():
    sample = Sample(user_input="Q?", response="A. B. C. D.", retrieved_contexts=("c",))
    assert score_generate(recorded_judge("faithfulness"), sample).score == 0.0
    # the judge slips: verdicts for two of the four statements, then five verdicts for four
    assert score_generate(recorded_judge("faithfulness", variant="two-verdicts"), sample).score == 0.5
    # any non-zero verdict would be truthy in RAGAS; the schema only allows 0 and 1
    assert score_generate(recorded_judge("faithfulness", variant="five-verdicts"), sample).score == 1.0


def test_generate_mode_no_verdicts_and_parse_failures_are_nan():
    sample = Sample(user_input="Q?", response="A. B.", retrieved_contexts=("c",))
    empty = score_generate(recorded_judge("faithfulness", variant="no-verdicts"), sample)
    assert math.isnan(empty.score) and empty.reason == "no_verdicts"
    bad = score_generate(recorded_judge("faithfulness", variant="verdict-off-schema"), sample)
    assert bad.reason.startswith("parse_failure: statements.0.verdict") and bad.details["raw"]
