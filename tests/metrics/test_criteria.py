"""The metrics users write themselves (`Criterion`, `Rubric`): their settings, their requests in both
judge modes and layouts, their scores, unreadable answers, the user's own columns, and a run on a real
tiny model."""

from __future__ import annotations

import json
import math
import pickle
from pathlib import Path

import pytest

from ascend_eval import evaluate
from ascend_eval.data import Sample
from ascend_eval.engine import Backends, Engine
from ascend_eval.metrics import Criterion, Rubric, resolve_metrics
from ascend_eval.metrics.base import PlanContext
from ascend_eval.metrics.criteria import majority
from ascend_eval.metrics.files import metric_entries
from ascend_eval.models.base import ClassifyRequest, ClassifyResult, GenerateRequest
from ascend_eval.models.errors import ConfigError, DataError
from ascend_eval.models.judge.replay import ReplayJudge
from ascend_eval.prompts.layout import SampleBlock

DATA = Path(__file__).parent / "data"
EN = Sample(
    user_input="How long is the warranty on the kettle?",
    response="The kettle has a two-year warranty [1].",
    reference="Two years.",
    retrieved_contexts=("[1] Every kettle carries a two-year warranty.", "[2] Kettles ship in five days."),
)
ZH = Sample(
    user_input="这款水壶保修多久？",
    response="这款水壶保修两年（资料1）。",
    reference="两年。",
    retrieved_contexts=("资料1：每款水壶保修两年。", "资料2：水壶五天内发货。"),
)
CITES = Criterion(
    "cites_source", "Does the answer name the passage it relies on?", reads=["contexts", "answer"]
)
COMPLETE = Rubric(
    "completeness",
    {1: "Misses the reference's points.", 3: "Covers about half.", 5: "Covers every point."},
    reads=["question", "answer", "reference"],
)


def run(metric, judge, sample, language="en", **ctx):
    engine = Engine(Backends(judge=judge))
    return engine.run({0: metric.plan(sample, PlanContext(language, **ctx))})[0]


def classify_judge(probs) -> ReplayJudge:
    return ReplayJudge(classify_rule=lambda r: probs, model_id="rules-criteria")


@pytest.mark.parametrize(
    "build, message",
    [
        (lambda: Criterion("polite", "  "), "definition must be a non-empty string"),
        (lambda: Criterion("polite", "Ok?", reads=[]), "reads= is empty"),
        (lambda: Criterion("polite", "Ok?", reads="answer"), "takes a list of fields"),
        (lambda: Criterion("polite", "Ok?", reads=["answer", "response"]), "names 'answer' twice"),
        (lambda: Criterion("polite", "Ok?", reads=["my column"]), "a field is one of"),
        (lambda: Criterion("2fast", "Ok?"), "use a letter"),
        (lambda: Criterion("polite", "Ok?", strictness=2), "odd number of readings"),
        (
            lambda: Criterion("polite", "Ok?", examples=[{"answer": "x", "verdict": "yes"}]),
            r"lacks \['question'\]",
        ),
        (
            lambda: Criterion(
                "polite", "Ok?", examples=[{"question": "q", "answer": "x", "verdict": "maybe"}]
            ),
            "verdict is yes or no",
        ),
        (lambda: Rubric("clarity", {1: "Confusing."}), "two or more levels"),
        (lambda: Rubric("clarity", {"low": "Confusing.", "high": "Clear."}), "not a whole number"),
        (lambda: Rubric("clarity", {1: "Confusing.", 10: "Clear."}), "not a whole number from 0 to 9"),
        (lambda: Rubric("clarity", {1: "Confusing.", "1": "Clear."}), "given twice"),
        (lambda: Rubric("clarity", {1: "Confusing.", 2: ""}), "level 2's description"),
    ],
)
def test_settings_that_cannot_work_are_refused_when_built(build, message):
    with pytest.raises(ConfigError, match=message):
        build()


def test_names_must_be_the_users_own_and_one_per_metric():
    with pytest.raises(ConfigError, match="has the name of a built-in metric"):
        resolve_metrics([Criterion("faithfulness", "Ok?")])
    with pytest.raises(ConfigError, match="has the name of a built-in metric"):
        resolve_metrics([Criterion("answer_accuracy", "Ok?")])  # a RAGAS alias of nv_accuracy
    with pytest.raises(ConfigError, match="Two metrics are named 'polite'"):
        resolve_metrics([Criterion("polite", "Ok?"), Criterion("polite", "Courteous?")])
    same = resolve_metrics([Criterion("polite", "Ok?"), Criterion("polite", "Ok?"), "faithfulness"])
    assert [m.name for m in same] == ["polite", "faithfulness"]


