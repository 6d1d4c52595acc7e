"""`ascend-eval compare OUT_A OUT_B`: Markdown on stdout, --json, --html/--markdown files, exit 2 with
the fix on bad input."""

from __future__ import annotations

import json

import pytest

from ascend_eval.cli.main import main
from ascend_eval.data import Sample
from ascend_eval.metrics.base import MetricResult
from ascend_eval.report.compare import compare_runs
from ascend_eval.results import EvaluationResult


@pytest.fixture
def folders(tmp_path):
    """Two saved runs of three samples; B is better on two of them."""
    samples = [Sample(user_input=f"Question {i}?", response="a", id=str(i)) for i in range(3)]
    for name, scores in (("a", [0.2, 0.5, 1.0]), ("b", [0.6, 0.9, 1.0])):
        EvaluationResult(
            samples=samples,
            results={"faithfulness": [MetricResult(s) for s in scores]},
            languages=["en"] * 3,
            provenance={"models": {"judge": f"judge-{name}"}, "judge_mode": "classify"},
        ).save(tmp_path / name)
    return str(tmp_path / "a"), str(tmp_path / "b")


def test_compare_prints_the_markdown_table(folders, capsys):
    assert main(["compare", *folders]) == 0
    out = capsys.readouterr().out
    assert out == compare_runs(*folders).to_markdown()
    assert "| faithfulness | 3 | 0.5667 | 0.8333 | +0.2667 |" in out
    assert "judge: judge-a -> judge-b" in out


def test_compare_json_and_files(folders, tmp_path, capsys):
    html, markdown = tmp_path / "out" / "compare.html", tmp_path / "compare.md"
    args = ["compare", *folders, "--json", "--seed", "3", "--top", "1", "--html", str(html)]
    assert main([*args, "--markdown", str(markdown)]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data == compare_runs(*folders, seed=3, top=1).to_dict()
    [metric] = data["metrics"]
    assert (metric["up"], metric["down"], metric["unchanged"]) == (2, 0, 1) and len(metric["movers"]) == 1
    assert data["seed"] == 3 and data["run_a"] == folders[0]
    assert html.read_text(encoding="utf-8").startswith("<!DOCTYPE html>")
    assert markdown.read_text(encoding="utf-8") == compare_runs(*folders, seed=3, top=1).to_markdown()


def test_bad_input_exits_2_with_the_fix(folders, tmp_path, capsys):
    assert main(["compare", folders[0], str(tmp_path / "missing")]) == 2
    assert "holds no results.json" in capsys.readouterr().err
    assert main(["compare", *folders, "--top", "-1"]) == 2
    assert "--top -1" in capsys.readouterr().err
    assert main(["compare", *folders, "--html", str(tmp_path)]) == 2
    assert "is a folder" in capsys.readouterr().err
