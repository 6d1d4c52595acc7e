"""load_dataset on every source format: real files on disk, real pandas/pyarrow/datasets objects."""

from __future__ import annotations

import csv
import json
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import datasets
import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from pydantic import BaseModel

from ascend_eval.data import Dataset, Sample, load_dataset
from ascend_eval.models.errors import DataError, MissingDependencyError

# Chinese text, surrounding whitespace, commas, quotes and a line break: all must come back unchanged.
ROWS: list[dict[str, Any]] = [
    {
        "question": "法国的首都是哪里？",
        "contexts": ["巴黎是法国的首都，也是最大的城市。", '上下文二："引号"\n第二行'],
        "answer": "巴黎",
        "ground_truth": "法国的首都是巴黎。",
    },
    {
        "question": "  What is RAG? ",
        "contexts": ["Retrieval-augmented generation, or RAG.", "It's 'quoted'."],
        "answer": " RAG ",
        "ground_truth": "retrieval augmented generation",
    },
]
COLUMNS = ("question", "contexts", "answer", "ground_truth")


def _expected(index: int) -> Sample:
    row = ROWS[index]
    return Sample(
        id=str(index),
        user_input=row["question"],
        retrieved_contexts=tuple(row["contexts"]),
        response=row["answer"],
        reference=row["ground_truth"],
    )


def _columnar(rows: list[dict[str, Any]]) -> dict[str, list[Any]]:
    return {name: [row.get(name) for row in rows] for name in rows[0]}


