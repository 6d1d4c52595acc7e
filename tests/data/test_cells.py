"""Rows -> samples: missing cells, metadata, ids and cells of the wrong type."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from ascend_eval.data import load_dataset
from ascend_eval.models.errors import DataError
from tests.data.sources import (
    json_file,
)


def test_nan_and_none_cells_are_absent(tmp_path: Path) -> None:
    frame = pd.DataFrame(
        {
            "question": ["q0", None],
            "answer": [np.nan, "a1"],
            "contexts": [["c"], None],
            "score": [np.float32(0.5), np.nan],
        }
    )
    ds = load_dataset(frame)
    assert ds[0].response is None and ds[1].user_input is None and ds[1].retrieved_contexts is None
    assert ds[0].metadata == {"score": 0.5}
    assert ds[1].metadata == {}


def test_metadata_keeps_other_columns_as_json(tmp_path: Path) -> None:
    frame = pd.DataFrame(
        {
            "question": ["q"],
            "category": ["地理"],
            "n_hits": [np.int64(3)],
            "scores": [np.array([0.5, 0.25])],
            "when": pd.to_datetime(["2024-05-01"]),
        }
    )
    (sample,) = load_dataset(frame)
    assert sample.metadata == {
        "category": "地理",
        "n_hits": 3,
        "scores": [0.5, 0.25],
        "when": "2024-05-01T00:00:00",
    }
    json.dumps(sample.metadata)


def test_ids_from_id_or_sample_id_columns() -> None:
    assert [s.id for s in load_dataset([{"id": 7, "question": "a"}, {"id": "x", "question": "b"}])] == [
        "7",
        "x",
    ]
    assert [s.id for s in load_dataset({"sample_id": ["s1", "s2"], "question": ["a", "b"]})] == ["s1", "s2"]
    # a missing id falls back to the position
    assert [s.id for s in load_dataset([{"id": "k", "question": "a"}, {"question": "b"}])] == ["k", "1"]


def test_repeated_ids_are_an_error() -> None:
    with pytest.raises(DataError, match=r"ids must be unique.*'a' \(samples 0, 2\)"):
        load_dataset({"id": ["a", "b", "a"], "question": ["x", "y", "z"]})


def test_ground_truths_uses_the_first_reference() -> None:
    ds = load_dataset({"question": ["q0", "q1", "q2"], "ground_truths": [["第一", "第二"], [], None]})
    assert ds[0].reference == "第一"
    assert ds[1].reference is None and ds[2].reference is None


def test_context_list_with_a_non_string_names_sample_column_and_item(tmp_path: Path) -> None:
    path = json_file(
        tmp_path, [{"question": "q", "contexts": ["a"]}, {"question": "q", "contexts": ["a", 5]}]
    )
    with pytest.raises(DataError) as info:
        load_dataset(path)
    message = str(info.value)
    assert message.startswith("Sample 1, column 'contexts' (read as retrieved_contexts): item 1 is int 5")
    assert "Make every item of the list a string" in message


def test_question_that_is_a_list_names_sample_and_column() -> None:
    with pytest.raises(DataError) as info:
        load_dataset({"question": ["ok", ["a", "b"]]})
    message = str(info.value)
    assert "Sample 1, column 'question' (read as user_input): expected a string, got list" in message
    assert "join them into one string" in message


def test_number_where_text_isexpected() -> None:
    with pytest.raises(
        DataError, match=r"Sample 0, column 'reference': expected a string, got int 42.*\"42\""
    ):
        load_dataset([{"reference": 42}])


def test_context_that_is_an_object() -> None:
    with pytest.raises(DataError, match=r"Sample 0, column 'retrieved_contexts': expected a list of strings"):
        load_dataset([{"retrieved_contexts": {"text": "a"}}])
