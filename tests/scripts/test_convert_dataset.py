"""scripts/convert_dataset.py: every output format reads back to the same samples."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from ascend_eval.data import load_dataset
from ascend_eval.examples import builtin_dataset

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "convert_dataset.py"


@pytest.mark.parametrize("suffix", [".json", ".jsonl", ".csv", ".parquet"])
@pytest.mark.parametrize("names", ["legacy", "current"])
def test_round_trip(tmp_path, suffix, names):
    source = builtin_dataset("bilingual-example")
    target = tmp_path / f"out{suffix}"
    run = subprocess.run(
        [sys.executable, str(SCRIPT), str(source), str(target), "--names", names],
        capture_output=True,
        text=True,
    )
    assert run.returncode == 0, run.stderr
    original, converted = load_dataset(source), load_dataset(target)
    assert [s.model_dump() for s in converted] == [s.model_dump() for s in original]


def test_bad_extension_is_a_clear_error(tmp_path):
    run = subprocess.run(
        [sys.executable, str(SCRIPT), str(builtin_dataset("bilingual-example")), str(tmp_path / "x.xlsx")],
        capture_output=True,
        text=True,
    )
    assert run.returncode == 2 and ".jsonl" in run.stderr
