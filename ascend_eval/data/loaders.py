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

`load_dataset` is the stream of `ascend_eval.data.stream.open_samples` held in memory: one reader picks
the format and reads it, for a run that streams its samples and for a caller that wants them all. The
work is split by concern: `formats` (files), `objects` (in-memory objects), `columns` (column names ->
roles) and `cells` (rows -> samples, cell by cell).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ascend_eval.data.cells import check_unique_ids, make_sample
from ascend_eval.data.formats import INSTALL_HINT, SUPPORTED_EXTENSIONS
from ascend_eval.data.sample import Dataset
from ascend_eval.data.stream import open_samples

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
    if isinstance(source, Dataset) and not column_map:
        return source
    stream = open_samples(source, column_map=column_map)  # the source's errors, as a run reports them
    rows = list(stream.rows())  # the whole source is read before a sample is built: a damaged file first
    samples = [make_sample(index, row, stream.roles) for index, row in enumerate(rows)]
    check_unique_ids(samples, stream.source)
    return Dataset(samples, columns=stream.columns, source=stream.source, column_roles=stream.roles)
