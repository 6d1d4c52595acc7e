"""answer_relevancy: seeded question generations, query embeddings, noncommittal and NaN rules, and the
coverage verdict that weights the score, on recorded judge outputs (data/judge/answer_relevancy.json:
generation i is the request with sampling seed i)."""

from __future__ import annotations

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
from tests.recorded_judge import recorded_judge

# The questions the judge wrote for EN and ZH, generations 0, 1 and 2.
QUESTIONS = {
    "en": ["Where is the Eiffel Tower?", "In which city is the Eiffel Tower?", "Where is the tower?"],
    "zh": ["长城在哪里？", "长城位于哪个国家？", "长城在什么地方？"],
}


def scripted(variant=None) -> ReplayJudge:
    return recorded_judge("answer_relevancy", variant=variant)


EN = Sample(user_input="Where is the Eiffel Tower located?", response="The Eiffel Tower is in Paris.")
ZH = Sample(user_input="长城在哪里？", response="长城位于中国北方。")


def run(metric, sample, judge, embedder, *, language="en", compat=False, **how):
    engine = Engine(Backends(judge=judge, embedder=embedder))
    return engine.run({0: metric.plan(sample, PlanContext(language, ragas_compat=compat, **how))})[0]


def expected(embedder, user_input, questions):
    vectors = embedder.embed([user_input, *questions], kind="query")
    return float(np.mean([cosine(v, vectors[0]) for v in vectors[1:]]))


@pytest.mark.parametrize("compat", [False, True])
@pytest.mark.parametrize(("sample", "language"), [(EN, "en"), (ZH, "zh")])
def test_mean_cosine_of_seeded_generations(ngram_embedder, compat, sample, language):
    judge = scripted()
    result = run(AnswerRelevancy(), sample, judge, ngram_embedder, language=language, compat=compat)
    # every text is embedded as a query: the user question in round 1, the written ones in round 2, except
    # a written question equal to the user's (zh), which the engine answers from round 1's embedding
    written = len(set(QUESTIONS[language]) - {sample.user_input})
    assert ngram_embedder.calls == [("query", 1), ("query", written)]
    # three generations differ only in their seed, so they are three batches of one request each; the
    # coverage verdict is one classify request, left out under ragas_compat
    assert sorted(judge.calls) == [("classify", 1)] * (not compat) + [("generate", 1)] * 3
    assert result.score == pytest.approx(expected(ngram_embedder, sample.user_input, QUESTIONS[language]))
    assert result.details["questions"] == QUESTIONS[language]


def test_requests_are_sampled_with_distinct_seeds_in_the_sample_language():
    seen = []
    judge = ReplayJudge(lambda r: seen.append(r) or '{"question": "长城在哪里？", "noncommittal": 0}')
    assert run(AnswerRelevancy(strictness=4, coverage=False), ZH, judge, _Table(), language="zh").ok
    assert sorted(r.params.seed for r in seen) == [0, 1, 2, 3]
    assert {r.params.temperature for r in seen} == {0.3}
    assert all(r.messages == seen[0].messages for r in seen)
    assert RESPONSE_QUESTION.instruction["zh"] in seen[0].messages[0].content


def test_strictness_one_is_greedy(ngram_embedder):
    seen = []
    judge = ReplayJudge(lambda r: seen.append(r) or '{"question": "Where is it?", "noncommittal": 0}')
    run(AnswerRelevancy(strictness=1, coverage=False), EN, judge, ngram_embedder)
    assert [r.params.temperature for r in seen] == [0.0]


def test_a_fenced_question_reads_the_same(ngram_embedder):
    result = run(AnswerRelevancy(), ZH, scripted("code-fenced"), ngram_embedder, language="zh")
    assert result.score == pytest.approx(expected(ngram_embedder, ZH.user_input, QUESTIONS["zh"]))


def test_noncommittal_zeroes_only_when_all_are(ngram_embedder):
    some = run(AnswerRelevancy(), EN, scripted("noncommittal-some"), ngram_embedder)  # flags 1, 0, 1
    assert some.score > 0
    calls_before = len(ngram_embedder.calls)
    every = run(AnswerRelevancy(), EN, scripted("noncommittal-all"), ngram_embedder)
    assert every.score == 0.0
    assert len(ngram_embedder.calls) == calls_before + 1  # default: no need to embed the questions
    compat = run(AnswerRelevancy(), EN, scripted("noncommittal-all"), ngram_embedder, compat=True)
    assert compat.score == 0.0


