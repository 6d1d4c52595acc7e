"""Read the dataset formats RAG pipelines produce into one `Dataset` of `Sample`s.

Accepted sources:

* the RAGAS / NeMo Evaluator columnar dict, `{"question": [...], "contexts": [[...], ...], ...}`;
* a list of row dicts (or of objects with `to_dict()` / `model_dump()`, such as RAGAS samples);
* a local file: `.json` (a columnar dict, a list of rows, or either wrapped as `{"data": ...}` or
  `{"rows": ...}`), `.jsonl`, `.csv` or `.parquet`;
* a pandas `DataFrame`, a Hugging Face `datasets.Dataset` (or a `DatasetDict` with one split) and a
  RAGAS `EvaluationDataset` (anything with a `.samples` list).

pandas, pyarrow and datasets are optional: the objects are recognised by their type names, and only the
Parquet reader imports pyarrow.

Column names are resolved in this order: `column_map`, then the current names, then the legacy aliases
(`question`, `answer`, `contexts`, `ground_truth`), then `ground_truths` (a list; its first element is
the reference). `id` or `sample_id` give the sample id. Every other column is kept in
`Sample.metadata`.

This module picks the reader; the work is split by concern: `formats` (files), `objects` (in-memory
objects), `columns` (column names -> roles) and `cells` (rows -> samples, cell by cell).
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from ascend_eval.data.cells import check_unique_ids, make_sample, preview
from ascend_eval.data.columns import column_roles
from ascend_eval.data.formats import INSTALL_HINT, SUPPORTED_EXTENSIONS, read_file
from ascend_eval.data.objects import (
    Row,
    is_type,
    read_dataframe,
    read_dataset_dict,
    read_mapping,
    rows_from_items,
    union_keys,
)
from ascend_eval.data.sample import Dataset
from ascend_eval.models.errors import DataError

__all__ = ["INSTALL_HINT", "SUPPORTED_EXTENSIONS", "load_dataset"]


def load_dataset(source: Any, *, column_map: Mapping[str, str] | None = None) -> Dataset:
    """Read a dataset into `Sample`s, resolving legacy column names and checking each cell's type.

    Args:
        source: A columnar dict, a list of row dicts, a path (`str` or `Path`) to a `.json`,
            `.jsonl`, `.csv` or `.parquet` file, a pandas `DataFrame`, a `datasets.Dataset` or
            one-split `DatasetDict`, a RAGAS `EvaluationDataset`, or a list of `Sample`s (their ids
            and metadata are kept). A `Dataset` is returned as is.
        column_map: Maps our column name (current or legacy, or `"id"`) to the dataset's column name,
            e.g. `{"user_input": "query", "retrieved_contexts": "docs"}`. Applied before the aliases;
            columns it overrides are kept in metadata.

    Returns:
        A `Dataset` with one `Sample` per row, in source order. Its `columns` are the source's column
        names as written there.

    Raises:
        DataError: The file is missing or unreadable; the extension is not supported; the columns of a
            columnar dict differ in length; a `column_map` entry names an unknown column; a row gives
            different values under a legacy and a current name; a cell has the wrong type; two samples
            share an id. The message names the sample, the column and the fix.
        MissingDependencyError: A Parquet file is given and pyarrow is not installed.

    Cells: NaN and None mean "absent"; so does an empty CSV cell (CSV cannot tell it from an empty
    string; use JSON to keep one). A context column holds a list of strings; a string cell in it must
    be a list written as text, JSON (`["a", "b"]`) or a Python literal (`['a', 'b']`, as pandas writes
    lists): a plain string is a `DataError`, never silently one context. numpy arrays become tuples.
    Strings are kept exactly (no stripping), but text with a lone surrogate (not valid Unicode) is a
    `DataError`, as is a value nested too deeply to read.

    >>> ds = load_dataset({"question": ["什么是RAG？"], "contexts": [["检索增强生成。"]]})
    >>> ds[0].user_input, ds[0].retrieved_contexts, ds[0].id, ds.columns
    ('什么是RAG？', ('检索增强生成。',), '0', ('question', 'contexts'))
    """
    if isinstance(source, Dataset):
        if column_map:
            raise DataError(
                f"column_map={dict(column_map)!r} was passed with an already loaded Dataset "
                f"({source.source}); it only applies while loading. Pass the original source instead."
            )
        return source
    columns, rows, description = _read(source)
    roles = column_roles(columns, column_map)
    samples = [make_sample(index, row, roles) for index, row in enumerate(rows)]
    check_unique_ids(samples, description)
    return Dataset(samples, columns=columns, source=description, column_roles=roles)


# --------------------------------------------------------------------------------------------------
# Sources -> (columns, rows, description)


def _read(source: Any) -> tuple[list[str], list[Row], str]:
    if isinstance(source, (str, os.PathLike)):
        try:
            path = Path(os.fspath(source)).expanduser()
        except RuntimeError as exc:  # "~someone/data.json" for a user this system does not know
            raise DataError(
                f"Cannot use {os.fspath(source)!r} as a dataset path: {str(exc).rstrip('.')}. Check the path."
            ) from None
        return read_file(path)
    # The optional libraries are recognised by type name so that none of them is imported here.
    if is_type(source, "pandas", "DataFrame"):
        return read_dataframe(source)
    if is_type(source, "datasets", "DatasetDict", "IterableDatasetDict"):
        return read_dataset_dict(source)
    if is_type(source, "datasets", "Dataset", "IterableDataset"):
        rows = rows_from_items(source, "datasets.Dataset")
        names = getattr(source, "column_names", None)
        columns = [str(n) for n in names] if names else union_keys(rows)
        return columns, rows, f"datasets.{type(source).__name__}"
    if isinstance(source, Mapping):
        columns, rows, _ = read_mapping(source, "dict")
        return columns, rows, f"dict of {len(rows)} rows"
    if hasattr(source, "samples") and not isinstance(source, (str, bytes)):
        rows = rows_from_items(source.samples, "EvaluationDataset.samples")
        return union_keys(rows), rows, f"{type(source).__name__} (RAGAS-style .samples)"
    if isinstance(source, Iterable) and not isinstance(source, (bytes, bytearray)):
        rows = rows_from_items(source, "list")
        return union_keys(rows), rows, f"list of {len(rows)} rows"
    raise DataError(
        f"Cannot load a dataset from a {type(source).__name__} ({preview(source)}). Pass a columnar dict, "
        f"a list of row dicts, a path to a {'/'.join(SUPPORTED_EXTENSIONS)} file, a pandas DataFrame, a "
        "datasets.Dataset or a RAGAS EvaluationDataset."
    )
