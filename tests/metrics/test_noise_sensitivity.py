"""noise_sensitivity: its pure scoring, both modes, both judge modes, request sharing and NaN paths, on
recorded judge outputs (data/judge/noise_sensitivity.json)."""

from __future__ import annotations

import math

import pytest

from ascend_eval.data import Sample
from ascend_eval.engine import Backends, Engine
from ascend_eval.metrics.base import PlanContext
from ascend_eval.metrics.faithfulness import Faithfulness
from ascend_eval.metrics.noise_sensitivity import NoiseSensitivity, noise_sensitivity_score
from ascend_eval.models.base import GenerateRequest
from ascend_eval.models.errors import ConfigError
from ascend_eval.models.judge.replay import ReplayJudge
from tests.recorded_judge import recorded_judge, recordings

# c0 is relevant (it supports a reference statement) and also states a wrong height; c1 is irrelevant and
# states two wrong facts; c2 is noise nobody uses. The response: one correct statement, one wrong from the
# relevant context, two wrong from the irrelevant one, one wrong of its own.
EN = Sample(
    user_input="Where is the Eiffel Tower and when was it completed?",
    reference="The Eiffel Tower is in Paris. The Eiffel Tower was completed in 1889.",
    retrieved_contexts=(
        "The Eiffel Tower is in Paris. The Eiffel Tower is 500 metres tall.",
        "The Eiffel Tower was painted blue in 1889. The Eiffel Tower has 9 lifts.",
        "Bananas are yellow.",
    ),
    response=(
        "The Eiffel Tower is in Paris. The Eiffel Tower is 500 metres tall. The Eiffel Tower was painted "
        "blue in 1889. The Eiffel Tower has 9 lifts. The Eiffel Tower is made of cheese."
    ),
)
ZH = Sample(
    user_input="长城是什么时候修建的？",
    reference="长城始建于春秋时期。明朝重修了长城。",
    retrieved_contexts=("长城始建于春秋时期。长城长达十万公里。", "长城是用巧克力建造的。"),
    response="长城始建于春秋时期。长城长达十万公里。长城是用巧克力建造的。",
)


@pytest.fixture
def judge() -> ReplayJudge:
    return recorded_judge("noise_sensitivity")


def run(judge, metrics, sample, language="en", **ctx):
    engine = Engine(Backends(judge=judge))
    context = PlanContext(language, **ctx)
    out = engine.run({m.name: m.plan(sample, context) for m in metrics})
    return engine, out


def test_pure_score_relevant_and_irrelevant():
    r2g = [[True, False, False], [False, False, False]]
    r2a = [[True, False, False], [True, False, False], [False, True, False], [False, False, False]]
    g2a = [True, False, False, False]
    assert noise_sensitivity_score(r2g, r2a, g2a, "relevant") == 0.25
    assert noise_sensitivity_score(r2g, r2a, g2a, "irrelevant") == 0.25
    # with no relevant context at all, every context is irrelevant
    assert noise_sensitivity_score([[False, False]], [[True, False]], [False], "irrelevant") == 1.0
    assert math.isnan(noise_sensitivity_score([[True]], [[True]], [], "relevant"))


def test_mode_names_the_result_column_as_ragas_does():
    assert NoiseSensitivity().name == "noise_sensitivity(mode=relevant)"
    assert NoiseSensitivity("irrelevant").name == "noise_sensitivity(mode=irrelevant)"
    assert NoiseSensitivity.name == "noise_sensitivity"
    assert NoiseSensitivity("irrelevant").params == {"mode": "irrelevant"}
    with pytest.raises(ConfigError, match="valid: 'relevant', 'irrelevant'"):
        NoiseSensitivity("noisy")  # type: ignore[arg-type]


@pytest.mark.parametrize("judge_mode", ["classify", "generate"])
@pytest.mark.parametrize("ragas_compat", [False, True])
def test_english_scores_in_both_judge_modes(judge, judge_mode, ragas_compat):
    metrics = [NoiseSensitivity("relevant"), NoiseSensitivity("irrelevant")]
    _, out = run(judge, metrics, EN, judge_mode=judge_mode, ragas_compat=ragas_compat)
    relevant, irrelevant = out["noise_sensitivity(mode=relevant)"], out["noise_sensitivity(mode=irrelevant)"]
    assert relevant.score == pytest.approx(1 / 5) and irrelevant.score == pytest.approx(2 / 5)
    assert relevant.details["relevant_contexts"] == [True, False, False]
    assert relevant.details["ref_supports_answer"] == [True, False, False, False, False]


