"""answer_similarity by embeddings and by cross-encoder."""

from __future__ import annotations

import numpy as np
import pytest

from ascend_eval.data import Sample
from ascend_eval.engine import Backends, Engine
from ascend_eval.metrics import AnswerSimilarity, PlanContext
from ascend_eval.models.errors import ConfigError


def run(metric, sample, **backends):
    return Engine(Backends(**backends)).run({0: metric.plan(sample, PlanContext("en"))})[0]


def test_identical_texts_score_one_and_differ_below(ngram_embedder):
    same = run(
        AnswerSimilarity(),
        Sample(reference="Paris is in France.", response="Paris is in France."),
        embedder=ngram_embedder,
    )
    other = run(
        AnswerSimilarity(),
        Sample(reference="Paris is in France.", response="熊猫吃竹子"),
        embedder=ngram_embedder,
    )
    assert same.score == pytest.approx(1.0, abs=1e-6)
    assert other.score < 0.5


def test_threshold_binarises(ngram_embedder):
    sample = Sample(reference="Paris is in France.", response="Paris is in France!")
    assert run(AnswerSimilarity(threshold=0.5), sample, embedder=ngram_embedder).score == 1.0
    assert run(AnswerSimilarity(threshold=1.01), sample, embedder=ngram_embedder).score == 0.0


def test_empty_texts_become_a_space_like_ragas(ngram_embedder):
    result = run(AnswerSimilarity(), Sample(reference="", response=""), embedder=ngram_embedder)
    assert result.score == pytest.approx(1.0, abs=1e-6)


def test_cross_encoder_method_uses_the_reranker():
    class LengthRatio:
        model_id = "ratio"

        def score(self, pairs):
            return np.array([min(len(a), len(b)) / max(len(a), len(b)) for a, b in pairs], dtype=np.float32)

    metric = AnswerSimilarity(method="cross_encoder")
    assert metric.roles == {"reranker"}
    result = run(metric, Sample(reference="abcd", response="ab"), reranker=LengthRatio())
    assert result.score == pytest.approx(0.5)


def test_bad_method():
    with pytest.raises(ConfigError, match="method="):
        AnswerSimilarity(method="bleu")
