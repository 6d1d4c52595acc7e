"""A run with a results folder: samples written as they are scored, aggregates kept online, and the result
read back lazily — equal in every figure to the same run kept in memory."""

from __future__ import annotations

import json
import math
import random
import tracemalloc
from pathlib import Path

import pytest

import ascend_eval
from ascend_eval.data import Sample
from ascend_eval.engine import PlanError
from ascend_eval.metrics.base import MetricResult
from ascend_eval.results import EvaluationResult, StoredResult, aggregate
from ascend_eval.results.files import SAMPLES_FILE, write_job_results
from ascend_eval.results.intervals import BOOTSTRAP_LIMIT, mean_interval
from ascend_eval.results.records import ScoredSample
from ascend_eval.results.sink import Collector, FileSink
from ascend_eval.results.tally import MetricTally

METRICS = ["faithfulness", "answer_similarity", "context_recall"]


def rows(n: int) -> list[dict]:
    out = []
    for i in range(n):
        zh = i % 3 == 0
        out.append(
            {
                "question": f"问题{i}是什么？" if zh else f"What is item {i}?",
                "contexts": [f"Item {i} is a thing. It has {i % 7} parts.", "Unrelated text."],
                "answer": f"Item {i} is a thing. It has {i % 5} parts." if i % 4 else "",
                "ground_truth": f"Item {i} is a thing with {i % 7} parts.",
            }
        )
    return out


@pytest.fixture
def data_file(tmp_path: Path) -> Path:
    path = tmp_path / "data.jsonl"
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows(40)), encoding="utf-8")
    return path


def run(data, tmp_path: Path, judge, embedder, **kwargs) -> EvaluationResult:
    return ascend_eval.evaluate(
        str(data), METRICS, judge=judge, embedder=embedder, cache_dir=tmp_path / "cache", progress=False,
        **kwargs,
    )  # fmt: skip


def test_a_run_with_a_folder_equals_the_run_in_memory(data_file, tmp_path, rule_judge, ngram_embedder):
    kept = run(data_file, tmp_path, rule_judge, ngram_embedder)
    stored = run(data_file, tmp_path, rule_judge, ngram_embedder, out=tmp_path / "out")
    assert isinstance(stored, StoredResult) and not isinstance(kept, StoredResult)
    assert stored.aggregates() == kept.aggregates()
    assert stored.intervals() == kept.intervals()
    assert {m: stored.nan_reasons(m) for m in METRICS} == {m: kept.nan_reasons(m) for m in METRICS}
    assert stored.rows(details=True) == kept.rows(details=True)
    assert list(stored.languages) == list(kept.languages) and "zh" in stored.languages
    assert stored.table() == kept.table()
    for m in METRICS:
        assert stored[m] == pytest.approx(kept[m], nan_ok=True)
    # the folder is complete, and reads back as the same run
    out = tmp_path / "out"
    names = {p.name for p in out.iterdir()}
    assert {"results.json", SAMPLES_FILE, "scores.csv", "summary.json", "report.html"} <= names
    reloaded = EvaluationResult.load(out)
    assert isinstance(reloaded, StoredResult) and reloaded.aggregates() == kept.aggregates()
    whole = json.loads((out / "results.json").read_text(encoding="utf-8"))
    assert whole["samples"] == kept.rows(details=True)
    assert whole["aggregate_scores"] == kept.aggregates()
    assert reloaded.results["faithfulness"][3] == kept.results["faithfulness"][3]  # details included
    assert reloaded.samples[5] == Sample(**{**kept.samples[5].model_dump(), "metadata": {}})
    assert reloaded.samples[-1].id == kept.samples[-1].id and len(reloaded.samples) == 40
    assert reloaded.results["faithfulness"][1:3] == list(kept.results["faithfulness"][1:3])
    assert list(reloaded.results["faithfulness"]) == list(kept.results["faithfulness"])
    with pytest.raises(IndexError):
        reloaded.samples[40]


def test_the_samples_file_grows_as_samples_are_scored(tmp_path):
    sink = FileSink(tmp_path, ["m"])
    sample = Sample(id="0", user_input="q")
    for i in range(300):
        sink.add(ScoredSample(i, sample, "en", {"m": MetricResult(0.5)}))
    # flushed every 256 rows: a killed run keeps them (and the request cache keeps the rest)
    assert len((tmp_path / SAMPLES_FILE).read_text(encoding="utf-8").splitlines()) == 256
    sink.close()
    assert len((tmp_path / SAMPLES_FILE).read_text(encoding="utf-8").splitlines()) == 300


