"""Column resolution: column_map, and legacy and current names given together."""

from __future__ import annotations

from pathlib import Path

import pytest

from ascend_eval.data import Sample, load_dataset
from ascend_eval.models.errors import DataError
from tests.data.sources import (
    ROWS,
    write_csv,
)


def test_column_map_maps_our_names_to_the_dataset_columns() -> None:
    rows = [{"query": "问题", "docs": ["上下文"], "output": "回答", "gold": "参考"}]
    ds = load_dataset(
        rows,
        column_map={
            "user_input": "query",
            "retrieved_contexts": "docs",
            "answer": "output",
            "reference": "gold",
        },
    )
    assert ds[0] == Sample(
        id="0", user_input="问题", retrieved_contexts=("上下文",), response="回答", reference="参考"
    )
    assert ds.columns == ("query", "docs", "output", "gold")
    assert ds.column_roles["docs"] == "retrieved_contexts"


def test_column_map_wins_over_a_column_with_our_name(tmp_path: Path) -> None:
    path = write_csv(tmp_path / "d.csv", ["question", "rewritten", "contexts"], [["raw", "clean", '["c"]']])
    ds = load_dataset(path, column_map={"question": "rewritten"})
    assert ds[0].user_input == "clean"
    assert ds[0].metadata == {"question": "raw"}  # the overridden column is kept, not dropped
    assert ds[0].retrieved_contexts == ("c",)


def test_column_map_naming_a_missing_dataset_column_lists_the_columns() -> None:
    with pytest.raises(DataError) as info:
        load_dataset(ROWS, column_map={"retrieved_contexts": "context"})
    message = str(info.value)
    assert "no column 'context'" in message
    assert "['question', 'contexts', 'answer', 'ground_truth']" in message
    assert "Did you mean 'contexts'?" in message


def test_column_map_with_an_unknown_key() -> None:
    with pytest.raises(DataError, match="column_map key 'questions' is not one of our column names"):
        load_dataset(ROWS, column_map={"questions": "question"})


def test_column_map_written_the_wrong_way_round_is_spotted() -> None:
    rows = [{"query": "q"}]
    with pytest.raises(DataError, match=r"It looks reversed: write column_map=\{'user_input': 'query'\}"):
        load_dataset(rows, column_map={"query": "user_input"})


def test_column_map_giving_one_column_twice() -> None:
    with pytest.raises(DataError, match="gives 'user_input' twice"):
        load_dataset([{"a": "x", "b": "y"}], column_map={"question": "a", "user_input": "b"})


def test_legacy_and_current_names_with_different_values_conflict() -> None:
    rows = [{"question": "same", "user_input": "same"}, {"question": "旧问题", "user_input": "新问题"}]
    with pytest.raises(DataError) as info:
        load_dataset(rows)
    message = str(info.value)
    assert "Sample 1" in message
    assert "'question' and 'user_input'" in message
    assert "'旧问题' vs '新问题'" in message
    assert "column_map={'user_input': 'question'} or column_map={'user_input': 'user_input'}" in message


def test_legacy_and_current_names_with_equal_values_are_fine() -> None:
    ds = load_dataset(
        {"contexts": [["a"]], "retrieved_contexts": [("a",)], "ground_truth": ["g"], "reference": ["g"]}
    )
    assert ds[0].retrieved_contexts == ("a",) and ds[0].reference == "g"


def test_conflict_names_the_sample_id() -> None:
    with pytest.raises(DataError, match=r"Sample 0 \(id 'q-7'\)"):
        load_dataset([{"id": "q-7", "ground_truth": "a", "ground_truths": ["b"]}])
