"""nv_accuracy, nv_context_relevance and nv_response_groundedness: two judges, both judge modes, both
combination rules, shortcuts and NaN paths. What the judges said about EN and ZH is recorded in
data/judge/nv_metrics.json; the arithmetic tests give each judge probabilities of their own."""

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
from ascend_eval.prompts.answer_accuracy import (
    ACCURACY_JUDGE_1,
    ACCURACY_JUDGE_2,
    AccuracyInput,
    AccuracyInputReferenceFirst,
)
from ascend_eval.prompts.context_relevance import (
    RELEVANCE_JUDGE_1,
    RELEVANCE_JUDGE_2,
    RelevanceInput,
    RelevanceInputContextFirst,
)
from ascend_eval.prompts.response_groundedness import (
    GROUNDEDNESS_JUDGE_1,
    GROUNDEDNESS_JUDGE_2,
    GroundednessInput,
    GroundednessInputResponseFirst,
)
from tests.recorded_judge import recorded_judge

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
    """Answers every request of judge 1 alike, and every request of judge 2 alike, whatever the sample:
    `classify`/`generate` map "judge1"/"judge2" to probabilities / text. For the arithmetic tests."""

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
    judge = recorded_judge("nv_metrics")  # judge 1 rates ZH at the top of the scale, judge 2 in the middle
    result = run(metric(), judge, ZH, "zh", ragas_compat=ragas_compat)
    assert result.score == 0.75 and len(result.details["probs"][0]) == scale_len


@pytest.mark.parametrize("metric", METRICS)
def test_a_judge_answering_over_other_labels_is_nan_and_the_combination_decides(metric):
    judge = recorded_judge("nv_metrics", variant="wrong-labels")  # judge 1 read off other label tokens
    result = run(metric(), judge, ZH, "zh")
    assert result.score == 0.5 and result.details["ratings"] == [None, 0.5]
    assert result.details["probs"][0] is None
    assert result.details["failures"][0]["reason"].startswith("parse_failure: the judge answered labels")
    legacy = run(metric(), judge, ZH, "zh", ragas_compat=True)
    assert math.isnan(legacy.score) and legacy.reason.startswith("parse_failure")


def seen_requests(metric, sample, **ctx) -> list:
    seen = []
    run(metric, ReplayJudge(classify_rule=lambda r: seen.append(r) or [1, 0, 0]), sample, **ctx)
    return seen


def test_accuracy_judge2_swaps_roles_by_default_and_keeps_them_under_ragas_compat():
    q, response, reference = EN.user_input, EN.response, EN.reference
    judge1 = ACCURACY_JUDGE_1.classify.request(
        AccuracyInput(question=q, answer=response, reference_answer=reference), "en"
    )
    swapped = AccuracyInputReferenceFirst(question=q, reference_answer=response, answer=reference)
    kept = AccuracyInputReferenceFirst(question=q, reference_answer=reference, answer=response)
    assert seen_requests(AnswerAccuracy(), EN) == [judge1, ACCURACY_JUDGE_2.classify.request(swapped, "en")]
    assert seen_requests(AnswerAccuracy(), EN, ragas_compat=True) == [
        judge1,
        ACCURACY_JUDGE_2.classify.request(kept, "en"),
    ]
    assert list(AccuracyInput.model_fields) == ["question", "answer", "reference_answer"]
    assert list(AccuracyInputReferenceFirst.model_fields) == ["question", "reference_answer", "answer"]


def test_second_judge_shows_inputs_in_the_other_order():
    q, response, context = EN.user_input, EN.response, "\n".join(EN.retrieved_contexts)
    assert seen_requests(ContextRelevance(), EN) == [
        RELEVANCE_JUDGE_1.classify.request(RelevanceInput(question=q, context=context), "en"),
        RELEVANCE_JUDGE_2.classify.request(RelevanceInputContextFirst(context=context, question=q), "en"),
    ]
    assert seen_requests(ResponseGroundedness(), EN) == [
        GROUNDEDNESS_JUDGE_1.classify.request(GroundednessInput(context=context, response=response), "en"),
        GROUNDEDNESS_JUDGE_2.classify.request(
            GroundednessInputResponseFirst(response=response, context=context), "en"
        ),
    ]
    assert list(RelevanceInput.model_fields) == ["question", "context"]
    assert list(RelevanceInputContextFirst.model_fields) == ["context", "question"]
    assert list(GroundednessInput.model_fields) == ["context", "response"]
    assert list(GroundednessInputResponseFirst.model_fields) == ["response", "context"]
    # the sample block, rendered last, follows the field order
    judge2 = seen_requests(ContextRelevance(), EN)[1].messages[-1].content
    assert judge2.rindex('"context"') < judge2.rindex('"question"')


@pytest.mark.parametrize("metric", METRICS)
@pytest.mark.parametrize("language,sample", [("en", EN), ("zh", ZH)])
def test_generate_mode_reads_json_ratings(metric, language, sample):
    judge = recorded_judge("nv_metrics")  # judge 1 at the top of the scale, judge 2 in the middle
    result = run(metric(), judge, sample, language, judge_mode="generate")
    assert result.score == 0.75 and result.details["ratings"] == [1.0, 0.5]
    assert judge.calls == [("generate", 2)]


@pytest.mark.parametrize("variant", ["full-width", "rating-as-text"])
@pytest.mark.parametrize("metric", METRICS)
def test_ratings_in_full_width_punctuation_or_as_text_read_the_same(metric, variant):
    judge = recorded_judge("nv_metrics", variant=variant)
    result = run(metric(), judge, ZH, "zh", judge_mode="generate")
    assert result.score == 0.75 and result.details["ratings"] == [1.0, 0.5]


@pytest.mark.parametrize("metric", METRICS)
def test_a_rating_cut_at_max_tokens_is_nan_for_that_judge(metric):
    truncated = recorded_judge("nv_metrics", variant="truncated")
    result = run(metric(), truncated, ZH, "zh", judge_mode="generate")
    assert result.score == 0.5 and result.details["failures"][0]["reason"].startswith("truncated")


def test_a_fenced_rating_reads_the_same():
    fenced = recorded_judge("nv_metrics", variant="code-fenced")
    assert run(AnswerAccuracy(), fenced, EN, judge_mode="generate").score == 0.75


def test_generate_request_has_an_enum_schema():
    seen = []
    judge = ReplayJudge(generate_rule=lambda r: seen.append(r) or '{"rating": 4}')
    run(AnswerAccuracy(), judge, EN, judge_mode="generate")
    schema = seen[0].params.schema
    assert schema["properties"]["rating"]["enum"] == [0, 2, 4]
    assert seen[0].tag.startswith("nv_accuracy_judge") and "_json@" in seen[0].tag


@pytest.mark.parametrize("metric", METRICS)
def test_failed_judge_default_tolerant_ragas_compat_legacy_max(metric):
    # judge 1 writes no rating, judge 2 the top one; judge 1 the top rating, judge 2 a 3 (off the scale)
    first_fails = recorded_judge("nv_metrics", variant="judge1-unreadable")
    second_fails = recorded_judge("nv_metrics", variant="judge2-off-scale")
    both_fail = recorded_judge("nv_metrics", variant="both-unreadable")

    assert run(metric(), first_fails, EN, judge_mode="generate").score == 1.0
    legacy = run(metric(), first_fails, EN, judge_mode="generate", ragas_compat=True)
    assert math.isnan(legacy.score) and legacy.reason.startswith("parse_failure")
    assert legacy.details["failures"][0]["raw"] == "I cannot rate this answer."

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
