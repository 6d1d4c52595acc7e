"""A judge that floods: 100,000 statements (or entities) for one sample are read for their first
MAX_WRITTEN_ITEMS only, so the sample costs a bounded number of requests, and its details say so."""

from __future__ import annotations

import json

import pytest

import ascend_eval
from ascend_eval.models.base import ClassifyRequest, GenerateRequest
from ascend_eval.models.judge.replay import ReplayJudge
from ascend_eval.prompts.base import MAX_WRITTEN_ITEMS

FLOOD = 100_000
ROW = {
    "user_input": "How long is the Varn river?",
    "retrieved_contexts": ["The Varn river is 212 km long and rises in the Osk hills."],
    "response": "The Varn is 212 km long.",
    "reference": "The Varn river is 212 km long.",
}


class Flood:
    """Writes FLOOD distinct statements or entities for every text; counts the verdicts it is asked."""

    def __init__(self) -> None:
        self.verdicts = 0

    def generate(self, request: GenerateRequest) -> str:
        key = "entities" if request.tag.startswith("entities") else "statements"
        return json.dumps({key: [f"Claim number {i} about the Varn." for i in range(FLOOD)]})

    def classify(self, request: ClassifyRequest) -> list[float]:
        self.verdicts += 1
        return [0.2, 0.8]


def test_a_flood_of_statements_is_read_for_its_first_items_and_the_details_say_so(ngram_embedder, tmp_path):
    flood = Flood()
    result = ascend_eval.evaluate(
        [ROW], ["faithfulness", "context_recall"], judge=ReplayJudge(flood.generate, flood.classify),
        embedder=ngram_embedder, cache_dir=tmp_path, progress=False, calibration="off",
    )  # fmt: skip
    # one verdict per statement kept; the answer's and the reference's lists are the same statements against
    # the same contexts, so their verdicts are asked once
    assert flood.verdicts == MAX_WRITTEN_ITEMS
    for metric in ("faithfulness", "context_recall"):
        [sample] = result.results[metric]
        assert sample.score == pytest.approx(0.8)
        assert len(sample.details["statements"]) == MAX_WRITTEN_ITEMS
        assert (
            sample.details["items_cut"] == f"statements: {FLOOD:,} written; the first 128 of each were judged"
        )


def test_a_flood_of_entities_is_cut_too(ngram_embedder, tmp_path):
    flood = Flood()
    result = ascend_eval.evaluate(
        [ROW], ["context_entity_recall"], judge=ReplayJudge(flood.generate, flood.classify),
        embedder=ngram_embedder, cache_dir=tmp_path, progress=False,
    )  # fmt: skip
    [sample] = result.results["context_entity_recall"]
    assert len(sample.details["reference_entities"]) == MAX_WRITTEN_ITEMS
    assert "reference_entities: 100,000 written" in sample.details["items_cut"]
    assert sample.score == 1.0  # the same first items in both lists
