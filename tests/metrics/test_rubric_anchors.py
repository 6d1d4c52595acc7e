"""A `Rubric` with labelled anchors: under the "anchored" calibration the judge's expected level is put on
the anchors' scale, and the label is the level it lands in; what the anchors cost, how they are laid out,
what happens when they say nothing or cannot be read, and how they are checked and carried."""

from __future__ import annotations

import math
import pickle

import pytest

from ascend_eval import evaluate
from ascend_eval.data import Sample
from ascend_eval.engine import Backends, Engine
from ascend_eval.metrics import Rubric
from ascend_eval.metrics.base import PlanContext
from ascend_eval.metrics.files import metric_entries
from ascend_eval.models.errors import ConfigError
from ascend_eval.models.judge.replay import ReplayJudge
from ascend_eval.prompts.calibration import level_target
from ascend_eval.prompts.layout import SampleBlock

LEVELS = {1: "Misses the reference's points.", 3: "Covers about half.", 5: "Covers every point."}
QUESTION = "What do I need to renew a library card?"
REFERENCE = "Your old card, a photo ID and a proof of address; renewal is free and takes ten minutes."
LOW = {"question": QUESTION, "answer": "Libraries have many services.", "reference": REFERENCE, "level": 1}
MID = {
    "question": QUESTION,
    "answer": "Bring your old card and a photo ID.",
    "reference": REFERENCE,
    "level": 3,
}
HIGH = {
    "question": QUESTION,
    "answer": "Bring your old card, a photo ID and a proof of address; it is free and takes ten minutes.",
    "reference": REFERENCE,
    "level": 5,
}
ANCHORED = Rubric("completeness", LEVELS, reads=["question", "answer", "reference"], anchors=[LOW, MID, HIGH])
PLAIN = Rubric("completeness", LEVELS, reads=["question", "answer", "reference"])
STRONG = Sample(user_input="How do I return a parcel?", response="strong answer", reference="ref")
WEAK = Sample(user_input="How do I return a parcel?", response="weak answer", reference="ref")

MIDDLING = {  # a judge whose most probable level is 3 for everything, its expected level moving a little
    LOW["answer"]: (0.30, 0.50, 0.20),
    MID["answer"]: (0.25, 0.50, 0.25),
    HIGH["answer"]: (0.20, 0.50, 0.30),
    "strong answer": (0.21, 0.50, 0.29),
    "weak answer": (0.29, 0.50, 0.21),
}


def middling(table=MIDDLING, seen=None):
    def rule(request):
        if seen is not None:
            seen.append(request)
        text = request.messages[-1].content
        return next(list(probs) for answer, probs in table.items() if answer in text)

    return ReplayJudge(classify_rule=rule, model_id="rules-rubric-anchors")


def run(metric, judge, sample, **ctx):
    engine = Engine(Backends(judge=judge))
    return engine.run({0: metric.plan(sample, PlanContext("en", **ctx))})[0]


def test_anchors_turn_the_judges_small_movement_into_labels():
    for scoring in ("expected", "threshold"):
        strong, weak = (
            run(PLAIN, middling(), s, calibration="anchored", scoring=scoring) for s in (STRONG, WEAK)
        )
        assert strong.details["level"] == weak.details["level"] == 3  # without anchors the labels tie
    judge = middling()
    strong, weak = (
        run(ANCHORED, judge, s, calibration="anchored", scoring="threshold") for s in (STRONG, WEAK)
    )
    assert (strong.details["level"], weak.details["level"]) == (5, 1)
    assert (strong.score, weak.score) == (1.0, 0.0)
    assert strong.details["most_probable_level"] == weak.details["most_probable_level"] == 3
    assert strong.details["calibration"]["slope"] > 1  # the narrow band is spread over the scale
    assert judge.calls[-1] == ("classify", 4)  # the sample and its three anchors, in one batch


def test_the_calibrated_score_keeps_the_order_and_reads_each_anchor_in_its_band():
    scores = {}
    for answer in MIDDLING:
        sample = Sample(user_input=QUESTION, response=answer, reference=REFERENCE)
        result = run(ANCHORED, middling(), sample, calibration="anchored", scoring="expected")
        scores[answer] = result.score
        assert 0 < result.score < 1
    order = sorted(MIDDLING, key=lambda a: MIDDLING[a][2] - MIDDLING[a][0])
    assert sorted(scores, key=scores.get) == order
    for anchor in (LOW, MID, HIGH):  # these three are collinear on the logit scale: each reads its target
        assert scores[anchor["answer"]] == pytest.approx(level_target(anchor["level"], 1, 5), abs=1e-6)


