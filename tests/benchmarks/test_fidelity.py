"""benchmarks/fidelity.py: labelled pairs in, pairwise accuracy per metric out (no model: a rule judge)."""

from __future__ import annotations

import math
import os
from pathlib import Path

import pytest

from benchmarks.fidelity import ZH_PAIRS, accuracy, right, score_pairs, table, wikieval_pairs, zh_pairs


def test_our_chinese_pairs_cover_each_property():
    pairs = zh_pairs(ZH_PAIRS)
    assert len(pairs) == 24 and {p["language"] for p in pairs} == {"zh"}
    for prop in ("faithfulness", "answer_relevance", "context_relevance"):
        assert sum(p["property"] == prop for p in pairs) == 8
    padded = next(p for p in pairs if p["property"] == "context_relevance")
    assert len(padded["worse"]["retrieved_contexts"]) > len(padded["better"]["retrieved_contexts"])


def test_ties_and_nan_count_as_wrong():
    assert right(0.9, 0.1) and not right(0.5, 0.5) and not right(math.nan, 0.1) and not right(0.9, math.nan)


def test_rule_judge_scores_faithfulness_pairs_end_to_end(rule_judge, ngram_embedder):
    pairs = [p for p in zh_pairs(ZH_PAIRS) if p["property"] == "faithfulness"][:3]
    rows = accuracy(score_pairs(pairs, rule_judge, ngram_embedder, False))
    faithfulness = next(r for r in rows if r["metric"] == "faithfulness" and r["source"] == "zh")
    assert faithfulness["pairs"] == 3 and faithfulness["nan"] == 0
    assert "| faithfulness | 3 zh |" in table(rows)


@pytest.mark.skipif(
    "ASCEND_EVAL_WIKIEVAL" not in os.environ, reason="set ASCEND_EVAL_WIKIEVAL=path/WikiEval.csv"
)
def test_wikieval_pairs_are_read_from_the_given_path():
    pairs = wikieval_pairs(Path(os.environ["ASCEND_EVAL_WIKIEVAL"]), rows=2)
    assert len(pairs) == 6
    first = pairs[0]["better"]
    assert not first["user_input"].startswith("Question:") and not first["response"].startswith("Answer:")
    assert pairs[0]["better"]["response"] != pairs[0]["worse"]["response"]  # faithful vs ungrounded
