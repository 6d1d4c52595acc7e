"""Generation is cached and resumable like an evaluation: a rerun with the same cache asks the models
nothing, and a run stopped by a failing model resumes by sending only what was not answered."""

from __future__ import annotations

import pytest

from ascend_eval.models.errors import BackendError
from ascend_eval.models.judge.replay import ReplayJudge
from ascend_eval.testset import generate
from tests.conftest import NgramEmbedder
from tests.testset.conftest import requests_sent, scripted_judge, verdict_rule, write_rule

CORPUS = "ascend-eval/rag-mini-en"


def run(cache, judge, embedder=None, size=10, **settings):
    embedder = embedder or NgramEmbedder(dim=512)
    return generate(CORPUS, size, judge=judge, embedder=embedder, cache_dir=cache, **settings)


def test_a_second_run_on_the_same_cache_asks_no_model(tmp_path):
    first_judge = scripted_judge()
    first = run(tmp_path / "cache", first_judge, personas=["a harbour master"])
    assert requests_sent(first_judge) > 0
    judge, embedder = scripted_judge(), NgramEmbedder(dim=512)
    again = run(tmp_path / "cache", judge, embedder, personas=["a harbour master"])
    assert again.rows == first.rows
    assert judge.calls == [] and embedder.calls == []  # every request answered from the cache


def recording_judge(asked):
    def write(request):
        asked.append(request)
        return write_rule(request)

    return ReplayJudge(generate_rule=write, classify_rule=verdict_rule, model_id="scripted-testset")


def test_a_bigger_run_on_the_same_cache_sends_only_the_new_candidates(tmp_path):
    before, now = [], []
    small = run(tmp_path / "cache", recording_judge(before), size=4, kinds={"single_hop": 1.0})
    bigger = run(tmp_path / "cache", recording_judge(now), size=8, kinds={"single_hop": 1.0})
    assert bigger.rows[:4] == small.rows  # the same seed takes the same candidates first
    assert before and now and not set(before) & set(now)  # nothing written twice


class Failing:
    """A judge that writes, then fails on the verdicts (a server that went away part way)."""

    model_id = "scripted-testset"  # the same identity as the scripted judge: they share cache entries

    def __init__(self):
        self.inner = ReplayJudge(generate_rule=write_rule, classify_rule=verdict_rule)

    def generate(self, requests):
        return self.inner.generate(requests)

    def classify(self, requests):
        raise RuntimeError("connection reset by peer")


def test_a_run_stopped_by_a_failing_model_resumes_with_only_what_was_not_answered(tmp_path):
    failing = Failing()
    with pytest.raises(BackendError, match="run the same call again to resume"):
        run(tmp_path / "cache", failing, max_tokens=256)
    written = requests_sent(failing.inner)
    assert written > 0  # the written questions are cached
    judge = scripted_judge()
    resumed = run(tmp_path / "cache", judge, max_tokens=256)
    assert resumed.complete
    # The rerun sends the verdicts the failed run never got (two per question), and nothing it had.
    assert judge.calls == [("classify", 2 * written)]
    clean = scripted_judge()
    assert run(False, clean, max_tokens=256).rows == resumed.rows
