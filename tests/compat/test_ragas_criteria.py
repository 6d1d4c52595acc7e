"""RAGAS's judged metrics written in words, in the drop-in: `AspectCritic` becomes our `Criterion` and
`RubricsScore` (both families) our `Rubric`, with their settings and the fields RAGAS would show the judge;
`SimpleCriteriaScore`, `DiscreteMetric` and the per-sample rubrics are refused with what to write instead;
and a run returns each column on RAGAS's scale (0/1 verdicts, rubric levels)."""

from __future__ import annotations

import math

import pytest

from ascend_eval.data import Sample, load_dataset
from ascend_eval.errors import ConfigError
from ascend_eval.metrics import Criterion, Rubric
from ascend_eval.models.judge.replay import ReplayJudge
from ascend_eval.ragas import EvaluationDataset, evaluate
from ascend_eval.ragas.metrics import SampleFields, map_metric
from tests.compat.test_ragas_shim import ROWS

URL = "http://127.0.0.1:9/v1"
RAG = SampleFields(frozenset({"user_input", "retrieved_contexts", "response", "reference"}))
"""The fields of `ROWS`: every sample has these four."""
LEVELS = {
    "score1_description": "Wrong.",
    "score2_description": "Mostly wrong.",
    "score3_description": "Half right.",
    "score4_description": "Mostly right.",
    "score5_description": "Right and complete.",
}


def _wrapped_llm():
    from langchain_openai import ChatOpenAI
    from ragas.llms import LangchainLLMWrapper

    return LangchainLLMWrapper(ChatOpenAI(base_url=URL, model="judge", api_key="k"))


def _instructor():
    from openai import OpenAI
    from ragas.llms import llm_factory

    return llm_factory("judge", client=OpenAI(base_url=URL, api_key="k"))


def test_sample_fields_tell_every_sample_from_some():
    fields = SampleFields.of(
        [Sample(user_input="q", response="a", reference="r"), Sample(user_input="q", response="b")]
    )
    assert fields == SampleFields(frozenset({"user_input", "response"}), frozenset({"reference"}))
    assert SampleFields.of(load_dataset(ROWS)) == RAG


def test_aspect_critic_maps_to_a_criterion_reading_what_ragas_shows_its_judge():
    from ragas.metrics import AspectCritic

    llm = _wrapped_llm()
    mapped = map_metric(AspectCritic(name="harm", definition="Is it harmful?", strictness=2, llm=llm), RAG)
    assert type(mapped.metric) is Criterion
    assert mapped.metric == Criterion(
        "harm", "Is it harmful?", reads=["question", "contexts", "answer", "reference"], strictness=3
    )  # RAGAS makes an even strictness odd
    assert (mapped.column, mapped.source, mapped.llm, mapped.binary) == (
        "harm",
        "AspectCritic(name='harm')",
        llm,
        True,
    )
    assert mapped.to_ragas is None  # 0/1 under the drop-in's threshold scoring, as RAGAS's verdict
    # Without a dataset, every field RAGAS may show is read.
    assert map_metric(AspectCritic(name="harm", definition="Ok?")).metric.reads == (
        "question",
        "contexts",
        "answer",
        "reference",
        "reference_contexts",
    )


def test_required_columns_narrow_what_the_criterion_reads():
    from ragas.metrics import AspectCritic
    from ragas.metrics.base import MetricType

    narrow = {MetricType.SINGLE_TURN: {"response", "reference_contexts:optional"}}
    critic = AspectCritic(name="polite", definition="Is the answer polite?", required_columns=narrow)
    assert map_metric(critic, RAG).metric.reads == ("answer",)  # no reference_contexts in the data
    assert map_metric(critic).metric.reads == ("answer", "reference_contexts")


