"""load_dataset on every source format (real files on disk, real pandas/pyarrow/datasets objects) and
its dispatch: what it accepts, what it refuses, and what importing the data package costs."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from ascend_eval.data import Dataset, Sample, load_dataset
from ascend_eval.models.errors import DataError
from tests.data.sources import (
    COLUMNS,
    ROWS,
    SOURCES,
    expected,
    jsonl_file,
)


@pytest.mark.parametrize("kind", list(SOURCES))
def test_every_format_round_trips_exactly(kind: str, tmp_path: Path) -> None:
    ds = load_dataset(SOURCES[kind](tmp_path))
    assert isinstance(ds, Dataset)
    assert len(ds) == 2
    assert list(ds) == [expected(0), expected(1)]
    assert all(s.metadata == {} for s in ds)
    if kind.startswith("ragas"):
        assert ds.columns == ("user_input", "retrieved_contexts", "response", "reference")
    else:
        assert ds.columns == COLUMNS


def test_source_is_described(tmp_path: Path) -> None:
    path = jsonl_file(tmp_path)
    assert load_dataset(path).source == f"file '{path}'"
    assert load_dataset(pd.DataFrame(ROWS)).source == "pandas DataFrame"
    assert "split 'test'" in load_dataset(SOURCES["datasets one-split dict"](tmp_path)).source


def test_samples_are_loaded_back_with_their_ids_and_metadata() -> None:
    samples = [Sample(id="a", user_input="q", metadata={"k": 1}), Sample(response="r")]
    ds = load_dataset(samples)
    assert list(ds) == [samples[0], Sample(id="1", response="r")]
    assert load_dataset(ds) is ds


def test_a_loaded_dataset_with_column_map_is_an_error() -> None:
    ds = load_dataset(ROWS)
    with pytest.raises(DataError, match="already loaded"):
        load_dataset(ds, column_map={"user_input": "question"})


def test_unsupported_source_type() -> None:
    with pytest.raises(DataError, match="Cannot load a dataset from a int"):
        load_dataset(42)


def test_importing_the_data_package_loads_no_optional_library() -> None:
    code = (
        "import sys\n"
        "import ascend_eval.data\n"
        "heavy = [m for m in ('pandas', 'pyarrow', 'datasets', 'torch') if m in sys.modules]\n"
        "print(heavy)\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert result.stdout.strip() == "[]"
