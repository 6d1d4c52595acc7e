"""A smoke run of the batching benchmark (2 samples, tiny judge), so that it cannot rot."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from ascend_eval.models.weights.shipped import minilm_path

REPO = Path(__file__).resolve().parents[2]


def test_smoke(tiny_llama_dir, tmp_path):
    run = subprocess.run(
        [sys.executable, "-m", "benchmarks.engine_batching", "--samples", "2", "--judge",
         str(tiny_llama_dir), "--embedder", str(minilm_path()), "--out", str(tmp_path),
         # float32: with bfloat16 (a CPU with AMX) a batch's rounding changes what the judge writes
         "--dtype", "float32"],
        capture_output=True, text=True, timeout=600, cwd=REPO,
    )  # fmt: skip
    assert run.returncode == 0, run.stderr[-2000:]
    report = json.loads((tmp_path / "engine_batching.json").read_text())
    batched, single = (
        next(r for r in report["runs"] if r["mode"] == m) for m in ("batched", "one_at_a_time")
    )
    assert batched["requests"] == single["requests"] and single["sent"] == single["requests"]
    assert batched["sent"] <= single["sent"]
    assert "batched is" in (tmp_path / "engine_batching.md").read_text()
