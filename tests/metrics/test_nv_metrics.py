"""nv_accuracy, nv_context_relevance and nv_response_groundedness: two judges, both judge modes, both
combination rules, shortcuts and NaN paths."""

from __future__ import annotations

import json
import math

import pytest

from ascend_eval.data import Sample
from ascend_eval.engine import Backends, Engine
from ascend_eval.metrics.base import PlanContext
from ascend_eval.metrics.dual_judge import combine_judges, expected_rating, most_probable_rating
from ascend_eval.metrics.nv_accuracy import AnswerAccuracy
from ascend_eval.metrics.nv_context_relevance import ContextRelevance, relevance_shortcut
from ascend_eval.metrics.nv_response_groundedness import ResponseGroundedness, groundedness_shortcut
from ascend_eval.models.judge.replay import ReplayJudge
from tests.conftest import sample_input

EN = Sample(
    user_input="When did the Berlin Wall fall?",
    response="The Berlin Wall fell in 1989.",
    reference="The Berlin Wall fell on 9 November 1989.",
    retrieved_contexts=("The Berlin Wall fell on 9 November 1989.", "Berlin is the capital of Germany."),
)
ZH = Sample(
    user_input="柏林墙是哪一年倒塌的？",
    response="柏林墙在1989年倒塌。",
    reference="柏林墙于1989年11月9日倒塌。",
    retrieved_contexts=("1989年11月9日，柏林墙倒塌。", "柏林是德国的首都。"),
)


def judge_of(classify=None, generate=None) -> ReplayJudge:
    """Replays per judge: `classify`/`generate` map "judge1"/"judge2" to probabilities / text."""

    def which(request) -> str:
        name = request.tag.partition("@")[0].removesuffix("_json")
        return name.rsplit("_", 1)[1]

    return ReplayJudge(
        generate_rule=lambda r: generate[which(r)],
        classify_rule=lambda r: classify[which(r)],
        model_id="rules-nv",
    )


def run(metric, judge, sample, language="en", **ctx):
    engine = Engine(Backends(judge=judge))
    return engine.run({0: metric.plan(sample, PlanContext(language, **ctx))})[0]


METRICS = [AnswerAccuracy, ContextRelevance, ResponseGroundedness]


def test_pure_rating_and_combination():
    assert expected_rating([0.1, 0.2, 0.7], [0, 2, 4]) == pytest.approx(0.8)
    assert most_probable_rating([0.4, 0.4, 0.2], [0, 1, 2]) == 0.0  # tie -> the lower rating
    assert combine_judges(0.0, 1.0) == 0.5
    assert math.isnan(combine_judges(math.nan, 1.0, ragas_compat=True))
    assert combine_judges(1.0, math.nan, ragas_compat=True) == 1.0


@pytest.mark.parametrize("language,sample", [("en", EN), ("zh", ZH)])
def test_accuracy_classify_expected_by_default_argmax_under_ragas_compat(language, sample):
    judge = judge_of(classify={"judge1": [0.1, 0.2, 0.7], "judge2": [0.0, 0.4, 0.6]})
    result = run(AnswerAccuracy(), judge, sample, language)
    # judge 1: (0.4 + 2.8) / 4 = 0.8; judge 2: (0.8 + 2.4) / 4 = 0.8
    assert result.score == pytest.approx(0.8)
    assert result.details["probs"] == [[0.1, 0.2, 0.7], [0.0, 0.4, 0.6]]
    assert run(AnswerAccuracy(), judge, sample, language, ragas_compat=True).score == 1.0
    assert judge.calls == [("classify", 2), ("classify", 2)]  # both judges in one round


@pytest.mark.parametrize("metric", METRICS)
@pytest.mark.parametrize("ragas_compat", [False, True])
def test_classify_scales(metric, ragas_compat):
    scale_len = 3
    judge = judge_of(classify={"judge1": [0, 0, 1], "judge2": [0, 1, 0]})
    result = run(metric(), judge, ZH, "zh", ragas_compat=ragas_compat)
    assert result.score == 0.75 and len(result.details["probs"][0]) == scale_len


def test_accuracy_judge2_swaps_roles_by_default_and_keeps_them_under_ragas_compat():
    seen = []

    def rule(request):
        seen.append((request.tag, sample_input(request)))
        return [1, 0, 0]

    judge = ReplayJudge(classify_rule=rule)
    run(AnswerAccuracy(), judge, EN)
    judge1, judge2 = (x for _, x in sorted(seen, key=lambda t: t[0]))
    assert list(judge1) == ["question", "answer", "reference_answer"]
    assert judge1["answer"] == EN.response and judge1["reference_answer"] == EN.reference
    assert list(judge2) == ["question", "reference_answer", "answer"]
    assert judge2["reference_answer"] == EN.response and judge2["answer"] == EN.reference
    seen.clear()
    run(AnswerAccuracy(), judge, EN, ragas_compat=True)
    judge2 = next(x for tag, x in seen if "judge2" in tag)
    assert judge2["reference_answer"] == EN.reference and judge2["answer"] == EN.response