def test_the_collector_emits_whole_samples_in_dataset_order():
    emitted: list[ScoredSample] = []
    collect = Collector(["a", "b"], emitted.append)
    samples = [Sample(id=str(i)) for i in range(4)]
    for i, s in enumerate(samples):
        collect.expect(i, s, "en")
    outcomes = [((2, "a"), MetricResult(0.2)), ((1, "b"), MetricResult(0.1)), ((0, "b"), PlanError("x"))]
    outcomes += [((1, "a"), MetricResult(1.0)), ((2, "b"), MetricResult(0.3)), ((0, "a"), MetricResult(0.0))]
    outcomes += [((3, "b"), MetricResult(0.4)), ((3, "a"), MetricResult(0.5))]
    for pid, outcome in outcomes:
        collect.outcome(pid, outcome)
        if pid == (0, "a"):
            assert [e.index for e in emitted] == [0, 1, 2]
    assert [e.index for e in emitted] == [0, 1, 2, 3] and collect.waiting == 0
    assert list(emitted[0].results) == ["a", "b"] and emitted[0].results["b"].reason == "x"


@pytest.mark.parametrize("n", [1, 2, 50, BOOTSTRAP_LIMIT + 50])
def test_an_online_tally_equals_the_whole_list(n):
    rng = random.Random(n)
    scores = [math.nan if rng.random() < 0.1 else rng.choice([0.0, 1.0, rng.random()]) for _ in range(n)]
    tally = MetricTally("m")
    for s in scores:
        tally.add(MetricResult(s, None if s == s else "no_statements"), "en")
    assert tally.aggregate() == aggregate("m", scores)
    expected = mean_interval(scores)
    got = tally.interval()
    assert (got is None) == (expected is None)
    if got is not None:  # the bootstrap exactly; above the limit the normal interval, to rounding
        assert got == pytest.approx(expected, abs=1e-12)
    assert tally.reasons["no_statements"] == sum(s != s for s in scores)


def _peak_of_a_streamed_run(n: int, tmp_path: Path, judge, embedder) -> int:
    data = tmp_path / f"data-{n}.jsonl"
    data.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows(n)), encoding="utf-8")
    tracemalloc.start()
    try:
        result = ascend_eval.evaluate(
            str(data), ["faithfulness", "answer_similarity"], judge=judge, embedder=embedder,
            cache_dir=False, progress=False, out=tmp_path / f"out-{n}",
        )  # fmt: skip
        assert len(result.samples) == n
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def test_a_streamed_runs_memory_does_not_grow_with_its_samples(tmp_path, rule_judge, ngram_embedder):
    _peak_of_a_streamed_run(100, tmp_path, rule_judge, ngram_embedder)  # the imports a first run makes
    small = _peak_of_a_streamed_run(500, tmp_path, rule_judge, ngram_embedder)
    large = _peak_of_a_streamed_run(5000, tmp_path, rule_judge, ngram_embedder)
    # Ten times the samples; what grows is a few bytes per sample (the stored result's score columns
    # and the duplicate-id check), far below a sample's kilobytes.
    assert large < small * 1.5 + 4 * 2**20, (small, large)


@pytest.mark.parametrize("count", [0, 1, 3])
def test_job_results_are_written_row_by_row_as_the_json_they_always_were(tmp_path, count):
    aggregate = {"name": "faithfulness", "count": count, "mean": None, "min": None, "max": None}
    aggregates = [{**aggregate, "nan_count": 0}]
    rows = [{"id": str(i), "user_input": f"问题 {i}", "faithfulness": None} for i in range(count)]
    path = write_job_results(tmp_path / "job_results.json", aggregates, iter(rows))
    text = path.read_text(encoding="utf-8")
    assert json.loads(text) == {"aggregate_scores": aggregates, "rows": rows}
    assert "问题" in text or count == 0  # UTF-8 as written, not escaped
    assert [p.name for p in tmp_path.iterdir()] == ["job_results.json"]  # no temporary file left
