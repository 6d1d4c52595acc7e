#!/usr/bin/env python3
"""Convert a RAG evaluation dataset between formats.

Reads anything `ascend_eval.load_dataset` reads (JSON, JSONL, CSV, Parquet; current or legacy RAGAS
column names; --column-map for others) and writes JSON in the ragas/NeMo columnar layout, JSONL rows,
CSV (contexts as JSON lists) or Parquet, by the output file's extension.

    python scripts/convert_dataset.py data.csv data.json                  # NeMo Evaluator's columnar JSON
    python scripts/convert_dataset.py data.json data.jsonl --names current
    python scripts/convert_dataset.py q.parquet q.json --column-map user_input=query retrieved_contexts=docs
"""

from __future__ import annotations

import argparse
import csv
import json
import sys
from pathlib import Path

from ascend_eval.data import Column, load_dataset
from ascend_eval.models.errors import AscendEvalError


def rows(dataset, names: str) -> list[dict]:
    out = []
    for sample in dataset:
        row = {"id": sample.id}
        for column in Column:
            value = sample.get(column)
            if value is None:
                continue
            key = (column.legacy_name or column.value) if names == "legacy" else column.value
            row[key] = list(value) if isinstance(value, tuple) else value
        out.append(row)
    return out


def write(records: list[dict], path: Path) -> None:
    columns = list(dict.fromkeys(k for r in records for k in r))
    suffix = path.suffix.lower()
    if suffix == ".json":
        columnar = {c: [r.get(c) for r in records] for c in columns}
        path.write_text(json.dumps(columnar, ensure_ascii=False, indent=1), encoding="utf-8")
    elif suffix == ".jsonl":
        path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records), encoding="utf-8")
    elif suffix == ".csv":
        with path.open("w", newline="", encoding="utf-8") as f:
            writer = csv.DictWriter(f, fieldnames=columns)
            writer.writeheader()
            for r in records:
                writer.writerow(
                    {k: json.dumps(v, ensure_ascii=False) if isinstance(v, list) else v for k, v in r.items()}
                )
    elif suffix == ".parquet":
        import pandas as pd

        pd.DataFrame(records, columns=columns).to_parquet(path, index=False)
    else:
        raise AscendEvalError(f"Output {path} has extension {suffix!r}; use .json, .jsonl, .csv or .parquet.")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("source", help="input file")
    parser.add_argument("target", type=Path, help="output file (.json, .jsonl, .csv, .parquet)")
    parser.add_argument(
        "--names",
        choices=["legacy", "current"],
        default="legacy",
        help="column names to write: legacy (question/contexts/answer/ground_truth, NeMo's "
        "format) or current (user_input/retrieved_contexts/response/reference)",
    )
    parser.add_argument("--column-map", nargs="+", default=[], metavar="OURS=THEIRS")
    args = parser.parse_args(argv)
    try:
        column_map = dict(pair.split("=", 1) for pair in args.column_map) or None
        dataset = load_dataset(args.source, column_map=column_map)
        write(rows(dataset, args.names), args.target)
    except (AscendEvalError, ValueError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    print(f"wrote {len(dataset)} samples to {args.target}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
