"""answer_relevancy: seeded question generations, query embeddings, noncommittal and NaN rules."""

from __future__ import annotations

import json
import math
from typing import ClassVar

import numpy as np
import pytest

from ascend_eval.data import Sample
from ascend_eval.engine import Backends, Engine
from ascend_eval.metrics import PlanContext
from ascend_eval.metrics.answer_relevancy import AnswerRelevancy
from ascend_eval.metrics.answer_similarity import cosine
from ascend_eval.models.errors import ConfigError
from ascend_eval.models.judge.replay import ReplayJudge
from ascend_eval.prompts.question_generation import RESPONSE_QUESTION
from tests.conftest import sample_input

QUESTIONS = {
    "en": ["Where is the Eiffel Tower?", "In which city is the Eiffel Tower?", "Where is the tower?"],
    "zh": ["长城在哪里？", "长城位于哪个国家？", "长城在什么地方？"],
}


def scripted(questions, noncommittal=(0, 0, 0)):
    """A judge answering generation i (its sampling seed) with questions[i] and noncommittal[i]; a
    question given as None answers unparsable text instead."""

    def rule(request):
        assert request.tag.startswith("response_question@")
        assert "response" in sample_input(request)
        i = request.params.seed
        if questions[i] is None:
            return f"garbage {i}"
        return json.dumps({"question": questions[i], "noncommittal": noncommittal[i]}, ensure_ascii=False)

    return ReplayJudge(generate_rule=rule)


EN = Sample(user_input="Where is the Eiffel Tower located?", response="The Eiffel Tower is in Paris.")
ZH = Sample(user_input="长城在哪里？", response="长城位于中国北方。")


def run(metric, sample, judge, embedder, *, language="en", compat=False):
    engine = Engine(Backends(judge=judge, embedder=embedder))
    return engine.run({0: metric.plan(sample, PlanContext(language, ragas_compat=compat))})[0]


def expected(embedder, user_input, questions):
    vectors = embedder.embed([user_input, *questions], kind="query")
    return float(np.mean([cosine(v, vectors[0]) for v in vectors[1:]]))


@pytest.mark.parametrize("compat", [False, True])
@pytest.mark.parametrize(("sample", "language"), [(EN, "en"), (ZH, "zh")])
def test_mean_cosine_of_seeded_generations(ngram_embedder, compat, sample, language):
    judge = scripted(QUESTIONS[language])
    result = run(AnswerRelevancy(), sample, judge, ngram_embedder, language=language, compat=compat)
    # every text is embedded as a query: the user question in round 1, the written ones in round 2
    assert ngram_embedder.calls == [("query", 1), ("query", 3)]
    # three generations differ only in their seed, so they are three batches of one request each
    assert judge.calls == [("generate", 1)] * 3
    assert result.score == pytest.approx(expected(ngram_embedder, sample.user_input, QUESTIONS[language]))
    assert result.details["questions"] == QUESTIONS[language]


def test_requests_are_sampled_with_distinct_seeds_in_the_sample_language():
    seen = []
    judge = ReplayJudge(lambda r: seen.append(r) or '{"question": "长城在哪里？", "noncommittal": 0}')
    assert run(AnswerRelevancy(strictness=4), ZH, judge, _Table(), language="zh").ok
    assert sorted(r.params.seed for r in seen) == [0, 1, 2, 3]
    assert {r.params.temperature for r in seen} == {0.3}
    assert all(r.messages == seen[0].messages for r in seen)
    assert RESPONSE_QUESTION.instruction["zh"] in seen[0].messages[0].content


def test_strictness_one_is_greedy(ngram_embedder):
    seen = []
    judge = ReplayJudge(lambda r: seen.append(r) or '{"question": "Where is it?", "noncommittal": 0}')
    run(AnswerRelevancy(strictness=1), EN, judge, ngram_embedder)
    assert [r.params.temperature for r in seen] == [0.0]


def test_noncommittal_zeroes_only_when_all_are(ngram_embedder):
    some = run(AnswerRelevancy(), EN, scripted(QUESTIONS["en"], (1, 0, 1)), ngram_embedder)
    assert some.score > 0
    calls_before = len(ngram_embedder.calls)
    every = run(AnswerRelevancy(), EN, scripted(QUESTIONS["en"], (1, 1, 1)), ngram_embedder)
    assert every.score == 0.0
    assert len(ngram_embedder.calls) == calls_before + 1  # default: no need to embed the questions
    compat = run(AnswerRelevancy(), EN, scripted(QUESTIONS["en"], (1, 1, 1)), ngram_embedder, compat=True)
    assert compat.score == 0.0