def test_without_the_anchored_calibration_a_rubric_reads_as_it_comes():
    judge = middling()
    off = run(ANCHORED, judge, STRONG, calibration=None, scoring="expected")
    plain = run(PLAIN, middling(), STRONG, calibration=None, scoring="expected")
    assert off.score == plain.score and off.details == plain.details and "calibration" not in off.details
    assert judge.calls == [("classify", 1)]
    content_free = run(ANCHORED, middling(), STRONG, calibration="content_free", scoring="expected")
    assert content_free.score == plain.score  # a rating scale has no content-free calibration


def test_generate_mode_asks_no_anchor():
    judge = ReplayJudge(generate_rule=lambda r: '{"reason": "covers it", "rating": 5}')
    result = run(ANCHORED, judge, STRONG, judge_mode="generate")
    assert result.score == 1.0 and judge.calls == [("generate", 1)]


def test_anchors_that_do_not_come_apart_leave_the_reading_and_say_so():
    backwards = dict(MIDDLING) | {LOW["answer"]: (0.2, 0.5, 0.3), HIGH["answer"]: (0.3, 0.5, 0.2)}
    result = run(ANCHORED, middling(backwards), STRONG, calibration="anchored", scoring="expected")
    plain = run(PLAIN, middling(), STRONG, scoring="expected")
    assert result.score == plain.score and result.details["level"] == 3
    assert result.details["calibration"] == {"method": "anchored", "applied": False}


def test_an_unreadable_anchor_answer_is_nan_with_its_reason():
    def rule(request):
        return [0.0, 0.0, 0.0] if HIGH["answer"] in request.messages[-1].content else [0.2, 0.5, 0.3]

    result = run(ANCHORED, ReplayJudge(classify_rule=rule), STRONG, calibration="anchored")
    assert math.isnan(result.score)
    assert "an anchor request of rubric:completeness@1" in result.reason and "raw" in result.details


def test_sample_first_lays_each_anchor_after_its_own_texts():
    seen: list = []
    run(ANCHORED, middling(seen=seen), STRONG, calibration="anchored", block=SampleBlock.of(STRONG))
    sample_request, *anchor_requests = seen
    assert STRONG.response in sample_request.messages[0].content
    for request, anchor in zip(anchor_requests, (LOW, MID, HIGH), strict=True):
        text = request.messages[0].content
        assert anchor["answer"] in text and STRONG.response not in text
        assert text.index(anchor["answer"]) < text.index("### Task")


@pytest.mark.parametrize(
    "anchors, message",
    [
        ([HIGH, HIGH | {"answer": "Another full answer."}], "at least two levels"),
        ([LOW, HIGH | {"level": 4}], r"level 4 is not one of \[1, 3, 5\]"),
        ([LOW, {"question": QUESTION, "answer": "x", "level": 5}], r"lacks \['reference'\]"),
    ],
)
def test_anchors_are_checked_when_built(anchors, message):
    with pytest.raises(ConfigError, match=message):
        Rubric("completeness", LEVELS, reads=["question", "answer", "reference"], anchors=anchors)


def test_an_anchor_may_not_also_be_an_example():
    with pytest.raises(ConfigError, match="an anchor is also an example"):
        Rubric("completeness", LEVELS, reads=["question", "answer", "reference"], examples=[HIGH],
               anchors=[LOW, HIGH])  # fmt: skip


def test_anchors_travel_with_the_rubric():
    assert pickle.loads(pickle.dumps(ANCHORED)) == ANCHORED != PLAIN
    assert "anchors" not in PLAIN.params
    spec = {"name": "completeness", "levels": LEVELS, "reads": ["question", "answer", "reference"],
            "anchors": [LOW, MID, HIGH]}  # fmt: skip
    (entry,) = metric_entries([{"rubric": spec}], "m.yaml")
    assert entry == ANCHORED and [a["level"] for a in entry.params["anchors"]] == [1, 3, 5]


def test_an_anchored_rubric_on_a_real_tiny_judge(tiny_llama_dir):
    result = evaluate([STRONG, WEAK], metrics=[ANCHORED], judge=f"local:{tiny_llama_dir}", cache_dir=False,
                      progress=False)  # fmt: skip
    frame = result.to_pandas()
    assert frame["completeness"].between(0, 1).all(), frame["completeness"]
    assert result.provenance["metrics"]["completeness"]["anchors"][2]["level"] == 5


def test_anchors_the_judge_barely_separates_still_give_a_score_on_the_scale():
    close = dict(MIDDLING) | {
        LOW["answer"]: (0.250001, 0.5, 0.249999),
        MID["answer"]: (0.25, 0.5, 0.25),
        HIGH["answer"]: (0.249999, 0.5, 0.250001),
    }
    for sample, level in ((STRONG, 5), (WEAK, 1)):
        result = run(ANCHORED, middling(close), sample, calibration="anchored", scoring="expected")
        assert 0 <= result.score <= 1 and result.details["level"] == level
        assert result.details["calibration"]["slope"] > 1e4
