"""EvaluationResult: aggregates in NeMo's shape, NaN accounting and exports."""

from __future__ import annotations

import csv
import json
import math

import pandas as pd
import pytest

from ascend_eval.data import Sample
from ascend_eval.engine.stats import StageStats
from ascend_eval.metrics import MetricResult
from ascend_eval.models.errors import ConfigError
from ascend_eval.results import EvaluationResult


@pytest.fixture
def result():
    samples = [
        Sample(user_input="问题一？", response="答", retrieved_contexts=("上下文",), id="a"),
        Sample(user_input="Q2?", response="A", retrieved_contexts=("C",), id="b"),
        Sample(user_input="Q3?", response="A", retrieved_contexts=("C",), id="c"),
    ]
    return EvaluationResult(
        samples=samples,
        results={
            "faithfulness": [
                MetricResult(1.0),
                MetricResult.nan("parse_failure: x", raw="oops"),
                MetricResult(0.5),
            ],
            "answer_similarity": [MetricResult.nan("backend_error: y")] * 3,
        },
        languages=["zh", "en", "en"],
        provenance={"models": {"judge": "j"}},
    )


def test_aggregates(result):
    faith, sim = result.aggregates()
    assert faith == {"name": "faithfulness", "count": 2, "mean": 0.75, "min": 0.5, "max": 1.0, "nan_count": 1}
    assert sim["count"] == 0 and sim["mean"] is None and sim["nan_count"] == 3
    assert result.nan_reasons("faithfulness") == {"parse_failure: x": 1}
    assert math.isnan(result["faithfulness"][1])
    with pytest.raises(ConfigError):
        result["nope"]


def test_json_export(result, tmp_path):
    data = json.loads(result.to_json(tmp_path / "r.json").read_text(encoding="utf-8"))
    assert data["aggregate_scores"][0]["mean"] == 0.75
    assert data["samples"][0]["user_input"] == "问题一？" and data["samples"][1]["faithfulness"] is None
    assert data["samples"][1]["faithfulness_details"] == {"raw": "oops"}
    assert data["provenance"]["models"]["judge"] == "j"


def test_csv_and_parquet_and_pandas(result, tmp_path):
    with open(result.to_csv(tmp_path / "s.csv"), encoding="utf-8-sig", newline="") as f:
        rows = list(csv.DictReader(f))
    assert rows[0]["retrieved_contexts"] == '["上下文"]' and rows[0]["faithfulness"] == "1.0"
    assert rows[1]["faithfulness_reason"] == "parse_failure: x"
    frame = pd.read_parquet(result.to_parquet(tmp_path / "s.parquet"))
    assert list(frame["id"]) == ["a", "b", "c"] and frame["faithfulness"].isna().sum() == 1
    assert result.to_pandas().shape[0] == 3


def test_table_and_save(result, tmp_path):
    table = result.table()
    assert "faithfulness" in table and "0.7500" in table and table.splitlines()[0].startswith("metric")
    # faithfulness has two scores (1.0 and 0.5): every resample's mean is 0.5, 0.75 or 1.0
    assert "95% CI" in table.splitlines()[0] and "[0.5000, 1.0000]" in table
    paths = result.save(tmp_path / "out")
    names = ["report.html", "results.json", "samples.jsonl", "scores.csv", "summary.json"]
    assert sorted(p.name for p in paths.values()) == names
    assert "问题一？" in paths["report"].read_text(encoding="utf-8")
    summary = json.loads(paths["summary"].read_text(encoding="utf-8"))
    assert summary["aggregate_scores"] == result.aggregates()
    assert summary["intervals"]["confidence"] == 0.95
    assert summary["intervals"]["scores"] == {"faithfulness": [0.5, 1.0], "answer_similarity": None}


def test_intervals_are_seeded_and_none_without_two_scores(result):
    expected = {"faithfulness": (0.5, 1.0), "answer_similarity": None}
    assert result.intervals() == result.intervals(seed=0) == expected
    narrow = result.intervals(confidence=0.1)["faithfulness"]
    assert 0.5 <= narrow[0] <= narrow[1] <= 1.0
    with pytest.raises(ConfigError, match="confidence"):
        result.intervals(confidence=95)
    result.results["faithfulness"] = [MetricResult(0.25)] * 3  # new scores, new intervals
    assert result.intervals()["faithfulness"] == (0.25, 0.25)


def test_a_saved_run_loads_back_as_it_was_saved(result, tmp_path):
    result.stages = {"judge.generate[statements@1]": StageStats(requests=3, sent=2, tokens_in=90)}
    result.save(tmp_path / "run")
    loaded = EvaluationResult.load(tmp_path / "run")
    assert loaded.to_dict() == json.loads((tmp_path / "run" / "results.json").read_text("utf-8"))
    assert math.isnan(loaded["faithfulness"][1]) and loaded.results["faithfulness"][1].reason
    assert EvaluationResult.load(tmp_path / "run" / "results.json").metrics == result.metrics


def test_loading_a_folder_without_results_names_the_fix(tmp_path):
    with pytest.raises(ConfigError, match=r"holds no results\.json"):
        EvaluationResult.load(tmp_path)
    (tmp_path / "results.json").write_text('{"samples": []}', encoding="utf-8")
    with pytest.raises(ConfigError, match="not an ascend-eval results file"):
        EvaluationResult.load(tmp_path)
