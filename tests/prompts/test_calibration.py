"""Calibration of yes/no verdicts: the anchors, the threshold they measure, and the metrics that use it."""

from __future__ import annotations

import math
from dataclasses import replace

import pytest

from ascend_eval.data import Sample
from ascend_eval.metrics.base import PlanContext
from ascend_eval.metrics.context_precision import ContextPrecision, expected_average_precision
from ascend_eval.metrics.faithfulness import supported_share
from ascend_eval.metrics.verdicts import Asked
from ascend_eval.models.base import ClassifyResult
from ascend_eval.prompts.calibration import ANCHORS, TARGET, Calibration, calibration_inputs, logit
from ascend_eval.prompts.context_usefulness import CONTEXT_USEFUL
from ascend_eval.prompts.layout import SampleBlock, read_block, read_input
from ascend_eval.prompts.nli import STATEMENT_SUPPORT

YES_NO = (STATEMENT_SUPPORT, CONTEXT_USEFUL)


@pytest.mark.parametrize("spec", YES_NO, ids=lambda s: s.tag)
@pytest.mark.parametrize("language", ["en", "zh"])
def test_generic_anchors_are_a_yes_case_and_a_no_case_per_sentence_pair(spec, language):
    inputs = calibration_inputs(spec.input, "anchored", language)
    pairs = ANCHORS[language]
    yes, no = inputs[: len(pairs)], inputs[len(pairs) :]
    assert len(no) == len(pairs)
    for (sentence, unrelated), y, n in zip(pairs, yes, no, strict=True):
        assert set(y.model_dump().values()) == {sentence}  # judged against itself: yes
        assert n.context == sentence  # every other field an unrelated sentence: no
        assert {v for k, v in n.model_dump().items() if k != "context"} == {unrelated}


@pytest.mark.parametrize("spec", YES_NO, ids=lambda s: s.tag)
def test_calibration_requests_are_task_first_and_the_same_for_every_sample(spec):
    first, again = (spec.calibration_requests("anchored", "en") for _ in range(2))
    assert first == again and len(set(first)) == len(first) == 6  # equal requests: answered once per run
    shown = [read_input(r.messages[-1].content) for r in first]
    own = spec.anchors.get("en", ())
    assert shown == [x.model_dump() for x in calibration_inputs(spec.input, "anchored", "en", own)]


@pytest.mark.parametrize("language", ["en", "zh"])
def test_context_usefulness_is_anchored_on_inputs_like_its_own(language):
    """Yes: the context holds the answer among other details; no: the same subject without the fact."""
    own = CONTEXT_USEFUL.anchors[language]
    inputs = calibration_inputs(CONTEXT_USEFUL.input, "anchored", language, own)
    assert len(own) == 3 and inputs == [y for y, _ in own] + [n for _, n in own]
    for yes, no in own:
        assert (yes.question, yes.answer) == (no.question, no.answer) and yes.context != no.context
        assert len(yes.context) > len(yes.answer)  # the fact among other details, not the answer itself
    # The generic anchors stay where a prompt has none of its own.
    assert STATEMENT_SUPPORT.anchors == {}
    generic = calibration_inputs(STATEMENT_SUPPORT.input, "anchored", language)
    assert generic[0].statement == ANCHORS[language][0][0]


def test_anchors_need_a_yes_no_prompt():
    from dataclasses import replace

    from ascend_eval.prompts.context_relevance import RELEVANCE_JUDGE_1

    rating = RELEVANCE_JUDGE_1.classify
    with pytest.raises(ValueError, match="yes/no prompt"):
        replace(rating, anchors=CONTEXT_USEFUL.anchors)


def test_the_threshold_reads_as_an_even_verdict_and_order_is_kept():
    c = Calibration.measured("anchored", [0.8, 0.75, 0.7, 0.6, 0.55, 0.5])
    assert 0.6 < c.threshold < 0.75
    assert c.apply(c.threshold) == pytest.approx(0.5)
    probs = [0.01, 0.3, 0.55, 0.62, 0.7, 0.99]
    moved = [c.apply(p) for p in probs]
    assert moved == sorted(moved) and all(0 < m < 1 for m in moved)
    assert Calibration.measured("anchored", [0.9, 0.1]).threshold == pytest.approx(0.5)


def _judge(p_items: list[float]):
    """Answers `p_items` to a plan's own requests, then `LEANING` to its calibration requests (if any)."""

    def answer(requests):
        p = p_items + LEANING[: len(requests) - len(p_items)]
        return [ClassifyResult(("0", "1"), (1 - x, x)) for x in p]

    return answer


def _run(plan, answer):
    """Drive a one-round plan: `answer(requests)` gives the results; returns the MetricResult."""
    requests = next(plan)
    try:
        plan.send(answer(requests))
    except StopIteration as done:
        return done.value
    raise AssertionError("the plan asked for a second round")


LEANING = [0.8, 0.75, 0.7, 0.6, 0.55, 0.5]  # a judge that says "1" to everything: threshold ~0.65


def test_a_judge_leaning_to_yes_has_its_weak_yeses_read_as_no():
    statements, judge = ["A.", "B.", "C."], _judge([0.62, 0.9, 0.58])
    before = _run(supported_share("ctx", statements, PlanContext("en")), judge)
    after = _run(supported_share("ctx", statements, PlanContext("en", calibration="anchored")), judge)
    assert before.score == 1.0  # 0.62 and 0.58 are above 0.5
    assert after.score == pytest.approx(1 / 3)  # only 0.9 is above the judge's own threshold
    assert after.details["calibration"]["method"] == "anchored"
    assert 0.6 < after.details["calibration"]["threshold"] < 0.7
    assert after.details["p_supported"][0] < 0.5 < after.details["p_supported"][1]


