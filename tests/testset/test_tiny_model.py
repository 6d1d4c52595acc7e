"""`generate` on a real (random-weight, 2-layer) local judge: the requests go through the transformers
runtime, shapes and plumbing hold, and what such a judge writes, mostly unreadable, drops candidates with
their reasons instead of ending the run."""

from __future__ import annotations

import pytest

from ascend_eval.testset import DROP_REASONS, generate
from tests.conftest import NgramEmbedder
from tests.testset.conftest import write_rule

TEXTS = [
    "Kelwick harbour was dredged in 1931 so that larger trawlers could land their catch there.",
    "Brannock Mill ground barley with a waterwheel until electric motors came in 1948.",
    "青川镇的茶园分布在海拔八百米以上的山坡上，明前茶价格最高。",
]


def test_a_tiny_local_judge_drops_what_it_cannot_write(tiny_llama_dir):
    result = generate(
        TEXTS,
        2,
        judge=f"local:{tiny_llama_dir}",
        embedder=NgramEmbedder(dim=512),
        device="cpu",
        chunk_size=100,
        max_tokens=24,
        cache_dir=False,
    )
    tried = sum(result.tried.values())
    assert tried == sum(result.available.values()) or result.complete
    assert len(result) + sum(result.drops.values()) == tried  # every candidate accounted for
    assert set(result.drops) <= set(DROP_REASONS)
    for row in result.rows:
        assert row["question"] and row["ground_truth"] and row["language"] in ("en", "zh")
    assert "unreadable_question" not in result.drops or "unreadable_question" in result.summary()


class ScriptedWriterTinyVerdicts:
    """Questions written by the scripted rule, verdicts from the real tiny model's next-token probabilities:
    the classify path (labels "Yes" / "No", both templates) through the transformers runtime."""

    def __init__(self, runtime):
        self.runtime = runtime
        self.model_id = f"scripted+{runtime.model_id}"
        self.classified = 0

    def generate(self, requests):
        from ascend_eval.models.base import GenerateResult

        return [GenerateResult(write_rule(r), "stop") for r in requests]

    def classify(self, requests):
        self.classified += len(requests)
        return self.runtime.classify(requests)


def test_the_verdicts_on_a_tiny_local_judge(tiny_llama_dir):
    pytest.importorskip("torch")
    from ascend_eval.models.judge.torch import TorchJudge, TorchJudgeConfig

    judge = ScriptedWriterTinyVerdicts(TorchJudge(TorchJudgeConfig(model=tiny_llama_dir, device="cpu")))
    result = generate(
        TEXTS,
        3,
        kinds={"single_hop": 1.0},
        judge=judge,
        embedder=NgramEmbedder(),
        chunk_size=100,
        cache_dir=False,
    )
    assert judge.classified == 2 * sum(result.tried.values())  # both verdicts of every written question
    assert set(result.drops) <= {"not_standalone", "not_answerable"}  # random, but readable, probabilities
    assert len(result) + sum(result.drops.values()) == sum(result.tried.values())
