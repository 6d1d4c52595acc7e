"""A smoke run of the Ray executor benchmark (40 samples, one actor), so that it cannot rot. A subprocess:
the benchmark starts and stops its own local Ray."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


def test_smoke(tmp_path):
    pytest.importorskip("ray")
    run = subprocess.run(
        [sys.executable, "-m", "benchmarks.ray_executor", "--samples", "40", "--workers", "1",
         "--batch-size", "16", "--out", str(tmp_path)],
        capture_output=True, text=True, timeout=300, cwd=REPO,
    )  # fmt: skip
    assert run.returncode == 0, run.stderr[-2000:]
    report = json.loads((tmp_path / "ray.json").read_text())
    assert report["local"]["samples"] == report["evaluate_ray"]["samples"] == 40
    assert report["same_aggregates"] and report["local"]["aggregates"] == report["evaluate_ray"]["aggregates"]
    assert [a["count"] + a["nan_count"] for a in report["local"]["aggregates"]] == [40, 40]
    assert report["ray"]["scored"] == 40 and report["ray"]["workers"] == 1
    assert report["ratio"] == report["evaluate_ray"]["wall_s"] / report["local"]["wall_s"]
    assert "Ray's overhead per sample" in (tmp_path / "ray.md").read_text()