def test_a_missing_user_column_is_a_data_error_before_any_model_loads(tmp_path):
    source = Criterion(
        "names_source", "Does the answer name the source title?", reads=["answer", "source_title"]
    )
    rows = [{"response": "a", "source_title": "Manual"}, {"response": "b"}]
    with pytest.raises(DataError, match=r"reads your column 'source_title'; sample 1 lacks it"):
        evaluate(rows, metrics=[source], judge=str(tmp_path / "no-such-judge"))


def test_one_classify_request_per_sample_with_the_definition_as_written_in_the_samples_language():
    seen: list[ClassifyRequest] = []
    judge = ReplayJudge(classify_rule=lambda r: seen.append(r) or [0.2, 0.8])
    zh_definition = Criterion("cites", "回答是否指明了它所依据的资料？", reads=["contexts", "answer"])
    assert run(zh_definition, judge, EN, scoring="expected").score == pytest.approx(0.8)
    assert run(zh_definition, judge, ZH, "zh", scoring="expected").score == pytest.approx(0.8)
    assert judge.calls == [("classify", 1), ("classify", 1)]
    en_text, zh_text = (r.messages[0].content for r in seen)
    assert (
        "回答是否指明了它所依据的资料？" in en_text
        and "Does the sample below meet this criterion?" in en_text
    )
    assert "下面的样本是否符合这条标准？" in zh_text and EN.response in en_text and ZH.response in zh_text
    assert seen[0].labels == ("No", "Yes")


def test_sample_first_points_to_the_samples_texts():
    (request,) = _requests(CITES, EN, block=SampleBlock.of(EN))
    text = request.messages[0].content
    assert "the answer in the sample above" in text and "all the contexts in the sample above" in text
    assert text.index(EN.response) < text.index("### Task")


def _requests(metric, sample, **ctx):
    seen: list = []
    judge = ReplayJudge(
        classify_rule=lambda r: seen.append(r) or [1.0] * len(r.labels),
        generate_rule=lambda r: seen.append(r) or '{"reason": "-", "verdict": 1, "rating": 5}',
    )
    run(metric, judge, sample, **ctx)
    return seen


def test_criterion_scores_under_expected_and_threshold_scoring_and_strictness():
    judge = classify_judge([0.3, 0.7])
    expected = run(CITES, judge, EN, scoring="expected")
    assert expected.score == pytest.approx(0.7) and expected.details == {"p_yes": 0.7, "verdict": 1}
    assert run(CITES, judge, EN, scoring="threshold").score == 1.0
    strict = Criterion(CITES.name, CITES.definition, reads=CITES.reads, strictness=3)
    result = run(strict, judge, EN, scoring="expected")
    assert result.score == pytest.approx(majority(0.7, 3)) == pytest.approx(0.784)
    assert judge.calls[-1] == ("classify", 1)  # the majority of three readings costs no extra request


def test_anchored_calibration_leaves_a_criterion_as_the_judge_reads_it():
    result = run(CITES, classify_judge([0.3, 0.7]), EN, calibration="anchored", scoring="expected")
    assert result.score == pytest.approx(0.7) and "calibration" not in result.details


YES_ANCHOR = {"contexts": "[1] Returns are free for 30 days.", "answer": "Returns are free for 30 days [1].",
              "verdict": "yes"}
NO_ANCHOR = {"contexts": "[1] Returns are free for 30 days.", "answer": "Returns are free for 30 days.",
             "verdict": "no"}


