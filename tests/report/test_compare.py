"""compare_runs on two real runs of the bundled example, scored by two rule judges that disagree in
known ways, checked against the runs' own files: a direct bootstrap of the paired differences read from
scores.csv, and up/down counts counted from them."""

from __future__ import annotations

import csv
import json
import math
from pathlib import Path

import numpy as np
import pytest

import ascend_eval
from ascend_eval.data import Sample
from ascend_eval.metrics.base import MetricResult
from ascend_eval.models.errors import ConfigError
from ascend_eval.models.judge.replay import ReplayJudge
from ascend_eval.report.compare import compare_runs
from ascend_eval.results import EvaluationResult
from tests.conftest import NgramEmbedder, sample_input, statements_rule
from tests.results.test_intervals import direct_interval

METRICS = ["faithfulness", "context_precision", "context_utilization", "answer_similarity"]


def overlap(claim: str, context: str) -> float:
    """Share of the claim's character trigrams found in the context (works for Chinese and English)."""
    claim, context = claim.lower(), context.lower()
    grams = {claim[i : i + 3] for i in range(max(1, len(claim) - 2))}
    return sum(g in context for g in grams) / len(grams)


def rule_judge(model_id: str, *, statement: float, context: float, broken: str | None = None) -> ReplayJudge:
    """Supported / useful (p = 0.9) when enough of the claim (a statement; the answer, for a context's
    usefulness) occurs in the context; `statement` and `context` are those thresholds. Statement
    extraction of an answer containing `broken` returns text that is not JSON: that sample is NaN."""

    def generate(request):
        if broken and broken in sample_input(request)["answer"]:
            return "sorry, no JSON today"
        return statements_rule(request)

    def classify(request):
        data = sample_input(request)
        if "statement" in data:
            p = 0.9 if overlap(data["statement"], data["context"]) >= statement else 0.1
        else:
            p = 0.9 if overlap(data["answer"], data["context"]) >= context else 0.1
        return [1 - p, p]

    return ReplayJudge(generate_rule=generate, classify_rule=classify, model_id=model_id)


@pytest.fixture(scope="module")
def runs(tmp_path_factory) -> tuple[Path, Path]:
    """Run A: a lenient judge. Run B: stricter on statements (faithfulness can only fall), more lenient
    on contexts (context metrics can only rise), and unable to read the Mars sample's statements. Both
    share the embedder, so answer_similarity is the same in both."""
    root = tmp_path_factory.mktemp("runs")
    judges = {
        "a": rule_judge("rules-lenient", statement=0.4, context=0.4),
        "b": rule_judge("rules-strict", statement=0.7, context=0.2, broken="Mars"),
    }
    for name, judge in judges.items():
        result = ascend_eval.evaluate(
            "bilingual-example",
            METRICS,
            judge=judge,
            embedder=NgramEmbedder(),
            cache_dir=False,
            progress=False,
            # the rules' verdicts as they are: calibration would read run B's lenient contexts back
            # toward run A's, and the directions asserted below are those of the rules themselves
            calibration="off",
            scoring="threshold",
        )
        result.save(root / name)
    return root / "a", root / "b"


def read_scores(folder: Path) -> dict[str, dict[str, str]]:
    with (folder / "scores.csv").open(encoding="utf-8-sig", newline="") as f:
        return {row["id"]: row for row in csv.DictReader(f)}


def paired_from_files(a: Path, b: Path, metric: str) -> list[float]:
    """B - A per shared sample, from the two scores.csv files; an empty cell (NaN) leaves the pair out."""
    rows_a, rows_b = read_scores(a), read_scores(b)
    return [
        float(rows_b[i][metric]) - float(rows_a[i][metric])
        for i in rows_a
        if i in rows_b and rows_a[i][metric] != "" and rows_b[i][metric] != ""
    ]


def test_each_metrics_interval_agrees_with_a_direct_bootstrap_of_the_files(runs):
    comparison = compare_runs(*runs)
    assert [m.name for m in comparison.metrics] == METRICS
    for metric in METRICS:
        got = comparison.metric(metric)
        differences = paired_from_files(*runs, metric)
        assert got.n == len(differences)
        assert got.difference == pytest.approx(float(np.mean(differences)), abs=1e-12)
        assert got.mean_b - got.mean_a == pytest.approx(got.difference, abs=1e-12)
        if np.ptp(differences) == 0:
            assert got.interval == (differences[0], differences[0])
            continue
        (low, high), spread = direct_interval(differences)
        # Monte Carlo error (see test_bootstrap.close_to_direct), and these means live on a lattice: the
        # differences are multiples of a small step, so a quantile can land one lattice point over.
        step = min(abs(x - y) for x in differences for y in differences if abs(x - y) > 1e-9)
        tolerance = max(0.15 * spread, step / len(differences) + 1e-12)
        assert abs(got.interval[0] - low) <= tolerance, (metric, got.interval, (low, high))
        assert abs(got.interval[1] - high) <= tolerance, (metric, got.interval, (low, high))
        assert got.excludes_zero == (got.interval[0] > 0 or got.interval[1] < 0)