@pytest.mark.parametrize("judge_mode", ["classify", "generate"])
def test_chinese(judge, judge_mode):
    metrics = [NoiseSensitivity("relevant"), NoiseSensitivity("irrelevant")]
    _, out = run(judge, metrics, ZH, "zh", judge_mode=judge_mode)
    assert out["noise_sensitivity(mode=relevant)"].score == pytest.approx(1 / 3)
    assert out["noise_sensitivity(mode=irrelevant)"].score == pytest.approx(1 / 3)
    assert out["noise_sensitivity(mode=relevant)"].details["response_statements"][1] == "长城长达十万公里。"


def test_classify_requests_at_k3_and_both_modes_share_them(judge):
    engine, _ = run(judge, [NoiseSensitivity("relevant"), NoiseSensitivity("irrelevant")], EN)
    # round 1: G and A; round 2: 3 contexts x (2 + 5) statements + 5 reference verdicts = 26 per mode.
    # "The Eiffel Tower is in Paris." is in both G and A, so its 3 context verdicts are asked once.
    assert [(r.requests, r.unique, r.sent) for r in engine.rounds] == [(4, 2, 2), (52, 23, 23)]
    assert judge.calls == [("generate", 2), ("classify", 23)]


def test_generate_requests_at_k3_match_ragas_count(judge):
    engine, _ = run(
        judge, [NoiseSensitivity("relevant"), NoiseSensitivity("irrelevant")], EN, judge_mode="generate"
    )
    # 2 statement lists, then 2K + 1 = 7 verdict lists: RAGAS's 2K + 3 calls, here in two rounds
    assert [(r.requests, r.unique) for r in engine.rounds] == [(4, 2), (14, 7)]


def test_response_statements_are_shared_with_faithfulness(judge):
    engine, _ = run(judge, [NoiseSensitivity(), Faithfulness()], EN)
    assert (engine.rounds[0].requests, engine.rounds[0].unique) == (3, 2)


def test_threshold_is_strictly_above_one_half():
    # the recorded statements, and a judge torn 50/50 on every verdict
    statements = {r: a for r, a in recordings("noise_sensitivity").items() if isinstance(r, GenerateRequest)}
    half = ReplayJudge(recorded=statements, classify_rule=lambda r: [0.5, 0.5])
    _, out = run(half, [NoiseSensitivity()], EN)
    result = out["noise_sensitivity(mode=relevant)"]
    # nothing supported: no relevant context, every statement incorrect but unsupported -> 0
    assert result.score == 0.0 and result.details["relevant_contexts"] == [False, False, False]


def test_no_statements_is_nan(judge):
    empty = ReplayJudge(generate_rule=lambda r: '{"statements": []}')  # the same text to every request
    _, out = run(empty, [NoiseSensitivity()], EN)
    assert out["noise_sensitivity(mode=relevant)"].reason == "no_statements"
    blank = EN.model_copy(update={"response": "  "})
    _, out = run(judge, [NoiseSensitivity()], blank)
    assert out["noise_sensitivity(mode=relevant)"].reason == "no_statements" and judge.calls == []


def test_missing_contexts_and_blank_question(judge):
    _, out = run(judge, [NoiseSensitivity()], EN.model_copy(update={"retrieved_contexts": ()}))
    assert out["noise_sensitivity(mode=relevant)"].reason == "no_contexts"
    no_question = EN.model_copy(update={"user_input": ""})
    _, out = run(judge, [NoiseSensitivity()], no_question, ragas_compat=True)
    assert out["noise_sensitivity(mode=relevant)"].reason == "missing_input"
    _, out = run(judge, [NoiseSensitivity()], no_question)
    assert out["noise_sensitivity(mode=relevant)"].score == pytest.approx(1 / 5)


def test_generate_mode_verdict_count_mismatch_is_a_parse_failure():
    short = recorded_judge("noise_sensitivity", variant="short-verdict-list")
    _, out = run(short, [NoiseSensitivity()], EN, judge_mode="generate")
    result = out["noise_sensitivity(mode=relevant)"]
    assert math.isnan(result.score) and "returned 1 verdicts for 2 statements" in result.reason


def test_a_verdict_over_other_labels_is_nan_with_the_answer_kept():
    _, out = run(recorded_judge("noise_sensitivity", variant="wrong-labels"), [NoiseSensitivity()], EN)
    result = out["noise_sensitivity(mode=relevant)"]
    assert math.isnan(result.score) and result.reason.startswith("parse_failure: the judge answered labels")
    assert '"labels": ["1", "0", "2"]' in result.details["raw"] and result.details["response_statements"]


def test_statement_parse_failure_is_nan_with_raw_text():
    broken = ReplayJudge(generate_rule=lambda r: "I cannot do that.")
    _, out = run(broken, [NoiseSensitivity()], EN)
    result = out["noise_sensitivity(mode=relevant)"]
    assert result.reason.startswith("parse_failure") and result.details["raw"] == "I cannot do that."
