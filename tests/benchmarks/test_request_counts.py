"""The request-count report runs and its numbers hold together."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def test_request_counts(tmp_path):
    run = subprocess.run([sys.executable, str(REPO / "benchmarks" / "request_counts.py"), "--k", "3",
                          "--out", str(tmp_path)], capture_output=True, text=True, timeout=300)  # fmt: skip
    assert run.returncode == 0, run.stderr[-2000:]
    rows = {r["metric"]: r for r in json.loads((tmp_path / "request_counts.json").read_text())["rows"]}
    assert len(rows) == 13
    assert rows["context_precision"]["ours_requested"] == 3.0 and rows["noise_sensitivity"]["ragas"] == 9
    # calibration: six requests per yes/no prompt and language, once per run; the example has en and zh
    assert rows["context_precision"]["calibration_per_run"] == 6 * 2
    assert rows["answer_similarity"]["calibration_per_run"] == 0  # no judge at all
    together = rows["all twelve together"]
    # metrics share statement extractions, embeddings and verdicts: together they ask for less than apart
    assert together["ours_unique"] < together["ours_requested"]
    assert together["ours_unique"] < sum(
        r["ours_unique"] for m, r in rows.items() if m != "all twelve together"
    )
