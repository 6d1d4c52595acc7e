"""A source's rows in blocks, for an executor that spreads a dataset over workers (the Ray executor).

Every decision about a format is taken here, by the readers `open_samples` uses, so that a dataset gives
the same rows on a cluster as in one process, and `make_sample` the same samples from them:

* `.jsonl` and `.csv` files (`ROW_FILES`) are read where they lie, by our own readers (`file_rows`),
  `size` rows at a time (`file_blocks`): one task reads a file, as a cluster's own reader reads one file.
  Encodings, byte-order marks, blank lines, quoting, and which cell is empty are decided once.
* `.parquet` files (`ARROW_FILES`) are read in blocks across the cluster by its own Arrow reader, which
  splits a file by row groups; `arrow_rows` makes each block rows, as `iter_parquet_rows` makes its
  batches rows (a pandas index column is not a data column).
* Everything else (a `.json` document, in-memory objects, a `Dataset`) is read by the driver:
  `stream.rows()` in blocks (`row_blocks`), each key resolved by `stream.row_roles`.

What a cell means (a CSV cell holding a JSON list, NaN as absent) and which column is which (`column_map`)
are decided afterwards, on each row, by `make_sample` with the stream's roles.

>>> from ascend_eval.data.cells import make_sample
>>> from ascend_eval.data.stream import open_samples
>>> stream = open_samples([{"question": "q"}, {"question": "q2", "id": "b"}, {"question": "q3"}])
>>> stream.kind in ROW_FILES + ARROW_FILES
False
>>> [[make_sample(0, row, stream.row_roles).user_input for row in b] for b in row_blocks(stream.rows(), 2)]
[['q', 'q2'], ['q3']]
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from pathlib import Path

from ascend_eval.data.formats import arrow_rows, file_rows
from ascend_eval.data.objects import Row

__all__ = ["ARROW_FILES", "ROW_FILES", "arrow_rows", "file_blocks", "row_blocks"]

ROW_FILES = ("jsonl", "csv")
"""The stream kinds whose file a worker reads where it lies with our own reader (`file_blocks`)."""
ARROW_FILES = ("parquet",)
"""The stream kinds whose file a cluster's Arrow reader reads in blocks, each made rows by `arrow_rows`."""


def row_blocks(rows: Iterable[Row], size: int) -> Iterator[list[Row]]:
    """`rows` in lists of `size` (the last one shorter), read as they are needed."""
    block: list[Row] = []
    for row in rows:
        block.append(row)
        if len(block) >= size:
            yield block
            block = []
    if block:
        yield block


def file_blocks(path: str | Path, kind: str, size: int) -> Iterator[list[Row]]:
    """The rows of the `kind` file at `path` (one of `ROW_FILES`), read by `open_samples`'s reader for
    it, `size` at a time.

    Raises:
        DataError: what that reader raises for the file (its messages name the line and the fix).
    """
    return row_blocks(file_rows(Path(path), kind), size)
