"""Metric names, aliases and errors."""

from __future__ import annotations

import pytest

from ascend_eval.metrics import (
    ALIASES,
    AnswerSimilarity,
    Faithfulness,
    canonical_name,
    metric_names,
    resolve_metrics,
)
from ascend_eval.models.errors import ConfigError


def test_nemo_and_ragas_aliases():
    assert canonical_name("system/rag-faithfulness") == "faithfulness"
    assert canonical_name("semantic_similarity") == "answer_similarity"
    assert canonical_name(" Faithfulness ") == "faithfulness"


def test_typo_gets_did_you_mean():
    with pytest.raises(ConfigError, match="Did you mean 'faithfulness'"):
        canonical_name("faithfulnes")


RAGAS_METRICS = (
    "answer_correctness", "answer_relevancy", "answer_similarity", "context_precision", "context_recall",
    "context_entity_recall", "context_utilization", "faithfulness", "noise_sensitivity", "nv_accuracy",
    "nv_context_relevance", "nv_response_groundedness",
)  # fmt: skip


def test_all_twelve_ragas_metrics_and_their_nemo_names_resolve():
    assert sorted(metric_names()) == sorted(RAGAS_METRICS)
    for alias, name in ALIASES.items():
        assert canonical_name(alias) == name


def test_noise_sensitivity_modes_by_ragas_result_name():
    relevant, irrelevant = resolve_metrics(
        ["system/rag-noise-sensitivity", "noise_sensitivity(mode=irrelevant)"]
    )
    assert (relevant.name, irrelevant.name) == (
        "noise_sensitivity(mode=relevant)",
        "noise_sensitivity(mode=irrelevant)",
    )


def test_resolve_dedupes_aliases_and_keeps_instances():
    metrics = resolve_metrics(["faithfulness", "system/rag-faithfulness", AnswerSimilarity(threshold=0.5)])
    assert [type(m) for m in metrics] == [Faithfulness, AnswerSimilarity]
    assert metrics[1].params == {"method": "embedding", "threshold": 0.5}
    with pytest.raises(ConfigError):
        resolve_metrics([])