def test_anchors_put_the_threshold_between_what_the_judge_gives_a_yes_and_a_no():
    anchored = Criterion(CITES.name, CITES.definition, reads=CITES.reads, anchors=[YES_ANCHOR, NO_ANCHOR])
    # The judge leans yes on everything: 0.62 for the yes-anchor, 0.52 for the no-anchor; the sample's 0.6
    # is nearer the yes-anchor, 0.54 nearer the no-anchor.
    def lean(sample_p):
        def rule(r):
            text = r.messages[-1].content
            p = 0.62 if "30 days [1]" in text else 0.52 if "30 days." in text else sample_p
            return [1 - p, p]
        return ReplayJudge(classify_rule=rule, model_id="rules-anchors")

    for sample_p, verdict in ((0.6, 1), (0.54, 0)):
        judge = lean(sample_p)
        plain = run(CITES, judge, EN, calibration="anchored", scoring="threshold")
        assert plain.score == 1.0  # read as it comes: both above 0.5
        result = run(anchored, judge, EN, calibration="anchored", scoring="threshold")
        assert result.score == verdict and result.details["verdict"] == verdict
        assert result.details["calibration"]["threshold"] == pytest.approx(0.57, abs=0.001)
        assert judge.calls[-1] == ("classify", 3)  # the sample and its two anchors
    expected = run(anchored, lean(0.62), EN, calibration="anchored", scoring="expected")
    assert expected.score == pytest.approx(0.9, abs=1e-4)  # the yes-anchor's reading sets the scale
    off = run(anchored, lean(0.54), EN, calibration=None, scoring="threshold")
    assert off.score == 1.0 and "calibration" not in off.details


def test_anchors_are_checked_when_built_and_travel_with_the_metric():
    with pytest.raises(ConfigError, match="at least one anchor of each verdict"):
        Criterion("cites", "Ok?", reads=["contexts", "answer"], anchors=[YES_ANCHOR])
    with pytest.raises(ConfigError, match="an anchor is also an example"):
        Criterion("cites", "Ok?", reads=["contexts", "answer"], examples=[YES_ANCHOR],
                  anchors=[YES_ANCHOR, NO_ANCHOR])  # fmt: skip
    with pytest.raises(ConfigError, match=r"lacks \['contexts'\]"):
        Criterion("cites", "Ok?", reads=["contexts", "answer"], anchors=[{"answer": "x", "verdict": 1}])
    anchored = Criterion("cites", "Ok?", reads=["contexts", "answer"], anchors=[YES_ANCHOR, NO_ANCHOR])
    assert pickle.loads(pickle.dumps(anchored)) == anchored != Criterion("cites", "Ok?", reads=anchored.reads)
    assert "anchors" not in Criterion("cites", "Ok?").params  # a run without anchors records what it did
    (entry,) = metric_entries([{"criterion": {"name": "cites", "definition": "Ok?",
                                              "reads": ["contexts", "answer"],
                                              "anchors": [YES_ANCHOR, NO_ANCHOR]}}], "m.yaml")  # fmt: skip
    assert entry == anchored and entry.params["anchors"][0]["verdict"] is True


def test_rubric_scores_the_probability_weighted_level_normalised_and_keeps_the_argmax():
    judge = classify_judge([0.1, 0.3, 0.6])  # levels 1, 3, 5
    result = run(COMPLETE, judge, EN, scoring="expected")
    assert result.score == pytest.approx((0.1 * 1 + 0.3 * 3 + 0.6 * 5 - 1) / 4)
    assert result.details["level"] == 5 and result.details["expected_level"] == pytest.approx(4.0)
    assert run(COMPLETE, judge, EN, scoring="threshold").score == 1.0


@pytest.mark.parametrize(
    "answer, reason",
    [
        (ClassifyResult(("1", "2", "3"), (0.2, 0.3, 0.5)), "parse_failure: the judge answered labels"),
        ([0.0, 0.0, 0.0], "parse_failure: label probab"),
    ],
)
def test_an_unreadable_classify_answer_is_nan_with_its_reason(answer, reason):
    result = run(COMPLETE, classify_judge(answer), EN)
    assert math.isnan(result.score) and result.reason.startswith(reason) and "raw" in result.details


def test_generate_mode_reads_a_json_verdict_and_a_majority_of_sampled_readings():
    answers = iter(['{"reason": "cites [1]", "verdict": 1}', "no json here", '{"reason": "no", "verdict": 0}',
                    '{"reason": "yes", "verdict": "1"}'])  # fmt: skip
    seen: list[GenerateRequest] = []
    judge = ReplayJudge(generate_rule=lambda r: seen.append(r) or next(answers))
    one = run(CITES, judge, EN, judge_mode="generate")
    assert one.score == 1.0 and one.details["reasons"] == ["cites [1]"]
    strict = Criterion(CITES.name, CITES.definition, reads=CITES.reads, strictness=3)
    three = run(strict, judge, EN, judge_mode="generate")
    assert three.score == 0.0 and three.details["verdicts"] == [0, 1]  # a tie of the two read is no
    assert three.details["unread"][0].startswith("parse_failure")
    assert [r.params.seed for r in seen[1:]] == [0, 1, 2] and seen[1].params.temperature > 0