def test_up_and_down_counts_match_a_count_of_the_files(runs):
    comparison = compare_runs(*runs)
    for metric in METRICS:
        differences = paired_from_files(*runs, metric)
        got = comparison.metric(metric)
        assert (got.up, got.down, got.unchanged) == (
            sum(d > 1e-9 for d in differences),
            sum(d < -1e-9 for d in differences),
            sum(abs(d) <= 1e-9 for d in differences),
        )
    # What the two judges' rules imply, whatever the numbers:
    faithfulness = comparison.metric("faithfulness")
    assert faithfulness.up == 0 and faithfulness.down > 0  # a stricter statement judge
    # the two Mars samples (a good row and its flawed twin, with the same answer) are NaN in run B
    assert faithfulness.n == 14 and faithfulness.left_out == 2
    assert len(faithfulness.unscored) == 2
    for unscored in faithfulness.unscored:
        assert "Mars" in unscored.question and unscored.why_b.startswith("NaN: ")
        assert math.isnan(unscored.score_b)
    assert comparison.metric("context_precision").down == 0 < comparison.metric("context_precision").up
    similarity = comparison.metric("answer_similarity")  # one embedder: nothing moves
    assert (similarity.up, similarity.down, similarity.unchanged) == (0, 0, 16)
    assert similarity.interval == (0.0, 0.0) and not similarity.excludes_zero and not similarity.movers


def test_movers_are_the_largest_changes_with_why(runs):
    comparison = compare_runs(*runs, top=3)
    faithfulness = comparison.metric("faithfulness")
    changes = [abs(m.change) for m in faithfulness.movers]
    assert len(changes) == 3 and changes == sorted(changes, reverse=True)
    assert changes[0] == max(abs(d) for d in paired_from_files(*runs, "faithfulness"))
    for m in faithfulness.movers:
        assert "statements supported" in m.why_a and "statements supported" in m.why_b
    assert all("contexts useful" in m.why_b for m in comparison.metric("context_precision").movers)
    assert compare_runs(*runs, top=0).metric("faithfulness").movers == ()


def test_the_header_names_what_differs_between_the_runs(runs):
    comparison = compare_runs(*runs)
    assert comparison.differences == ("judge: rules-lenient -> rules-strict",)
    assert ("embedder", "ngram-64", "ngram-64") in comparison.header
    assert comparison.shared == 16 and comparison.only_a == comparison.only_b == ()
    assert comparison.label_a == str(runs[0])


def test_markdown_html_and_dict_show_every_metric(runs):
    comparison = compare_runs(*runs)
    markdown, page = comparison.to_markdown(), comparison.to_html()
    for metric in METRICS:
        assert f"| {metric} |" in markdown and f"<td>{metric}</td>" in page
    assert "rules-lenient -> rules-strict" in markdown and "CI excludes 0" in markdown
    assert "Left out, NaN in a run: 2 samples:" in markdown
    assert "<script" not in page and "http" not in page and "<style>" in page
    data = json.loads(json.dumps(comparison.to_dict(), allow_nan=False))
    assert data["metrics"][0]["interval"] == list(comparison.metric("faithfulness").interval)
    assert data == compare_runs(*runs).to_dict()  # seeded: the same on every call


def result(ids, scores, *, question="q?"):
    samples = [Sample(user_input=question, response="a", retrieved_contexts=("c",), id=i) for i in ids]
    return EvaluationResult(
        samples=samples,
        results={metric: [MetricResult(s) for s in values] for metric, values in scores.items()},
        languages=["en"] * len(ids),
    )


def test_runs_that_share_only_some_samples_are_compared_on_those():
    a = result(["1", "2", "3", "4"], {"m": [0.1, 0.2, 0.3, 0.4], "only_a": [1.0] * 4})
    b = result(["3", "4", "5"], {"m": [0.5, 0.4, 0.9], "only_b": [0.0] * 3})
    comparison = compare_runs(a, b)
    assert comparison.shared == 2 and comparison.only_a == ("1", "2") and comparison.only_b == ("5",)
    assert comparison.metrics_only_a == ("only_a",) and comparison.metrics_only_b == ("only_b",)
    m = comparison.metric("m")
    assert m.n == 2 and m.difference == pytest.approx(0.1) and (m.up, m.down, m.unchanged) == (1, 0, 1)
    markdown = comparison.to_markdown()
    assert "2 only in A and 1 only in B" in markdown and "only in A: only_a" in markdown


def test_user_text_is_escaped_in_html_and_markdown():
    question = "<script>alert(1)</script> a | b"
    comparison = compare_runs(
        result(["1", "2"], {"m": [0.0, 1.0]}, question=question),
        result(["1", "2"], {"m": [1.0, 1.0]}, question=question),
    )
    page, markdown = comparison.to_html(), comparison.to_markdown()
    assert "<script" not in page and "&lt;script&gt;" in page
    assert "a \\| b" in markdown and "<script" not in markdown


def test_duplicated_or_disjoint_ids_and_no_shared_metric_name_the_fix():
    with pytest.raises(ConfigError, match=r"Run A has 1 duplicated sample ids \('1'\).*unique `id`"):
        compare_runs(result(["1", "1"], {"m": [0.1, 0.2]}), result(["1"], {"m": [0.1]}))
    with pytest.raises(ConfigError, match=r"share no sample id.*same `id` column"):
        compare_runs(result(["1", "2"], {"m": [0.1, 0.2]}), result(["x"], {"m": [0.1]}))
    with pytest.raises(ConfigError, match="no metric in common"):
        compare_runs(result(["1"], {"m": [0.1]}), result(["1"], {"n": [0.1]}))
    with pytest.raises(ConfigError, match=r"holds no results\.json"):
        compare_runs(result(["1"], {"m": [0.1]}), "/nonexistent/run")
    with pytest.raises(ConfigError, match="top"):
        compare_runs(result(["1"], {"m": [0.1]}), result(["1"], {"m": [0.1]}), top=-1)