def test_empty_questions_are_dropped_by_default_and_kept_by_compat(ngram_embedder):
    questions = [QUESTIONS["en"][0], "", QUESTIONS["en"][2]]  # generation 1 wrote an empty question
    default = run(AnswerRelevancy(), EN, scripted("empty-question"), ngram_embedder)
    assert default.score == pytest.approx(
        expected(ngram_embedder, EN.user_input, [questions[0], questions[2]])
    )
    compat = run(AnswerRelevancy(), EN, scripted("empty-question"), ngram_embedder, compat=True)
    assert compat.score == pytest.approx(expected(ngram_embedder, EN.user_input, questions))
    assert compat.score < default.score


def test_all_questions_empty_is_nan(ngram_embedder):
    for compat in (False, True):
        result = run(AnswerRelevancy(), EN, scripted("no-questions"), ngram_embedder, compat=compat)
        assert math.isnan(result.score) and result.reason == "no_questions"
    # compat checks for empty questions before the noncommittal flags, as RAGAS does
    compat = run(AnswerRelevancy(), EN, scripted("no-questions-noncommittal"), ngram_embedder, compat=True)
    assert compat.reason == "no_questions"


def test_parse_failures(ngram_embedder):
    questions = QUESTIONS["en"]  # generation 1 is unparsable
    default = run(AnswerRelevancy(), EN, scripted("unparsable-seed-1"), ngram_embedder)
    assert default.score == pytest.approx(
        expected(ngram_embedder, EN.user_input, [questions[0], questions[2]])
    )
    assert default.details["parse_failures"][0].startswith("parse_failure")
    compat = run(AnswerRelevancy(), EN, scripted("unparsable-seed-1"), ngram_embedder, compat=True)
    assert math.isnan(compat.score)
    assert compat.details["raw"] == "Question: In which city is the Eiffel Tower?"
    none_left = run(AnswerRelevancy(), EN, scripted("unparsable"), ngram_embedder)
    assert none_left.reason.startswith("parse_failure")
    assert none_left.details["raw"] == "The response answers where the tower is (1)."


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
    judge = scripted()  # questions "Opposite?", "Same?", "Same?"
    opposite = cosine(np.array([-1.0, 0.2]), np.array([1.0, 0.0]))
    assert run(AnswerRelevancy(), sample, judge, _Table()).score == pytest.approx(2 / 3)
    compat = run(AnswerRelevancy(), sample, judge, _Table(), compat=True)
    assert compat.score == pytest.approx((opposite + 2) / 3)


def test_blank_inputs(ngram_embedder):
    judge = scripted()
    no_answer = run(AnswerRelevancy(), Sample(user_input="Q?", response=" "), judge, ngram_embedder)
    assert no_answer.score == 0.0 and judge.calls == []
    no_question = run(AnswerRelevancy(), Sample(user_input="", response="Paris."), judge, ngram_embedder)
    assert no_question.reason == "empty_user_input" and judge.calls == []
    compat = run(AnswerRelevancy(), Sample(user_input="Q?", response=""), judge, ngram_embedder, compat=True)
    # RAGAS asks the judge about an empty response too; compat asks no coverage verdict
    assert compat.ok and len(judge.calls) == 3


@pytest.mark.parametrize("strictness", [0, -1, 2.5, True, "3"])
def test_bad_strictness(strictness):
    with pytest.raises(ConfigError, match="strictness"):
        AnswerRelevancy(strictness=strictness)


@pytest.mark.parametrize("coverage", [1, None, "yes"])
def test_bad_coverage(coverage):
    with pytest.raises(ConfigError, match="coverage"):
        AnswerRelevancy(coverage=coverage)


def test_roles_and_params():
    metric = AnswerRelevancy(strictness=5)
    assert metric.roles == {"judge", "embedder"} and metric.params == {"strictness": 5, "coverage": True}
    assert AnswerRelevancy(coverage=False).params == {"strictness": 3, "coverage": False}