def _write_csv(path: Path, header: list[str], lines: list[list[Any]], encoding: str = "utf-8") -> Path:
    with path.open("w", encoding=encoding, newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(header)
        writer.writerows(lines)
    return path


def _csv_json_lists(tmp: Path) -> Path:
    lines = [
        [r[c] if c != "contexts" else json.dumps(r[c], ensure_ascii=False) for c in COLUMNS] for r in ROWS
    ]
    return _write_csv(tmp / "data.csv", list(COLUMNS), lines)


def _csv_python_lists(tmp: Path) -> Path:
    lines = [[r[c] if c != "contexts" else repr(r[c]) for c in COLUMNS] for r in ROWS]
    return _write_csv(tmp / "data.csv", list(COLUMNS), lines)


def _json_file(tmp: Path, data: Any, name: str = "data.json") -> Path:
    path = tmp / name
    path.write_text(json.dumps(data, ensure_ascii=False, indent=2), encoding="utf-8")
    return path


def _jsonl(tmp: Path) -> Path:
    path = tmp / "data.jsonl"
    lines = [json.dumps(row, ensure_ascii=False) for row in ROWS]
    path.write_text("\n".join(lines) + "\n\n", encoding="utf-8")
    return path


def _parquet_pyarrow(tmp: Path) -> Path:
    path = tmp / "data.parquet"
    pq.write_table(pa.Table.from_pylist(ROWS), path)
    return path


def _parquet_pandas(tmp: Path) -> Path:
    path = tmp / "data.PARQUET"
    pd.DataFrame(ROWS, index=[10, 20]).to_parquet(path)  # a non-default index is not a data column
    return path


class RagasLikeSample(BaseModel):
    """The shape of ragas' SingleTurnSample (ragas is not installed here): optional fields, to_dict()."""

    user_input: str | None = None
    retrieved_contexts: list[str] | None = None
    response: str | None = None
    reference: str | None = None
    reference_contexts: list[str] | None = None
    retrieved_context_ids: list[str | int] | None = None

    def to_dict(self) -> dict[str, Any]:
        return self.model_dump(exclude_none=True)


class RagasLikeEvaluationDataset(BaseModel):
    """The shape of ragas' EvaluationDataset: a `.samples` list."""

    samples: list[RagasLikeSample]


def _ragas(tmp: Path) -> Any:
    return RagasLikeEvaluationDataset(
        samples=[
            RagasLikeSample(
                user_input=r["question"],
                retrieved_contexts=r["contexts"],
                response=r["answer"],
                reference=r["ground_truth"],
            )
            for r in ROWS
        ]
    )


SOURCES: dict[str, Callable[[Path], Any]] = {
    "columnar dict": lambda tmp: _columnar(ROWS),
    "list of rows": lambda tmp: [dict(r) for r in ROWS],
    "tuple of rows": lambda tmp: tuple(dict(r) for r in ROWS),
    "json columnar": lambda tmp: _json_file(tmp, _columnar(ROWS)),
    "json rows": lambda tmp: _json_file(tmp, ROWS),
    "json data-wrapped rows": lambda tmp: _json_file(tmp, {"data": ROWS, "version": 2}),
    "json rows-wrapped columns": lambda tmp: _json_file(tmp, {"rows": _columnar(ROWS)}),
    "json as str path": lambda tmp: str(_json_file(tmp, ROWS)),
    "jsonl": _jsonl,
    "csv json lists": _csv_json_lists,
    "csv python lists": _csv_python_lists,
    "parquet pyarrow": _parquet_pyarrow,
    "parquet pandas": _parquet_pandas,
    "pandas": lambda tmp: pd.DataFrame(ROWS),
    "pandas from parquet": lambda tmp: pd.read_parquet(_parquet_pyarrow(tmp)),
    "datasets": lambda tmp: datasets.Dataset.from_list(ROWS),
    "datasets numpy format": lambda tmp: datasets.Dataset.from_list(ROWS).with_format("numpy"),
    "datasets one-split dict": lambda tmp: datasets.DatasetDict({"test": datasets.Dataset.from_list(ROWS)}),
    "ragas EvaluationDataset": _ragas,
    "ragas sample list": lambda tmp: _ragas(tmp).samples,
}


@pytest.mark.parametrize("kind", list(SOURCES))
def test_every_format_round_trips_exactly(kind: str, tmp_path: Path) -> None:
    ds = load_dataset(SOURCES[kind](tmp_path))
    assert isinstance(ds, Dataset)
    assert len(ds) == 2
    assert list(ds) == [_expected(0), _expected(1)]
    assert all(s.metadata == {} for s in ds)
    if kind.startswith("ragas"):
        assert ds.columns == ("user_input", "retrieved_contexts", "response", "reference")
    else:
        assert ds.columns == COLUMNS


def test_source_is_described(tmp_path: Path) -> None:
    path = _jsonl(tmp_path)
    assert load_dataset(path).source == f"file '{path}'"
    assert load_dataset(pd.DataFrame(ROWS)).source == "pandas DataFrame"
    assert "split 'test'" in load_dataset(SOURCES["datasets one-split dict"](tmp_path)).source


def test_csv_plain_string_context_is_one_passage_and_cells_stay_text(tmp_path: Path) -> None:
    path = _write_csv(
        tmp_path / "plain.csv",
        ["question", "contexts", "answer", "ground_truth", "id"],
        [
            ["问题", "[1] 巴黎是首都 [注]", "None", "42", "a"],
            ["q2", "只有一段上下文", "", "NA", "b"],
            ["q3", "[]", "0042", "null", "c"],
        ],
    )
    ds = load_dataset(path)
    assert ds[0].retrieved_contexts == ("[1] 巴黎是首都 [注]",)
    assert ds[0].response == "None"  # not turned into a missing value
    assert ds[0].reference == "42"  # not turned into a number
    assert ds[1].retrieved_contexts == ("只有一段上下文",)
    assert ds[1].response is None  # an empty cell is absent
    assert ds[1].reference == "NA"
    assert ds[2].retrieved_contexts == ()
    assert ds[2].response == "0042"
    assert [s.id for s in ds] == ["a", "b", "c"]


def test_csv_with_bom_and_a_field_over_the_default_csv_limit(tmp_path: Path) -> None:
    long_context = "长" * 200_000
    path = _write_csv(
        tmp_path / "bom.csv", ["question", "contexts"], [["q", long_context]], encoding="utf-8-sig"
    )
    limit_before = csv.field_size_limit()
    ds = load_dataset(path)
    assert ds.columns == ("question", "contexts")  # the BOM is not part of the first name
    assert ds[0].retrieved_contexts == (long_context,)
    assert csv.field_size_limit() == limit_before


def test_csv_malformed_list_names_the_sample_and_column(tmp_path: Path) -> None:
    path = _write_csv(tmp_path / "bad.csv", ["question", "contexts"], [["q0", '["a"]'], ["q1", '["a", "b]']])
    with pytest.raises(DataError) as info:
        load_dataset(path)
    message = str(info.value)
    assert "Sample 1" in message
    assert "'contexts'" in message
    assert "Fix the quoting" in message


def test_csv_row_with_extra_fields(tmp_path: Path) -> None:
    path = tmp_path / "extra.csv"
    path.write_text("question,answer\nq,a,unexpected\n", encoding="utf-8")
    with pytest.raises(DataError, match="line 2: more fields than the 2 header columns"):
        load_dataset(path)


def test_csv_that_is_not_utf8(tmp_path: Path) -> None:
    path = _write_csv(tmp_path / "gbk.csv", ["question"], [["法国的首都是哪里？"]], encoding="gbk")
    with pytest.raises(DataError, match=r"not UTF-8 text.*Re-save it as UTF-8"):
        load_dataset(path)


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


def test_samples_are_loaded_back_with_their_ids_and_metadata() -> None:
    samples = [Sample(id="a", user_input="q", metadata={"k": 1}), Sample(response="r")]
    ds = load_dataset(samples)
    assert list(ds) == [samples[0], Sample(id="1", response="r")]
    assert load_dataset(ds) is ds


def test_a_loaded_dataset_with_column_map_is_an_error() -> None:
    ds = load_dataset(ROWS)
    with pytest.raises(DataError, match="already loaded"):
        load_dataset(ds, column_map={"user_input": "question"})


# --- columnar dicts -----------------------------------------------------------------------------------


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


# --- column_map -----------------------------------------------------------------------------------


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
    path = _write_csv(tmp_path / "d.csv", ["question", "rewritten", "contexts"], [["raw", "clean", '["c"]']])
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


# --- legacy and current names together -------------------------------------------------------------


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


# --- cell types -------------------------------------------------------------------------------------


def test_context_list_with_a_non_string_names_sample_column_and_item(tmp_path: Path) -> None:
    path = _json_file(
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


def test_number_where_text_is_expected() -> None:
    with pytest.raises(
        DataError, match=r"Sample 0, column 'reference': expected a string, got int 42.*\"42\""
    ):
        load_dataset([{"reference": 42}])


def test_context_that_is_an_object() -> None:
    with pytest.raises(DataError, match=r"Sample 0, column 'retrieved_contexts': expected a list of strings"):
        load_dataset([{"retrieved_contexts": {"text": "a"}}])


def test_rows_that_are_not_dicts() -> None:
    with pytest.raises(DataError, match="Row 1 of the list is a str"):
        load_dataset([{"question": "q"}, "q2"])


def test_unsupported_source_type() -> None:
    with pytest.raises(DataError, match="Cannot load a dataset from a int"):
        load_dataset(42)


# --- files ----------------------------------------------------------------------------------------


def test_missing_file_names_the_path(tmp_path: Path) -> None:
    path = tmp_path / "nope.jsonl"
    with pytest.raises(DataError, match=r"nope\.jsonl' does not exist"):
        load_dataset(path)


def test_unknown_extension_lists_the_supported_ones(tmp_path: Path) -> None:
    path = tmp_path / "data.xlsx"
    path.write_bytes(b"not really")
    with pytest.raises(DataError) as info:
        load_dataset(path)
    message = str(info.value)
    assert "unsupported extension '.xlsx'" in message
    assert "['.json', '.jsonl', '.csv', '.parquet']" in message


def test_directory_is_an_error(tmp_path: Path) -> None:
    with pytest.raises(DataError, match="is a directory"):
        load_dataset(tmp_path)


def test_invalid_json_names_line_and_hints_jsonl(tmp_path: Path) -> None:
    path = tmp_path / "lines.json"
    path.write_text('{"question": "a"}\n{"question": "b"}\n', encoding="utf-8")
    with pytest.raises(DataError, match=r"not valid JSON: Extra data at line 2.*\.jsonl"):
        load_dataset(path)


def test_jsonl_bad_line_is_named(tmp_path: Path) -> None:
    path = tmp_path / "d.jsonl"
    path.write_text('{"question": "a"}\n["not", "an object"]\n', encoding="utf-8")
    with pytest.raises(DataError, match="line 2: a JSON list, not an object"):
        load_dataset(path)
    path.write_text('{"question": "a"}\n{"question": \n', encoding="utf-8")
    with pytest.raises(DataError, match="line 2: not valid JSON"):
        load_dataset(path)


def test_json_scalar_document(tmp_path: Path) -> None:
    with pytest.raises(DataError, match="holds a JSON str"):
        load_dataset(_json_file(tmp_path, "just text"))


def test_corrupt_parquet(tmp_path: Path) -> None:
    path = tmp_path / "broken.parquet"
    path.write_bytes(b"PAR1 this is not parquet")
    with pytest.raises(DataError, match="Cannot read the Parquet file"):
        load_dataset(path)


def test_datasetdict_with_several_splits_lists_them() -> None:
    split = datasets.Dataset.from_list(ROWS)
    with pytest.raises(DataError) as info:
        load_dataset(datasets.DatasetDict({"train": split, "test": split}))
    message = str(info.value)
    assert "2 splits ['train', 'test']" in message
    assert "load_dataset(ds['train'])" in message


def test_parquet_without_pyarrow_raises_missing_dependency(tmp_path: Path) -> None:
    path = _parquet_pyarrow(tmp_path)
    # A None entry in sys.modules makes `import pyarrow` fail, as on a machine without it.
    code = (
        "import sys\n"
        "sys.modules['pyarrow'] = None\n"
        "from ascend_eval.data import load_dataset\n"
        "from ascend_eval.models.errors import MissingDependencyError\n"
        "try:\n"
        f"    load_dataset({str(path)!r})\n"
        "except MissingDependencyError as exc:\n"
        "    print(exc)\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert "pip install 'ascend-eval[data]'" in result.stdout
    assert issubclass(MissingDependencyError, ImportError)


def test_importing_the_data_package_loads_no_optional_library() -> None:
    code = (
        "import sys\n"
        "import ascend_eval.data\n"
        "heavy = [m for m in ('pandas', 'pyarrow', 'datasets', 'torch') if m in sys.modules]\n"
        "print(heavy)\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert result.stdout.strip() == "[]"
