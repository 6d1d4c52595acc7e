"""The Ray executor reads a dataset through `data/`: the same files give the same samples locally
(`open_samples`) and through the Ray reading path (`read_source` on a local Ray, `batch_rows` and
`make_sample` as the actors run them), with a column map, CSV cells holding JSON lists, byte-order marks
and a pandas index column."""

from __future__ import annotations

import csv
import json
from pathlib import Path
from typing import Any

import pytest

from ascend_eval.data.cells import make_sample
from ascend_eval.data.stream import SampleStream, check_samples, open_samples
from ascend_eval.executors.ray_actor import batch_rows
from ascend_eval.executors.ray_data import read_source

COLUMN_MAP = {"id": "key", "user_input": "query", "retrieved_contexts": "docs", "reference": "gold"}


def _rows() -> list[dict[str, Any]]:
    """Five rows under the user's own column names; a question column the map overrides (kept as
    metadata), and metadata cells a CSV keeps as text."""
    return [
        {
            "key": f"k{i}",
            "query": f"question {i}?" if i % 2 else f"问题 {i}？",
            "docs": [f"passage {i}", '逗号, 和 "引号"'],
            "gold": f"answer {i}",
            "question": f"ignored {i}",
            "code": "007" if i == 1 else "NA" if i == 2 else str(i),
        }
        for i in range(5)
    ]


def _write(kind: str, folder: Path) -> Path:
    rows = _rows()
    path = folder / f"data.{kind}"
    if kind == "jsonl":
        lines = [json.dumps(row, ensure_ascii=False) for row in rows]
        lines.insert(2, "")
        path.write_text("\ufeff" + "\n".join(lines) + "\n", encoding="utf-8")
    elif kind == "csv":
        with path.open("w", encoding="utf-8-sig", newline="") as handle:
            writer = csv.DictWriter(handle, fieldnames=list(rows[0]))
            writer.writeheader()
            for row in rows:  # the context lists as JSON text, as pandas and spreadsheets export them
                writer.writerow({**row, "docs": json.dumps(row["docs"], ensure_ascii=False)})
    else:
        import pandas as pd

        frame = pd.DataFrame(rows, index=[f"r{i}" for i in range(len(rows))])  # an index column in the file
        frame.to_parquet(path)
    return path


def _through_ray(ray: Any, stream: SampleStream, size: int) -> list[Any]:
    kind, dataset = read_source(ray, stream, count=len(stream), size=size)
    rows = []
    for batch in dataset.iter_batches(batch_format="pyarrow", batch_size=None):
        rows += batch_rows(kind, batch)
    return [make_sample(index, row, stream.row_roles) for index, row in enumerate(rows)]


@pytest.mark.parametrize("kind", ["csv", "jsonl", "parquet"])
def test_a_file_gives_the_same_samples_locally_and_through_ray(kind, tmp_path, local_ray):
    stream = open_samples(_write(kind, tmp_path), column_map=COLUMN_MAP)
    assert check_samples(stream, {"context_recall": ["retrieved_contexts", "reference"]}) == 5
    local = list(stream)
    assert local[0].retrieved_contexts == ("passage 0", '逗号, 和 "引号"')
    assert (local[1].id, local[1].user_input, local[1].metadata) == (
        "k1",
        "question 1?",
        {"question": "ignored 1", "code": "007"},
    )
    assert _through_ray(local_ray, stream, size=2) == local


def test_loaded_samples_and_in_memory_rows_read_the_same_through_ray(tmp_path, local_ray):
    from ascend_eval.data import load_dataset

    dataset = load_dataset(_write("csv", tmp_path), column_map=COLUMN_MAP)
    for source in (dataset, _rows()):
        stream = open_samples(source, column_map=None if source is dataset else COLUMN_MAP)
        assert _through_ray(local_ray, stream, size=3) == list(stream)