@pytest.mark.parametrize(("sample", "language", "p"), [(EN, "en", 0.8), (ZH, "zh", 0.7)])
def test_the_coverage_verdict_weights_the_score(ngram_embedder, sample, language, p):
    cosine_only = expected(ngram_embedder, sample.user_input, QUESTIONS[language])
    threshold = run(AnswerRelevancy(), sample, scripted(), ngram_embedder, language=language)
    assert threshold.score == pytest.approx(cosine_only)  # the verdict holds: weight 1
    assert threshold.details["answers_question"] == 1 and threshold.details["p_answers"] == p
    scored = run(AnswerRelevancy(), sample, scripted(), ngram_embedder, language=language, scoring="expected")
    assert scored.score == pytest.approx(cosine_only * p)
    off = run(AnswerRelevancy(coverage=False), sample, scripted(), ngram_embedder, language=language)
    assert off.score == pytest.approx(cosine_only) and "answers_question" not in off.details


def test_a_partial_answer_is_weighted_down(ngram_embedder):
    cosine_only = expected(ngram_embedder, EN.user_input, QUESTIONS["en"])
    judge = scripted("partial")  # p(answers every part) = 0.25
    calls_before = len(ngram_embedder.calls)
    assert run(AnswerRelevancy(), EN, judge, ngram_embedder).score == 0.0
    assert len(ngram_embedder.calls) == calls_before + 1  # a zero weight needs no question embeddings
    expected_score = run(AnswerRelevancy(), EN, judge, ngram_embedder, scoring="expected").score
    assert expected_score == pytest.approx(cosine_only * 0.25)
    # ragas_compat leaves the verdict out: the cosine alone, as RAGAS scores it
    compat = scripted("partial")
    assert run(AnswerRelevancy(), EN, compat, ngram_embedder, compat=True).score == pytest.approx(cosine_only)
    assert ("classify", 1) not in compat.calls


def test_generate_mode_asks_the_verdict_as_json(ngram_embedder):
    cosine_only = expected(ngram_embedder, EN.user_input, QUESTIONS["en"])
    judge = scripted()
    whole = run(AnswerRelevancy(), EN, judge, ngram_embedder, judge_mode="generate")
    assert whole.score == pytest.approx(cosine_only) and whole.details["answers_question"] == 1
    assert whole.details["coverage_reason"].startswith("It says where the tower is")
    assert ("classify", 1) not in judge.calls
    partial = run(AnswerRelevancy(), EN, scripted("partial"), ngram_embedder, judge_mode="generate")
    assert partial.score == 0.0 and partial.details["answers_question"] == 0
    zh_judge = scripted("full-width")
    zh = run(AnswerRelevancy(), ZH, zh_judge, ngram_embedder, language="zh", judge_mode="generate")
    assert zh.score == pytest.approx(expected(ngram_embedder, ZH.user_input, QUESTIONS["zh"]))


@pytest.mark.parametrize(("variant", "judge_mode"), [("wrong-labels", "classify"), ("truncated", "generate")])
def test_an_unreadable_coverage_verdict_is_nan_with_its_reason(ngram_embedder, variant, judge_mode):
    result = run(AnswerRelevancy(), EN, scripted(variant), ngram_embedder, judge_mode=judge_mode)
    assert math.isnan(result.score) and result.details["verdict"] == "answers_question"
    assert result.reason.startswith("truncated" if variant == "truncated" else "parse_failure")


def test_the_coverage_verdict_is_calibrated_on_its_own_anchors(ngram_embedder):
    from ascend_eval.prompts.answer_coverage import ANSWERS_QUESTION

    seen = []
    complete = [yes.response for yes, _ in ANSWERS_QUESTION.anchors["en"]]

    def rule(request):  # p(answers) 0.7 on the anchors' complete answers, 0.3 on their partial ones
        seen.append(request)
        return [0.3, 0.7] if any(r in request.messages[-1].content for r in complete) else [0.7, 0.3]

    recorded = scripted().recorded
    judge = ReplayJudge(recorded=recorded, classify_rule=rule)
    result = run(AnswerRelevancy(), EN, judge, ngram_embedder, calibration="anchored", scoring="expected")
    anchors = ANSWERS_QUESTION.calibration_requests("anchored", "en", False)
    assert len(seen) == len(anchors) == 6
    assert result.details["calibration"]["method"] == "anchored"
    # threshold at the anchors' midpoint (p 0.5), scale so that the complete anchors read 0.9
    logit = lambda q: math.log(q / (1 - q))  # noqa: E731
    moved = 1 / (1 + math.exp(-logit(0.8) * logit(0.9) / logit(0.7)))
    assert result.details["p_answers"] == pytest.approx(moved, abs=1e-6)
    cosine_only = expected(ngram_embedder, EN.user_input, QUESTIONS["en"])
    assert result.score == pytest.approx(cosine_only * result.details["p_answers"], abs=1e-6)