def test_second_judge_shows_inputs_in_the_other_order():
    orders = {}

    def rule(request):
        orders[request.tag] = list(sample_input(request))
        return [1, 0, 0]

    judge = ReplayJudge(classify_rule=rule)
    run(ContextRelevance(), judge, EN)
    run(ResponseGroundedness(), judge, EN)
    assert orders["nv_context_relevance_judge1@1"] == ["question", "context"]
    assert orders["nv_context_relevance_judge2@1"] == ["context", "question"]
    assert orders["nv_response_groundedness_judge1@1"] == ["context", "response"]
    assert orders["nv_response_groundedness_judge2@1"] == ["response", "context"]


@pytest.mark.parametrize("metric", METRICS)
@pytest.mark.parametrize("language,sample", [("en", EN), ("zh", ZH)])
def test_generate_mode_reads_json_ratings(metric, language, sample):
    top = "4" if metric is AnswerAccuracy else "2"
    mid = "2" if metric is AnswerAccuracy else "1"
    judge = judge_of(generate={"judge1": f'{{"rating": {top}}}', "judge2": f'{{"rating": {mid}}}'})
    result = run(metric(), judge, sample, language, judge_mode="generate")
    assert result.score == 0.75 and result.details["ratings"] == [1.0, 0.5]
    assert judge.calls == [("generate", 2)]


def test_generate_request_has_an_enum_schema():
    seen = []
    judge = ReplayJudge(generate_rule=lambda r: seen.append(r) or '{"rating": 4}')
    run(AnswerAccuracy(), judge, EN, judge_mode="generate")
    schema = seen[0].params.schema
    assert schema["properties"]["rating"]["enum"] == [0, 2, 4]
    assert seen[0].tag.startswith("nv_accuracy_judge") and "_json@" in seen[0].tag


@pytest.mark.parametrize("metric", METRICS)
def test_failed_judge_default_tolerant_ragas_compat_legacy_max(metric):
    good = '{"rating": 4}' if metric is AnswerAccuracy else '{"rating": 2}'
    first_fails = judge_of(generate={"judge1": "no idea", "judge2": good})
    second_fails = judge_of(generate={"judge1": good, "judge2": '{"rating": 3}'})  # 3 is off the scale
    both_fail = judge_of(generate={"judge1": "no idea", "judge2": "none"})

    assert run(metric(), first_fails, EN, judge_mode="generate").score == 1.0
    legacy = run(metric(), first_fails, EN, judge_mode="generate", ragas_compat=True)
    assert math.isnan(legacy.score) and legacy.reason.startswith("parse_failure")
    assert legacy.details["failures"][0]["raw"] == "no idea"

    assert run(metric(), second_fails, EN, judge_mode="generate").score == 1.0
    assert run(metric(), second_fails, EN, judge_mode="generate", ragas_compat=True).score == 1.0

    result = run(metric(), both_fail, EN, judge_mode="generate")
    assert math.isnan(result.score) and result.reason.startswith("parse_failure")
    assert result.details["ratings"] == [None, None]


def test_relevance_shortcuts_need_no_judge():
    judge = ReplayJudge()  # any call would raise
    for sample in (
        EN.model_copy(update={"user_input": " "}),
        EN.model_copy(update={"retrieved_contexts": ("", " ")}),
        EN.model_copy(update={"retrieved_contexts": ("When did the Berlin Wall fall?",)}),
        EN.model_copy(update={"retrieved_contexts": ("Berlin Wall",)}),
    ):
        for compat in (False, True):
            result = run(ContextRelevance(), judge, sample, ragas_compat=compat)
            assert result.score == 0.0 and "shortcut" in result.details
    assert judge.calls == []
    assert relevance_shortcut("柏林墙是哪一年倒塌的？", "柏林墙") == (0.0, "context_in_question")


def test_groundedness_shortcuts_need_no_judge():
    judge = ReplayJudge()
    blank = run(ResponseGroundedness(), judge, EN.model_copy(update={"response": ""}))
    quoted = run(ResponseGroundedness(), judge, EN.model_copy(update={"response": " Berlin is the capital "}))
    assert (blank.score, quoted.score) == (0.0, 1.0) and judge.calls == []
    assert groundedness_shortcut("柏林是德国的首都。", "\n".join(ZH.retrieved_contexts)) == (
        1.0,
        "response_in_context",
    )


def test_accuracy_blank_texts():
    judge = ReplayJudge()
    assert run(AnswerAccuracy(), judge, EN.model_copy(update={"response": " "})).score == 0.0
    assert run(AnswerAccuracy(), judge, EN.model_copy(update={"reference": ""})).reason == "no_reference"
    assert judge.calls == []
    # RAGAS has no shortcut: under ragas_compat the judges are asked
    asked = judge_of(classify={"judge1": [1, 0, 0], "judge2": [1, 0, 0]})
    assert run(AnswerAccuracy(), asked, EN.model_copy(update={"response": " "}), ragas_compat=True).ok
    assert asked.calls == [("classify", 2)]


def test_rating_prompts_render_both_languages():
    seen = []
    judge = ReplayJudge(
        generate_rule=lambda r: seen.append(r) or '{"rating": 1}',
        classify_rule=lambda r: seen.append(r) or [1, 0, 0],
    )
    for mode in ("classify", "generate"):
        run(ContextRelevance(), judge, ZH, "zh", judge_mode=mode)
    texts = [r.messages[0].content for r in seen]
    assert all("上下文" in t and "示例" in t for t in texts)
    assert "只回答以下之一：0, 1, 2" in texts[0]
    assert json.loads(seen[-1].params.json_schema)["properties"]["rating"]["enum"] == [0, 1, 2]