def test_generate_mode_garbage_is_nan_with_its_reason():
    judge = ReplayJudge(generate_rule=lambda r: '{"reason": "fine", "rating": 4}')  # 4 is not a level
    result = run(COMPLETE, judge, EN, judge_mode="generate")
    assert math.isnan(result.score) and result.reason.startswith("parse_failure: rating")
    judge = ReplayJudge(generate_rule=lambda r: '{"reason": "all there", "rating": "5"}')
    assert run(COMPLETE, judge, ZH, "zh", judge_mode="generate").score == 1.0


def test_user_columns_are_shown_under_their_names():
    title = Criterion(
        "names_source", "Does the answer name the source title?", reads=["answer", "source_title"]
    )
    sample = Sample(response="See the manual.", metadata={"source_title": "Kettle manual"})
    (request,) = _requests(title, sample)
    assert '"source_title": "Kettle manual"' in request.messages[0].content


def test_a_user_metric_pickles_and_compares_by_its_settings():
    again = pickle.loads(pickle.dumps(COMPLETE))
    assert again == COMPLETE and again is not COMPLETE and again.prompts[0].labels == ("1", "3", "5")
    assert Criterion(CITES.name, "Another question?", reads=CITES.reads) != CITES


def test_a_criterion_and_a_rubric_on_a_real_tiny_judge(tiny_llama_dir):
    kind = {"question": "Where is Paris?", "answer": "In France, happy to help.", "verdict": "yes"}
    polite = Criterion("polite", "Is the answer courteous?", examples=[kind])
    judge = f"local:{tiny_llama_dir}"
    result = evaluate([EN, ZH], metrics=[polite, COMPLETE], judge=judge, cache_dir=False, progress=False)
    frame = result.to_pandas()
    for name in ("polite", "completeness"):
        assert frame[name].between(0, 1).all(), frame[name]
    assert result.provenance["metrics"]["completeness"]["levels"] == COMPLETE.levels


RECORDED = [
    json.loads(line) for line in (DATA / "recorded_criteria.jsonl").read_text(encoding="utf-8").splitlines()
]
"""What Qwen2.5-Coder-1.5B answered (through the vLLM server, 2026-12-06) to two criteria pairs per
criterion, rubric and language of `benchmarks/data/criteria_pairs_*.jsonl`: each member's p(Yes), or its
rubric's level probabilities, and the score the run gave it."""


def _replayed(answer):
    if "p_yes" in answer:
        return lambda r: [answer["p_yes"] if label == "Yes" else 1 - answer["p_yes"] for label in r.labels]
    return lambda r: [answer["probs"][label] for label in r.labels]


@pytest.mark.parametrize("case", RECORDED, ids=[c["id"] for c in RECORDED])
def test_recorded_judge_answers_score_as_the_run_scored_them(case):
    (metric,) = metric_entries([case["metric"]], case["id"])
    scores = []
    for member in (case["better"], case["worse"]):
        judge = ReplayJudge(classify_rule=_replayed(member["answer"]))
        result = run(metric, judge, Sample(**member["sample"]), case["language"], scoring="expected")
        assert result.score == pytest.approx(member["score"], abs=1e-5)
        assert judge.calls == [("classify", 1)]
        scores.append(result.score)
    assert scores[0] != scores[1]  # real answers tell the members apart, right or wrong


def test_recorded_answers_over_other_labels_are_nan_with_the_reason():
    case = next(c for c in RECORDED if "criterion" in c["metric"] and c["language"] == "zh")
    (metric,) = metric_entries([case["metric"]], case["id"])
    p = case["better"]["answer"]["p_yes"]
    judge = ReplayJudge(classify_rule=lambda r: ClassifyResult(("是", "否"), (p, 1 - p)))
    result = run(metric, judge, Sample(**case["better"]["sample"]), "zh", scoring="expected")
    assert math.isnan(result.score) and "the judge answered labels ('是', '否')" in result.reason
