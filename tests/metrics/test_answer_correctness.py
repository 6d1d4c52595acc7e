"""answer_correctness: F-beta over statement verdicts in both judge modes, similarity, edge rules, dedupe, on
recorded judge outputs (data/judge/answer_correctness.json). The judge decides alike in both modes: a
response statement the reference supports is a TP in the one-call classification as well."""

from __future__ import annotations

import math

import numpy as np
import pytest

from ascend_eval.data import Sample
from ascend_eval.engine import Backends, Engine
from ascend_eval.metrics import Faithfulness, PlanContext
from ascend_eval.metrics.answer_correctness import AnswerCorrectness, fbeta_score
from ascend_eval.metrics.answer_similarity import AnswerSimilarity, cosine
from ascend_eval.metrics.context_recall import ContextRecall
from ascend_eval.models.errors import ConfigError
from ascend_eval.models.judge.replay import ReplayJudge
from tests.recorded_judge import recorded_judge

FACT_ONLY = (1.0, 0.0)


@pytest.fixture
def judge() -> ReplayJudge:
    return recorded_judge("answer_correctness")


EN = Sample(
    user_input="Where is the Eiffel Tower and when was it built?",
    response="The Eiffel Tower is in Paris. It was built in 1999.",
    reference="The Eiffel Tower is in Paris. It was completed in 1889.",
)
ZH = Sample(
    user_input="长城在哪里，有多长？",
    response="长城全长两万多公里。长城在日本。",
    reference="长城全长两万多公里。长城位于中国北方。",
)


def run(metric, sample, judge, embedder=None, *, language="en", compat=False, mode="classify"):
    ctx = PlanContext(language, ragas_compat=compat, judge_mode=mode)
    engine = Engine(Backends(judge=judge, embedder=embedder))
    return engine.run({0: metric.plan(sample, ctx)})[0]


def test_fbeta_matches_the_f1_shortcut_and_legacy_edges():
    for tp, fp, fn in [(1, 1, 1), (5, 2, 0), (2, 0, 7)]:
        assert fbeta_score(tp, fp, fn) == pytest.approx(tp / (tp + 0.5 * (fp + fn)))
    assert fbeta_score(0, 0, 0) == 0.0  # legacy: P = R = 0, not 1


@pytest.mark.parametrize("mode", ["classify", "generate"])
@pytest.mark.parametrize("compat", [False, True])
@pytest.mark.parametrize(("sample", "language"), [(EN, "en"), (ZH, "zh")])
def test_one_tp_one_fp_one_fn_in_every_mode(judge, mode, compat, sample, language):
    result = run(AnswerCorrectness(FACT_ONLY), sample, judge, language=language, compat=compat, mode=mode)
    assert result.score == 0.5
    assert (result.details["tp"], result.details["fp"], result.details["fn"]) == (1, 1, 1)
    assert len(result.details["response_statements"]) == 2


def test_a_fenced_classification_scores_the_same():
    fenced = recorded_judge("answer_correctness", variant="code-fenced")
    result = run(AnswerCorrectness(FACT_ONLY), EN, fenced, mode="generate")
    counts = (result.details["tp"], result.details["fp"], result.details["fn"])
    assert result.score == 0.5 and counts == (1, 1, 1)


def test_statements_cut_at_max_tokens_are_nan():
    truncated = recorded_judge("answer_correctness", variant="truncated")
    result = run(AnswerCorrectness(FACT_ONLY), ZH, truncated, language="zh")
    assert result.reason.startswith("truncated") and result.details["step"] == "response statements"


def test_classify_mode_records_probabilities_and_batches_one_round(judge):
    result = run(AnswerCorrectness(FACT_ONLY), EN, judge)
    assert result.details["p_response_supported"] == [0.9, 0.2]
    assert result.details["p_reference_covered"] == [0.9, 0.2]
    # the two statement extractions together, then all four verdicts together
    assert judge.calls == [("generate", 2), ("classify", 4)]


def test_similarity_is_blended_with_the_default_weights(judge, ngram_embedder):
    result = run(AnswerCorrectness(), EN, judge, ngram_embedder)
    vectors = ngram_embedder.embed([EN.reference, EN.response])
    similarity = cosine(vectors[0], vectors[1])
    assert result.details["similarity"] == pytest.approx(similarity)
    assert result.score == pytest.approx(0.75 * 0.5 + 0.25 * similarity)


def test_similarity_weight_zero_needs_no_embedder(judge):
    metric = AnswerCorrectness(weights=(1, 0))
    assert metric.roles == {"judge"}
    assert run(metric, EN, judge).score == 0.5  # no embedder configured: any embed request would fail


