"""Metric names, aliases and errors."""

from __future__ import annotations

import pytest

from ascend_eval.metrics import AnswerSimilarity, Faithfulness, canonical_name, resolve_metrics
from ascend_eval.models.errors import ConfigError


def test_nemo_and_ragas_aliases():
    assert canonical_name("system/rag-faithfulness") == "faithfulness"
    assert canonical_name("semantic_similarity") == "answer_similarity"
    assert canonical_name(" Faithfulness ") == "faithfulness"


def test_typo_gets_did_you_mean():
    with pytest.raises(ConfigError, match="Did you mean 'faithfulness'"):
        canonical_name("faithfulnes")


def test_known_but_unavailable_metric_says_so():
    with pytest.raises(ConfigError, match="not available in this version"):
        canonical_name("system/rag-context-entity-recall")


def test_resolve_dedupes_aliases_and_keeps_instances():
    metrics = resolve_metrics(["faithfulness", "system/rag-faithfulness", AnswerSimilarity(threshold=0.5)])
    assert [type(m) for m in metrics] == [Faithfulness, AnswerSimilarity]
    assert metrics[1].params == {"method": "embedding", "threshold": 0.5}
    with pytest.raises(ConfigError):
        resolve_metrics([])
