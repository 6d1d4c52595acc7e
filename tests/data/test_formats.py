"""Files: .json, .jsonl, .csv and .parquet, and every way such a file can be malformed."""

from __future__ import annotations

import csv
import subprocess
import sys
from pathlib import Path

import pytest

from ascend_eval.data import load_dataset
from ascend_eval.models.errors import DataError, MissingDependencyError
from tests.data.sources import (
    json_file,
    parquet_pyarrow,
    write_csv,
)


def test_csv_cells_stay_text(tmp_path: Path) -> None:
    path = write_csv(
        tmp_path / "plain.csv",
        ["question", "contexts", "answer", "ground_truth", "id"],
        [
            ["问题", '["[1] 巴黎是首都 [注]"]', "None", "42", "a"],
            ["q2", "['只有一段上下文']", "", "NA", "b"],
            ["q3", "[]", "0042", "null", "c"],
        ],
    )
    ds = load_dataset(path)
    assert ds[0].retrieved_contexts == ("[1] 巴黎是首都 [注]",)
    assert ds[0].response == "None"  # not turned into a missing value
    assert ds[0].reference == "42"  # not turned into a number
    assert ds[1].retrieved_contexts == ("只有一段上下文",)  # a Python-literal list, as pandas writes one
    assert ds[1].response is None  # an empty cell is absent
    assert ds[1].reference == "NA"
    assert ds[2].retrieved_contexts == ()
    assert ds[2].response == "0042"
    assert [s.id for s in ds] == ["a", "b", "c"]


@pytest.mark.parametrize("cell", ["只有一段上下文", "[1] 巴黎是首都 [注]", "passage one, passage two"])
def test_csv_plain_string_context_names_the_sample_the_column_and_the_fix(tmp_path: Path, cell: str) -> None:
    path = write_csv(
        tmp_path / "plain.csv", ["id", "question", "contexts"], [["a", "q", '["ok"]'], ["b", "q", cell]]
    )
    with pytest.raises(DataError) as info:
        load_dataset(path)
    message = str(info.value)
    assert "Sample 1 (id 'b'), column 'contexts'" in message
    assert "plain string" in message and 'e.g. ["passage 1", "passage 2"]' in message
    assert "CSV cell, write that list as JSON text" in message


def test_a_plain_string_is_still_the_one_reference_of_ground_truths(tmp_path: Path) -> None:
    path = write_csv(tmp_path / "gt.csv", ["question", "ground_truths"], [["q", "the answer"]])
    assert load_dataset(path)[0].reference == "the answer"


def test_csv_with_bom_and_a_field_over_the_default_csv_limit(tmp_path: Path) -> None:
    long_context = "长" * 200_000
    path = write_csv(
        tmp_path / "bom.csv", ["question", "contexts"], [["q", f'["{long_context}"]']], encoding="utf-8-sig"
    )
    limit_before = csv.field_size_limit()
    ds = load_dataset(path)
    assert ds.columns == ("question", "contexts")  # the BOM is not part of the first name
    assert ds[0].retrieved_contexts == (long_context,)
    assert csv.field_size_limit() == limit_before


def test_csv_malformed_list_names_the_sample_and_column(tmp_path: Path) -> None:
    path = write_csv(tmp_path / "bad.csv", ["question", "contexts"], [["q0", '["a"]'], ["q1", '["a", "b]']])
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
    path = write_csv(tmp_path / "gbk.csv", ["question"], [["法国的首都是哪里？"]], encoding="gbk")
    with pytest.raises(DataError, match=r"not UTF-8 text.*Re-save it as UTF-8"):
        load_dataset(path)


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


def test_invalid_json_names_line_and_hintsjsonl_file(tmp_path: Path) -> None:
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
        load_dataset(json_file(tmp_path, "just text"))


def test_corrupt_parquet(tmp_path: Path) -> None:
    path = tmp_path / "broken.parquet"
    path.write_bytes(b"PAR1 this is not parquet")
    with pytest.raises(DataError, match="Cannot read the Parquet file"):
        load_dataset(path)


def test_parquet_without_pyarrow_raises_missing_dependency(tmp_path: Path) -> None:
    path = parquet_pyarrow(tmp_path)
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