def test_beta_weighs_recall(judge):
    sample = Sample(user_input="Q?", response="A holds.", reference="A holds. B holds. C holds.")
    result = run(AnswerCorrectness(FACT_ONLY, beta=2.0), sample, judge)
    assert result.score == pytest.approx(fbeta_score(1, 0, 2, 2.0))


def test_both_texts_empty_is_factuality_one_without_classifier(judge, ngram_embedder):
    blank = Sample(user_input="Q?", response="", reference="")
    result = run(AnswerCorrectness(), blank, judge, ngram_embedder)
    assert result.score == pytest.approx(1.0, abs=1e-6) and judge.calls == []
    compat = recorded_judge("answer_correctness")
    result = run(AnswerCorrectness(), blank, compat, ngram_embedder, compat=True)
    assert result.details["factuality"] == 1.0
    # RAGAS still asks for the statements of both empty texts: two identical requests, sent once
    assert compat.calls == [("generate", 1)]


@pytest.mark.parametrize("mode", ["classify", "generate"])
def test_response_without_statements(mode):
    sample = Sample(user_input="Q?", response="   ", reference="A holds. B holds.")
    default = recorded_judge("answer_correctness")
    result = run(AnswerCorrectness(FACT_ONLY), sample, default, mode=mode)
    assert result.score == 0.0 and default.calls == [("generate", 1)]
    # compat runs the classifier as legacy RAGAS does; every reference statement is then missed
    compat = recorded_judge("answer_correctness")
    result = run(AnswerCorrectness(FACT_ONLY), sample, compat, mode=mode, compat=True)
    assert result.score == 0.0 and result.details["fn"] == 2
    assert len(compat.calls) == 2


def test_empty_classification_lists():
    judge = recorded_judge("answer_correctness", variant="no-classifications")
    result = run(AnswerCorrectness(FACT_ONLY), EN, judge, mode="generate")
    assert math.isnan(result.score) and result.reason == "no_classifications"
    assert run(AnswerCorrectness(FACT_ONLY), EN, judge, mode="generate", compat=True).score == 0.0


def test_parse_failures_keep_the_raw_text():
    garbage = ReplayJudge(lambda r: "no idea")  # the same text to every request
    result = run(AnswerCorrectness(FACT_ONLY), EN, garbage)
    assert result.reason.startswith("parse_failure") and result.details["raw"] == "no idea"
    broken = recorded_judge("answer_correctness", variant="prose-verdicts")
    result = run(AnswerCorrectness(FACT_ONLY), ZH, broken, language="zh", mode="generate")
    assert math.isnan(result.score)
    assert result.details["raw"] == "TP：长城全长两万多公里。FP：长城在日本。FN：长城位于中国北方。"


@pytest.mark.parametrize(
    "kwargs",
    [
        {"weights": (1.0,)},
        {"weights": (-0.5, 1.0)},
        {"weights": (0, 0)},
        {"weights": (float("nan"), 1.0)},
        {"weights": "ab"},
        {"beta": 0},
        {"beta": "1"},
        {"beta": True},
        {"beta": float("inf")},
    ],
)
def test_bad_settings(kwargs):
    with pytest.raises(ConfigError, match="answer_correctness"):
        AnswerCorrectness(**kwargs)


def test_params_are_recorded():
    assert AnswerCorrectness(weights=[1, 1], beta=2).params == {"weights": [1.0, 1.0], "beta": 2.0}


def test_shared_requests_are_deduplicated_across_metrics(judge, ngram_embedder):
    """answer_correctness asks for the statements faithfulness (response) and context_recall (reference)
    ask for, and the embeddings answer_similarity asks for: each is sent once."""
    data = [
        Sample(
            user_input=f"Question {i}?",
            response=f"Fact {i} holds. Claim {i} is invented.",
            reference=f"Fact {i} holds. Detail {i} matters.",
            retrieved_contexts=(f"Fact {i} holds here.", f"Detail {i} matters a lot."),
        )
        for i in range(3)
    ]
    metrics = [AnswerCorrectness(), Faithfulness(), ContextRecall(), AnswerSimilarity()]
    engine = Engine(Backends(judge=judge, embedder=ngram_embedder))
    out = engine.run({(i, m.name): m.plan(s, PlanContext("en")) for i, s in enumerate(data) for m in metrics})
    first = engine.rounds[0]
    # per sample: correctness 2 statements + 2 embeddings, faithfulness 1, recall 1, similarity 2
    assert (first.requests, first.unique) == (24, 12)
    assert sum(r.unique for r in engine.rounds) < sum(r.requests for r in engine.rounds)
    assert judge.calls[0] == ("generate", 6)
    sims = [out[(i, "answer_similarity")].score for i in range(3)]
    assert [out[(i, "answer_correctness")].details["similarity"] for i in range(3)] == sims
    assert all(np.isfinite(out[(i, m.name)].score) for i in range(3) for m in metrics)