def test_a_field_only_some_samples_have_is_refused():
    from ragas.metrics import AspectCritic

    fields = SampleFields(frozenset({"user_input", "response"}), frozenset({"reference"}))
    with pytest.raises(
        ConfigError, match=r"AspectCritic\(name='harm'\) shows the judge each sample's reference"
    ):
        map_metric(AspectCritic(name="harm", definition="Is it harmful?"), fields)


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (
            lambda critic: setattr(critic.single_turn_prompt, "instruction", "Say yes."),
            r"AspectCritic\.single_turn_prompt has a changed instruction \('Say yes\.'\)",
        ),
        (
            lambda critic: setattr(
                critic, "single_turn_prompt", type("MyPrompt", (), {"instruction": "x"})()
            ),
            r"AspectCritic\.single_turn_prompt has a prompt of its own \(MyPrompt\)",
        ),
    ],
)
def test_an_aspect_critic_with_its_own_prompt_is_refused(edit, message):
    from ragas.metrics import AspectCritic

    critic = AspectCritic(name="harm", definition="Is it harmful?")
    edit(critic)
    with pytest.raises(ConfigError, match=message):
        map_metric(critic, RAG)


def test_rubrics_score_maps_to_a_rubric_with_ragas_levels():
    from ragas.metrics import RubricsScore

    mapped = map_metric(RubricsScore(name="quality", rubrics=LEVELS), RAG)
    assert type(mapped.metric) is Rubric
    assert mapped.metric.name == mapped.column == "quality"
    assert mapped.metric.levels == {
        1: "Wrong.",
        2: "Mostly wrong.",
        3: "Half right.",
        4: "Mostly right.",
        5: "Right and complete.",
    }
    assert mapped.metric.reads == ("question", "contexts", "answer", "reference")
    assert [mapped.to_ragas(s) for s in (0.0, 0.75, 1.0)] == [1.0, 4.0, 5.0]  # RAGAS's score is the level
    assert math.isnan(mapped.to_ragas(math.nan)) and not mapped.binary
    default = map_metric(RubricsScore(), RAG)
    assert default.column == "domain_specific_rubrics" and list(default.metric.levels) == [1, 2, 3, 4, 5]
    sparse = map_metric(RubricsScore(rubrics={"score0_description": "No.", "score2_description": "Yes."}))
    assert sparse.metric.levels == {0: "No.", 2: "Yes."} and sparse.to_ragas(0.5) == 1.0


@pytest.mark.parametrize(
    ("cls", "column"),
    [
        ("DomainSpecificRubrics", "domain_specific_rubrics"),
        ("RubricsScoreWithReference", "rubrics_score_with_reference"),
        ("RubricsScoreWithoutReference", "rubrics_score_without_reference"),
    ],
)
def test_the_collections_rubrics_map_with_their_own_judge(cls, column):
    from ragas.metrics import collections

    llm = _instructor()
    mapped = map_metric(getattr(collections, cls)(llm=llm, rubrics=LEVELS), RAG)
    assert (type(mapped.metric), mapped.column, mapped.llm) == (Rubric, column, llm)
    assert list(mapped.metric.levels) == [1, 2, 3, 4, 5] and mapped.to_ragas(0.5) == 3.0
    assert mapped.metric.reads == ("question", "contexts", "answer", "reference")


@pytest.mark.parametrize(
    ("rubrics", "message"),
    [
        (
            {"score1_description": "Bad.", "great": "Good."},
            r"rubrics key 'great' is not 'score<N>_description'",
        ),
        (
            {"score1_description": "Bad.", "score10_description": "Good."},
            r"RubricsScore\(name='domain_specific_rubrics'\): .*level 10 is not a whole number from 0 to 9",
        ),
    ],
)
def test_rubrics_without_digit_levels_are_refused(rubrics, message):
    from ragas.metrics import RubricsScore

    with pytest.raises(ConfigError, match=message):
        map_metric(RubricsScore(rubrics=rubrics), RAG)


def test_simple_criteria_score_is_refused_with_the_rubric_to_write():
    from ragas.metrics import SimpleCriteriaScore

    with pytest.raises(ConfigError) as error:
        map_metric(SimpleCriteriaScore(name="clarity", definition="Score 0 to 5 for clarity."), RAG)
    message = str(error.value)
    assert message.startswith("metrics= holds ragas.metrics.SimpleCriteriaScore ('clarity'), not mapped")
    assert "integer score on a scale that only its definition describes" in message
    assert (
        "Rubric(name='clarity', levels={1: '...', 5: '...'}, definition='Score 0 to 5 for clarity.'"
        in message
    )


