"""The criteria and rubric pair set and its accuracy arithmetic (`benchmarks/criteria_fidelity.py`)."""

from __future__ import annotations

import math
from collections import Counter

from ascend_eval.metrics import Criterion, Rubric
from ascend_eval.text.language import detect_language
from benchmarks.criteria_fidelity import accuracy, load_metrics, load_pairs, ragas_metric, shown, with_anchors


def test_the_pair_set_covers_six_criteria_and_six_rubrics_half_in_chinese():
    metrics = load_metrics()
    kinds = Counter(type(m) for m in metrics.values())
    assert kinds == {Criterion: 6, Rubric: 6}
    pairs = load_pairs()
    assert len(pairs) >= 60 and len({p["id"] for p in pairs}) == len(pairs)
    per = Counter((p["metric"], p["language"]) for p in pairs)
    assert set(per) == {(m, lang) for m in metrics for lang in ("en", "zh")} and set(per.values()) == {5}
    definitions = Counter(detect_language(m.definition or next(iter(m.params["levels"].values())))
                          for m in metrics.values())  # fmt: skip
    assert definitions == {"en": 6, "zh": 6}  # a criterion in one language judges samples in the other


def test_the_members_of_a_pair_differ_only_in_the_answer():
    for p in load_pairs():
        better, worse = p["better"], p["worse"]
        assert set(better) == set(worse) == {"user_input", "retrieved_contexts", "response", "reference"}
        assert better["response"] != worse["response"], p["id"]
        assert {k: v for k, v in better.items() if k != "response"} == {
            k: v for k, v in worse.items() if k != "response"
        }, p["id"]


def test_every_metric_has_anchors_apart_from_the_pairs_in_both_languages():
    anchored = with_anchors(load_metrics())
    asked = {p[member]["user_input"] for p in load_pairs() for member in ("better", "worse")}
    for name, metric in anchored.items():
        assert metric.anchors, name
        questions = {fields["question"] for fields, _, _ in metric.anchors}
        assert not questions & asked, name  # an anchor is no pair's sample
        per = Counter((detect_language(fields["question"]), label) for fields, label, _ in metric.anchors)
        wanted = (True, False) if isinstance(metric, Criterion) else (1, 3, 5)
        assert per == {(lang, label): 1 for lang in ("en", "zh") for label in wanted}, name


def test_ragas_gets_the_anchors_as_few_shot_examples():
    anchored = with_anchors(load_metrics())
    for name in ("polite", "completeness"):
        ragas = ragas_metric(anchored[name], llm=None)
        prompt = getattr(ragas, "single_turn_prompt", None) or ragas.single_turn_scoring_prompt
        assert len(prompt.examples) == len(anchored[name].anchors), name
    (example, feedback) = ragas_metric(
        anchored["completeness"], llm=None
    ).single_turn_scoring_prompt.examples[0]
    assert example.reference and feedback.score == 5


def test_each_tool_sees_only_the_fields_the_metric_reads():
    metric = load_metrics()["polite"]
    sample = load_pairs()[0]["better"]
    assert set(shown(sample, metric)) == {"user_input", "response"}


def test_a_tie_or_a_nan_is_wrong_and_counted():
    pairs = [
        {"metric": "m", "language": "en", "ours": {"score": [0.9, 0.1]}},
        {"metric": "m", "language": "en", "ours": {"score": [0.5, 0.5]}},
        {"metric": "m", "language": "zh", "ours": {"score": [math.nan, 0.1]}},
    ]
    rows = {(r["metric"], r["language"]): r for r in accuracy(pairs, "ours", "score")}
    assert (rows["m", "all"]["right"], rows["m", "all"]["ties"], rows["m", "all"]["nan"]) == (1, 1, 1)
    assert rows["m", "en"]["right"] == 1 and rows["all", "zh"]["right"] == 0