def test_empty_questions_are_dropped_by_default_and_kept_by_compat(ngram_embedder):
    questions = ["Where is the Eiffel Tower?", "", "In which city is the Eiffel Tower?"]
    default = run(AnswerRelevancy(), EN, scripted(questions), ngram_embedder)
    assert default.score == pytest.approx(
        expected(ngram_embedder, EN.user_input, [questions[0], questions[2]])
    )
    compat = run(AnswerRelevancy(), EN, scripted(questions), ngram_embedder, compat=True)
    assert compat.score == pytest.approx(expected(ngram_embedder, EN.user_input, questions))
    assert compat.score < default.score


def test_all_questions_empty_is_nan(ngram_embedder):
    for compat in (False, True):
        result = run(AnswerRelevancy(), EN, scripted(["", "", ""]), ngram_embedder, compat=compat)
        assert math.isnan(result.score) and result.reason == "no_questions"
    # compat checks for empty questions before the noncommittal flags, as RAGAS does
    compat = run(AnswerRelevancy(), EN, scripted(["", "", ""], (1, 1, 1)), ngram_embedder, compat=True)
    assert compat.reason == "no_questions"


def test_parse_failures(ngram_embedder):
    questions = ["Where is the Eiffel Tower?", None, "In which city is the Eiffel Tower?"]
    default = run(AnswerRelevancy(), EN, scripted(questions), ngram_embedder)
    assert default.score == pytest.approx(
        expected(ngram_embedder, EN.user_input, [questions[0], questions[2]])
    )
    assert default.details["parse_failures"][0].startswith("parse_failure")
    compat = run(AnswerRelevancy(), EN, scripted(questions), ngram_embedder, compat=True)
    assert math.isnan(compat.score) and compat.details["raw"] == "garbage 1"
    none_left = run(AnswerRelevancy(), EN, scripted([None, None, None]), ngram_embedder)
    assert none_left.reason.startswith("parse_failure") and none_left.details["raw"] == "garbage 0"


class _Table:
    """An embedder with hand-set vectors, to reach negative cosines."""

    model_id = "table"
    vectors: ClassVar[dict[str, list[float]]] = {
        "Q?": [1.0, 0.0],
        "Opposite?": [-1.0, 0.2],
        "Same?": [1.0, 0.0],
    }

    def embed(self, texts, *, kind="document"):
        out = np.array([self.vectors.get(t, [0.6, 0.8]) for t in texts], dtype=np.float32)
        return out / np.linalg.norm(out, axis=1, keepdims=True)


def test_negative_cosines_are_clipped_by_default_only():
    sample = Sample(user_input="Q?", response="Something.")
    judge = scripted(["Opposite?", "Same?", "Same?"])
    opposite = cosine(np.array([-1.0, 0.2]), np.array([1.0, 0.0]))
    assert run(AnswerRelevancy(), sample, judge, _Table()).score == pytest.approx(2 / 3)
    compat = run(AnswerRelevancy(), sample, judge, _Table(), compat=True)
    assert compat.score == pytest.approx((opposite + 2) / 3)


def test_blank_inputs(ngram_embedder):
    judge = scripted(QUESTIONS["en"])
    no_answer = run(AnswerRelevancy(), Sample(user_input="Q?", response=" "), judge, ngram_embedder)
    assert no_answer.score == 0.0 and judge.calls == []
    no_question = run(AnswerRelevancy(), Sample(user_input="", response="Paris."), judge, ngram_embedder)
    assert no_question.reason == "empty_user_input" and judge.calls == []
    compat = run(AnswerRelevancy(), Sample(user_input="Q?", response=""), judge, ngram_embedder, compat=True)
    assert compat.ok and len(judge.calls) == 3  # RAGAS asks the judge about an empty response too


@pytest.mark.parametrize("strictness", [0, -1, 2.5, True, "3"])
def test_bad_strictness(strictness):
    with pytest.raises(ConfigError, match="strictness"):
        AnswerRelevancy(strictness=strictness)


def test_roles_and_params():
    metric = AnswerRelevancy(strictness=5)
    assert metric.roles == {"judge", "embedder"} and metric.params == {"strictness": 5}
