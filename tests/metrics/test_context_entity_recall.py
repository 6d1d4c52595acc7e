"""context_entity_recall: judge and jieba extractors, default and RAGAS matching, NaN paths, on recorded
judge outputs (data/judge/context_entity_recall.json)."""

from __future__ import annotations

import math

import pytest

from ascend_eval.data import Sample
from ascend_eval.engine import Backends, Engine
from ascend_eval.metrics.base import PlanContext
from ascend_eval.metrics.context_entity_recall import (
    ContextEntityRecall,
    entity_recall,
    ragas_entity_recall,
)
from ascend_eval.models.errors import ConfigError
from ascend_eval.models.judge.replay import ReplayJudge
from tests.recorded_judge import recorded_judge

EN = Sample(
    reference="The Eiffel Tower in Paris was completed in 1889 by Gustave Eiffel's company.",
    retrieved_contexts=("The eiffel tower stands in Paris.", "It opened in 1889."),
)
ZH = Sample(
    reference="故宫位于北京，始建于1406年。",
    retrieved_contexts=("北京的故宫是明清两代的皇宫。", "天安门在北京。"),
)

# What the judge lists for each text: for the English reference a duplicate ("Paris") and one entity
# written in another case than in the contexts ("Eiffel Tower" / "eiffel tower").


def listing_judge(variant=None) -> ReplayJudge:
    return recorded_judge("context_entity_recall", variant=variant)


def run(metric, judge, sample, language="en", **ctx):
    engine = Engine(Backends(judge=judge))
    result = engine.run({0: metric.plan(sample, PlanContext(language, **ctx))})[0]
    return engine, result


def test_pure_scores():
    assert entity_recall(["A", "b"], ["a"]) == 0.5
    assert math.isnan(entity_recall(["。", " "], ["a"]))  # punctuation-only entities have no key
    assert ragas_entity_recall(["A", "b"], ["a"]) == 0.0
    assert ragas_entity_recall([], []) == 0.0


@pytest.mark.parametrize("judge_mode", ["classify", "generate"])
def test_english_default_matches_keys_over_distinct_entities(judge_mode):
    judge = listing_judge()
    engine, result = run(ContextEntityRecall(), judge, EN, judge_mode=judge_mode)
    # distinct reference keys: eiffel tower, paris, 1889, gustave eiffel; found: the first three
    assert result.score == 0.75
    assert result.details["matched"] == ["Eiffel Tower", "Paris", "1889", "Paris"]
    assert judge.calls == [("generate", 2)]  # reference and joined contexts in one round
    assert engine.rounds[0].batches == {"judge.generate[entities@1]": 2}


def test_english_ragas_compat_exact_strings_and_list_length():
    _, result = run(ContextEntityRecall(), listing_judge(), EN, ragas_compat=True)
    assert result.score == pytest.approx(2 / (5 + 1e-8))  # "Paris" and "1889"; 5 listed


@pytest.mark.parametrize("variant", [None, "full-width"])
def test_chinese(variant):
    _, result = run(ContextEntityRecall(), listing_judge(variant), ZH, "zh")
    assert result.score == pytest.approx(2 / 3)
    _, compat = run(ContextEntityRecall(), listing_judge(variant), ZH, "zh", ragas_compat=True)
    assert compat.score == pytest.approx(2 / (3 + 1e-8))


def test_no_reference_entities():
    judge = listing_judge("no-entities")
    _, result = run(ContextEntityRecall(), judge, EN)
    assert math.isnan(result.score) and result.reason == "no_entities"
    _, compat = run(ContextEntityRecall(), judge, EN, ragas_compat=True)
    assert compat.score == 0.0


def test_blank_texts_cost_no_judge_call():
    judge = listing_judge()
    _, result = run(ContextEntityRecall(), judge, EN.model_copy(update={"reference": " "}))
    assert result.reason == "no_entities" and judge.calls == []
    _, result = run(ContextEntityRecall(), judge, EN.model_copy(update={"reference": ""}), ragas_compat=True)
    assert result.score == 0.0 and judge.calls == []
    _, result = run(ContextEntityRecall(), judge, EN.model_copy(update={"retrieved_contexts": ()}))
    assert result.score == 0.0 and judge.calls == [("generate", 1)]


def test_reference_equal_to_contexts_is_extracted_once():
    sample = Sample(reference="Paris, 1889.", retrieved_contexts=("Paris, 1889.",))
    judge = listing_judge()
    engine, result = run(ContextEntityRecall(), judge, sample)
    assert result.score == 1.0 and engine.rounds[0].unique == 1


def test_parse_failure_is_nan_with_raw_text():
    judge = ReplayJudge(generate_rule=lambda r: "Paris, 1889")
    _, result = run(ContextEntityRecall(), judge, EN)
    assert result.reason.startswith("parse_failure") and result.details["raw"] == "Paris, 1889"


def test_extractor_choice():
    assert ContextEntityRecall().roles == frozenset({"judge"})
    assert ContextEntityRecall("jieba").roles == frozenset()
    assert ContextEntityRecall("jieba").params == {"extractor": "jieba"}
    with pytest.raises(ConfigError, match="valid: 'judge', 'jieba'"):
        ContextEntityRecall("spacy")  # type: ignore[arg-type]


@pytest.mark.parametrize("ragas_compat", [False, True])
def test_jieba_needs_no_model(ragas_compat):
    engine = Engine(Backends())  # no judge at all
    covered = Sample(reference="故宫位于北京。", retrieved_contexts=("北京有故宫。", "故宫位于北京。"))
    missed = Sample(reference="故宫位于北京。", retrieved_contexts=("今天天气很好。",))
    ctx = PlanContext("zh", ragas_compat=ragas_compat)
    out = engine.run({i: ContextEntityRecall("jieba").plan(s, ctx) for i, s in enumerate((covered, missed))})
    assert engine.rounds == []
    assert out[0].score == pytest.approx(1.0) and out[1].score == 0.0
    assert out[0].details["reference_entities"]


def test_jieba_english_partial_coverage():
    # The extractor is tested in tests/text; here only the wiring: some reference entities found, not all.
    engine = Engine(Backends())
    sample = Sample(
        reference="The Eiffel Tower in Paris was completed in 1889 by Gustave Eiffel.",
        retrieved_contexts=("The Eiffel Tower stands in Paris.", "It opened in 1889."),
    )
    out = engine.run({0: ContextEntityRecall("jieba").plan(sample, PlanContext("en"))})
    assert 0.0 < out[0].score < 1.0 and out[0].details["matched"]