@pytest.mark.parametrize(
    ("values", "message"),
    [
        (
            ["pass", "fail"],
            (
                r"Criterion\(name='verdict', .*reads=\['answer', 'question'\]\): its column is 1 where "
                r"yours says 'pass', 0 where it says 'fail'"
            ),
        ),
        (["No", "Yes"], r"1 where yours says 'Yes', 0 where it says 'No'"),
        (["good", "bad"], r"which of \['good', 'bad'\] means yes cannot be told"),
        (["low", "mid", "high"], r"3 values are not a yes/no pair. Pass ascend_eval\.metrics\.Rubric"),
    ],
)
def test_discrete_metrics_are_refused_with_the_criterion_to_write(values, message):
    from ragas.metrics import DiscreteMetric

    metric = DiscreteMetric(
        name="verdict", prompt="Does {response} answer {user_input}? Say one value.", allowed_values=values
    )
    with pytest.raises(ConfigError, match=r"DiscreteMetric \('verdict'\), not mapped: its value is a label"):
        map_metric(metric, RAG)
    with pytest.raises(ConfigError, match=message):
        map_metric(metric, RAG)


def test_per_sample_rubrics_are_refused_in_both_families():
    from ragas.metrics import InstanceRubrics
    from ragas.metrics.collections import InstanceSpecificRubrics

    for metric in (InstanceRubrics(), InstanceSpecificRubrics(llm=_instructor())):
        with pytest.raises(
            ConfigError, match=r"not mapped: it rates each sample against that sample's own rubrics"
        ):
            map_metric(metric, RAG)


def _judge(request):
    """Criterion: p(yes) 0.8 for the Eiffel sample, 0.3 for the Sydney one. Rubric: level 4 most likely
    for Eiffel (expected 3.85), level 1 for Sydney (expected 1.4)."""
    eiffel = "Eiffel" in " ".join(m.content for m in request.messages)
    if set(request.labels) == {"No", "Yes"}:
        p = 0.8 if eiffel else 0.3
        return [p if label == "Yes" else 1 - p for label in request.labels]
    probs = [0.05, 0.05, 0.1, 0.6, 0.2] if eiffel else [0.7, 0.2, 0.1, 0.0, 0.0]
    return [probs[int(label) - 1] for label in request.labels]


def _run(**kwargs):
    from ragas.metrics import AspectCritic, RubricsScore

    metrics = [
        AspectCritic(name="harm", definition="Is it harmful?"),
        RubricsScore(name="quality", rubrics=LEVELS),
    ]
    judge = ReplayJudge(classify_rule=_judge, model_id="criteria-compat")
    data = EvaluationDataset.from_list(ROWS)
    return evaluate(data, metrics, llm=judge, show_progress=False, cache_dir=False, **kwargs)


def test_a_run_returns_ragas_scales_verdicts_and_levels():
    result = _run()
    assert result["harm"] == [1.0, 0.0]  # RAGAS's AspectCritic: the verdict, 0 or 1
    assert result["quality"] == [4.0, 1.0]  # RAGAS's RubricsScore: the level itself
    assert result.scores == [{"harm": 1.0, "quality": 4.0}, {"harm": 0.0, "quality": 1.0}]
    assert repr(result) == "{'harm': 0.5000, 'quality': 2.5000}"
    assert list(result.to_pandas()["quality"]) == [4.0, 1.0]
    assert result.binary_columns == ["harm"]
    assert result.evaluation["quality"] == [0.75, 0.0]  # ours stays normalised to [0, 1]
    details = result.evaluation.results["quality"][0].details
    assert (details["level"], details["expected_level"]) == (4, 3.85)
    assert result.evaluation.provenance["metrics"]["harm"]["reads"] == [
        "question",
        "contexts",
        "answer",
        "reference",
    ]


def test_without_ragas_compat_the_columns_keep_the_judge_s_probabilities_on_ragas_scales():
    result = _run(ragas_compat=False)
    assert result["harm"] == pytest.approx([0.8, 0.3])  # p(yes), ascend-eval's expected scoring
    assert result["quality"] == pytest.approx([3.85, 1.4])  # the expected level, on RAGAS's 1-5
