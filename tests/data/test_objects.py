"""In-memory sources: columnar dicts, lists of rows, Hugging Face DatasetDicts."""

from __future__ import annotations

import datasets
import numpy as np
import pytest

from ascend_eval.data import load_dataset
from ascend_eval.models.errors import DataError
from tests.data.sources import (
    ROWS,
)


def test_columnar_dict_with_different_lengths_names_columns_and_lengths() -> None:
    with pytest.raises(DataError) as info:
        load_dataset({"question": ["a", "b", "c"], "answer": ["x", "y"], "contexts": [["c"]] * 3})
    message = str(info.value)
    assert "{'question': 3, 'answer': 2, 'contexts': 3}" in message
    assert "different lengths" in message


def test_a_single_row_dict_is_explained() -> None:
    with pytest.raises(DataError, match=r"column 'question' holds a str.*\[row\]"):
        load_dataset({"question": "q", "answer": "a"})


def test_columnar_dict_with_a_data_column_is_not_a_wrapper() -> None:
    ds = load_dataset({"question": ["q"], "data": [{"k": 1}]})
    assert ds[0].user_input == "q"
    assert ds[0].metadata == {"data": {"k": 1}}


def test_numpy_columns_in_a_dict() -> None:
    ds = load_dataset({"question": np.array(["问题"]), "contexts": [np.array(["上下文"])]})
    assert ds[0].user_input == "问题" and type(ds[0].user_input) is str
    assert ds[0].retrieved_contexts == ("上下文",)


def test_rows_that_are_not_dicts() -> None:
    with pytest.raises(DataError, match="Row 1 of the list is a str"):
        load_dataset([{"question": "q"}, "q2"])


def test_datasetdict_with_several_splits_lists_them() -> None:
    split = datasets.Dataset.from_list(ROWS)
    with pytest.raises(DataError) as info:
        load_dataset(datasets.DatasetDict({"train": split, "test": split}))
    message = str(info.value)
    assert "2 splits ['train', 'test']" in message
    assert "load_dataset(ds['train'])" in message
