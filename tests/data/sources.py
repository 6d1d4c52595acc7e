"""The rows every loader test reads back, and the same rows written in every format load_dataset reads."""

from __future__ import annotations

import csv
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import datasets
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
from pydantic import BaseModel

from ascend_eval.data import Sample

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


def expected(index: int) -> Sample:
    row = ROWS[index]
    return Sample(
        id=str(index),
        user_input=row["question"],
        retrieved_contexts=tuple(row["contexts"]),
        response=row["answer"],
        reference=row["ground_truth"],
    )


def columnar(rows: list[dict[str, Any]]) -> dict[str, list[Any]]:
    return {name: [row.get(name) for row in rows] for name in rows[0]}


def write_csv(path: Path, header: list[str], lines: list[list[Any]], encoding: str = "utf-8") -> Path:
    with path.open("w", encoding=encoding, newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(header)
        writer.writerows(lines)
    return path


def csv_json_lists(tmp: Path) -> Path:
    lines = [
        [r[c] if c != "contexts" else json.dumps(r[c], ensure_ascii=False) for c in COLUMNS] for r in ROWS
    ]
    return write_csv(tmp / "data.csv", list(COLUMNS), lines)


def csv_python_lists(tmp: Path) -> Path:
    lines = [[r[c] if c != "contexts" else repr(r[c]) for c in COLUMNS] for r in ROWS]
    return write_csv(tmp / "data.csv", list(COLUMNS), lines)


def json_file(tmp: Path, data: Any, name: str = "data.json") -> Path:
    path = tmp / name
    path.write_text(json.dumps(data, ensure_ascii=False, indent=2), encoding="utf-8")
    return path


def jsonl_file(tmp: Path) -> Path:
    path = tmp / "data.jsonl"
    lines = [json.dumps(row, ensure_ascii=False) for row in ROWS]
    path.write_text("\n".join(lines) + "\n\n", encoding="utf-8")
    return path


def parquet_pyarrow(tmp: Path) -> Path:
    path = tmp / "data.parquet"
    pq.write_table(pa.Table.from_pylist(ROWS), path)
    return path


def parquet_pandas(tmp: Path) -> Path:
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


def ragas_dataset(tmp: Path) -> Any:
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
    "columnar dict": lambda tmp: columnar(ROWS),
    "list of rows": lambda tmp: [dict(r) for r in ROWS],
    "tuple of rows": lambda tmp: tuple(dict(r) for r in ROWS),
    "json columnar": lambda tmp: json_file(tmp, columnar(ROWS)),
    "json rows": lambda tmp: json_file(tmp, ROWS),
    "json data-wrapped rows": lambda tmp: json_file(tmp, {"data": ROWS, "version": 2}),
    "json rows-wrapped columns": lambda tmp: json_file(tmp, {"rows": columnar(ROWS)}),
    "json as str path": lambda tmp: str(json_file(tmp, ROWS)),
    "jsonl": jsonl_file,
    "csv json lists": csv_json_lists,
    "csv python lists": csv_python_lists,
    "parquet pyarrow": parquet_pyarrow,
    "parquet pandas": parquet_pandas,
    "pandas": lambda tmp: pd.DataFrame(ROWS),
    "pandas from parquet": lambda tmp: pd.read_parquet(parquet_pyarrow(tmp)),
    "datasets": lambda tmp: datasets.Dataset.from_list(ROWS),
    "datasets numpy format": lambda tmp: datasets.Dataset.from_list(ROWS).with_format("numpy"),
    "datasets one-split dict": lambda tmp: datasets.DatasetDict({"test": datasets.Dataset.from_list(ROWS)}),
    "ragas EvaluationDataset": ragas_dataset,
    "ragas sample list": lambda tmp: ragas_dataset(tmp).samples,
}