def test_a_calibration_answer_that_cannot_be_read_is_nan_with_its_reason():
    ctx = PlanContext("en", calibration="anchored")

    def answer(requests):
        good = [ClassifyResult(("0", "1"), (0.1, 0.9)) for _ in requests]
        good[-1] = ClassifyResult(("0", "1"), (0.0, 0.0), error="HTTP 500")
        return good

    result = _run(supported_share("ctx", ["A."], ctx), answer)
    assert math.isnan(result.score)
    assert result.reason.startswith("backend_error") and "calibration request of statement_support@1" in (
        result.reason
    )


def test_no_verdicts_asked_means_no_calibration_requests():
    asked = Asked(STATEMENT_SUPPORT, [], PlanContext("en", calibration="anchored"))
    assert asked.requests == [] and asked.read([]) == []


def test_rating_scales_are_not_yes_no_prompts():
    from ascend_eval.prompts.context_relevance import RELEVANCE_JUDGE_1

    with pytest.raises(ValueError, match="not a yes/no prompt"):
        Asked(RELEVANCE_JUDGE_1.classify, [], PlanContext("en"))


def test_context_precision_calibrated_and_expected():
    sample = Sample(user_input="q", retrieved_contexts=["c1", "c2"], reference="r")
    metric = ContextPrecision()
    answer = _judge([0.58, 0.9])  # both "useful" uncalibrated: AP 1.0
    plain = _run(metric.plan(sample, PlanContext("en")), answer)
    calibrated = _run(metric.plan(sample, PlanContext("en", calibration="anchored")), answer)
    expected = _run(metric.plan(sample, PlanContext("en", scoring="expected")), answer)
    assert plain.score == 1.0
    assert calibrated.score == 0.5  # the first context now reads "not useful": AP of [0, 1]
    # E[AP] over the four outcomes of (0.58, 0.9): [1,1] -> 1, [1,0] -> 1, [0,1] -> 0.5, [0,0] -> 0
    want = 0.58 * 0.9 + 0.58 * 0.1 + 0.42 * 0.9 * 0.5
    assert expected.score == pytest.approx(want)


@pytest.mark.parametrize("spec", YES_NO, ids=lambda s: s.tag)
def test_sample_first_calibration_is_laid_out_as_the_requests_it_calibrates(spec):
    """Sample first, a verdict request has no few-shot examples and reads its texts from a block above the
    task: its anchors are asked the same way, each after a block of its own texts. A prompt that stays
    task first in every layout (`sample_first=False`) asks its anchors task first too."""
    own = spec.anchors.get("en", ())
    inputs = calibration_inputs(spec.input, "anchored", "en", own)
    task_first = spec.calibration_requests("anchored", "en")
    sample_first = spec.calibration_requests("anchored", "en", sample_first=True)
    if not spec.sample_first:
        assert sample_first == task_first
        sample = SampleBlock(question="Q?", contexts=("x " * 600,), answer="A.", reference="R.")
        item = spec.input.model_validate(dict.fromkeys(spec.input.model_fields, "x " * 600))
        ctx = PlanContext("en", block=sample, calibration="anchored")
        assert Asked(spec, [item], ctx).requests[1:] == task_first
        return
    assert all(read_block(r.messages[-1].content) is None for r in task_first)
    for request, x in zip(sample_first, inputs, strict=True):
        content = request.messages[-1].content
        read = read_block(content)
        assert read is not None and read[0].contexts == (x.context,) and "Example 1" not in content
        assert read_input(content) == x.model_dump()
    assert all(read_block(r.messages[-1].content) is None
               for r in spec.calibration_requests("content_free", "en", sample_first=True))  # fmt: skip
    # A plan asks the calibration of its sample's layout.
    sample = SampleBlock(question="Q?", contexts=("x " * 600,), answer="A.", reference="R.")
    item = spec.input.model_validate(dict.fromkeys(spec.input.model_fields, "x " * 600) | {"question": "Q?"})
    asked = Asked(spec, [item], PlanContext("en", block=sample, calibration="anchored"))
    assert asked.requests[1:] == sample_first
    assert Asked(spec, [item], PlanContext("en", calibration="anchored")).requests[1:] == task_first


def test_the_scale_keeps_one_useful_context_above_the_same_context_padded_with_off_topic_ones():
    """What Qwen2.5-Coder-1.5B did on the first Chinese context pairs: it gave the useful context more than
    the off-topic ones every time, but all within a narrow band. Shifted only, the expected average
    precision of the flawed row (off-topic, useful, off-topic) came out above the good row's single useful
    context; scaled as well, the good row leads."""
    anchors = [0.77, 0.82, 0.86, 0.42, 0.60, 0.59]  # its Chinese context_useful anchors (docs/metrics.md)
    useful, off_topic = 0.70, 0.54
    calibration = Calibration.measured("anchored", anchors)
    shifted = replace(calibration, scale=1.0)
    for c, good_wins in ((shifted, False), (calibration, True)):
        good = expected_average_precision([c.apply(useful)])
        flawed = expected_average_precision([c.apply(off_topic), c.apply(useful), c.apply(off_topic)])
        assert (good > flawed) is good_wins, (c, good, flawed)
    # the anchors land where the scale puts them, and the order of verdicts is kept
    logits = [logit(p) for p in anchors]
    assert logit(calibration.apply(0.5)) < logit(calibration.apply(0.6))
    mean_yes = 1 / (1 + math.exp(-sum(logits[:3]) / 3))
    assert calibration.apply(mean_yes) == pytest.approx(TARGET, abs=1e-5)
