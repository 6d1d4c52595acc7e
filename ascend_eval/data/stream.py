"""The one dataset reader: a source read as a stream of samples, each built as it is reached, and its checks
run in memory that does not grow with the number of samples. `load_dataset` is this stream held in memory.

`open_samples` accepts every source (`ascend_eval.data.loaders` lists them). Files are read as they are
iterated: `.jsonl` a line at a time (opening it reads it once for its columns, the union of the rows' keys,
without building a sample), `.csv` a row at a time, `.parquet` a batch at a time from its row groups; a
Hugging Face dataset is iterated row by row. A `.json` document and in-memory objects (dicts, lists of rows,
DataFrames, `Dataset`s) are held as the caller gave them; their samples are still built only as they are
iterated.

`check_samples` is `load_dataset`'s checks followed by `validate`'s, in one pass: the same first error,
with the same message, as `validate(load_dataset(source), requirements)`.

>>> stream = open_samples([{"question": "q", "answer": "a"}, {"id": "x", "question": "q2"}])
>>> stream.kind, stream.source, stream.columns
('rows', 'list of 2 rows', ('question', 'answer', 'id'))
>>> check_samples(stream, {"answer_relevancy": ["user_input"]})
2
>>> [sample.id for sample in stream], len(stream)
(['0', 'x'], 2)
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType
from typing import Any

import numpy as np

from ascend_eval.data.cells import make_sample, preview, repeated_ids_error
from ascend_eval.data.columns import column_roles
from ascend_eval.data.formats import (
    SUPPORTED_EXTENSIONS,
    csv_columns,
    describe_file,
    file_kind,
    file_rows,
    parquet_columns,
    read_json_file,
)
from ascend_eval.data.objects import (
    DATAFRAME_DESCRIPTION,
    Row,
    dataframe_columns,
    dataframe_rows,
    is_type,
    only_split,
    read_mapping,
    row_from_item,
    rows_from_items,
    union_keys,
)
from ascend_eval.data.sample import Column, Dataset, Sample
from ascend_eval.data.validation import SampleChecks, UserColumn
from ascend_eval.errors import DataError

__all__ = ["KINDS", "SampleStream", "check_samples", "open_samples"]

KINDS = ("jsonl", "csv", "parquet", "json", "pandas", "hf", "rows", "dataset")
"""What `SampleStream.kind` can be: the file format, or the kind of in-memory object."""


class SampleStream:
    """The samples of one source, built as they are iterated; every iteration is a fresh pass.

    `open_samples` makes one. `iter(stream)` yields the samples `load_dataset` would hold, in order;
    `stream.rows()` the raw rows they are built from. A cell of the wrong type is a `DataError` when its
    sample is reached; `check_samples` finds every such problem before a run starts.
    """

    __slots__ = (
        "_checked",
        "_dataset",
        "_length",
        "_rows",
        "columns",
        "kind",
        "lacking",
        "origin",
        "roles",
        "source",
    )

    def __init__(
        self,
        *,
        source: str,
        columns: Iterable[str],
        roles: Mapping[str, str],
        origin: Any,
        kind: str,
        rows: Callable[[], Iterator[Row]],
        length: int | None,
        dataset: Dataset | None = None,
    ) -> None:
        self.source = source
        """What messages call the source, the same as the `Dataset.source` `load_dataset` gives."""
        self.columns: tuple[str, ...] = tuple(columns)
        """The source's column names, as written there, in the order first seen."""
        self.roles: Mapping[str, str] = MappingProxyType(dict(roles))
        """What each column becomes: a `Column` value, `"id"` or `"metadata"`."""
        self.origin = origin
        """What the caller passed (a path, a DataFrame, a Hugging Face dataset, rows, a `Dataset`), for
        executors that read the source themselves."""
        self.kind = kind
        """One of `KINDS`."""
        self._rows = rows
        self._length = length
        self._dataset = dataset
        self.lacking: frozenset[Column] = frozenset()
        """After `check(..., may_lack=...)`: the columns of `may_lack` that some sample lacks."""
        self._checked: dict[str, frozenset[Any]] = {}

    def __iter__(self) -> Iterator[Sample]:
        """The samples, in source order, each built as it is reached (a `Dataset`'s own, as they are)."""
        if self._dataset is not None:
            yield from self._dataset
            return
        for index, row in enumerate(self._rows()):
            yield make_sample(index, row, self.roles)

    def rows(self) -> Iterator[Row]:
        """The raw rows the samples are built from, in source order (a `Dataset`'s as `Sample.to_row`)."""
        return self._rows()

    @property
    def row_roles(self) -> Mapping[str, str]:
        """What each key of `rows()` becomes, for `make_sample(index, row, stream.row_roles)`: `roles`, or,
        for a `Dataset` (whose rows are `Sample.to_row`'s), the id and our column names as themselves and
        every other key (its metadata) as metadata."""
        if self._dataset is None:
            return self.roles
        return MappingProxyType({"id": "id", **{column.value: column.value for column in Column}})

    def __len__(self) -> int:
        """The number of samples: known once `check_samples` has run, or from the start where the source
        says it cheaply (in-memory objects, a Parquet footer, the `.jsonl` pass that finds the columns).

        Raises:
            TypeError: it is not known yet (a `.csv` file, an iterable Hugging Face dataset).
        """
        if self._length is None:
            raise TypeError(
                f"the number of samples in the {self.source} is known once check_samples(...) has read it"
            )
        return self._length

    def check(
        self,
        requirements: Mapping[str, Iterable[Column | str | UserColumn]],
        *,
        warn_long_contexts: bool = True,
        may_lack: Iterable[Column] = (),
    ) -> int:
        """`check_samples(self, ...)`; `may_lack` as for `SampleChecks`, its finding kept in `lacking`.

        A check that passed with the long-context warning given and nothing lacking is remembered:
        `checked_count` then answers for the same requirements without reading the source again."""
        self._checked = {}
        checks = SampleChecks(requirements, warn_long_contexts=warn_long_contexts, may_lack=may_lack)
        if self._dataset is not None:  # load_dataset returns a Dataset as it is; only validate checks it
            for sample in self._dataset:
                checks.add(sample)
        else:
            ids = _IdHashes(self._length or 1024)
            problem: DataError | None = None
            for index, row in enumerate(self._rows()):
                if problem is not None:
                    continue  # read on: load_dataset reads the whole source before it builds a sample
                try:
                    sample = make_sample(index, row, self.roles)
                except DataError as exc:
                    problem = exc
                    continue
                ids.add(sample.id)
                checks.add(sample)
            if problem is not None:
                raise problem
            suspects = ids.repeated()
            if suspects:
                self._raise_repeated_ids(suspects)
        checks.finish(self.source, self.columns, self.roles)
        self._length = checks.count
        self.lacking = frozenset(checks.lacking)
        if warn_long_contexts and not self.lacking:
            self._checked = {metric: _needs(needed) for metric, needed in requirements.items()}
        return checks.count

    def checked_count(self, requirements: Mapping[str, Iterable[Column | str | UserColumn]]) -> int | None:
        """The number of samples where a `check` has passed already for these requirements (each metric's
        columns among those it checked), so that a second check would only read the source again; else
        None."""
        done = self._checked
        if not done or any(
            not _needs(needed) <= done.get(metric, frozenset()) for metric, needed in requirements.items()
        ):
            return None
        return self._length

    def _raise_repeated_ids(self, suspects: set[int]) -> None:
        """A second pass for the ids whose hashes repeat: `check_unique_ids`'s error if two samples share
        an id (not merely a hash). Memory grows only with the samples that share a hash."""
        positions: dict[str, list[int]] = {}
        for index, sample in enumerate(self):
            if hash(sample.id) in suspects:
                positions.setdefault(sample.id, []).append(index)
        repeated = {sample_id: where for sample_id, where in positions.items() if len(where) > 1}
        if repeated:
            raise repeated_ids_error(repeated, self.source)

    def __repr__(self) -> str:
        length = "?" if self._length is None else str(self._length)
        return (
            f"SampleStream({length} samples from {self.source}, kind={self.kind!r}, "
            f"columns={list(self.columns)})"
        )


def open_samples(source: Any, *, column_map: Mapping[str, str] | None = None) -> SampleStream:
    """Open a dataset as a stream of `Sample`s, without holding its rows.

    Args:
        source: Anything `load_dataset` accepts: a path to a `.json`, `.jsonl`, `.csv` or `.parquet`
            file, a pandas `DataFrame`, a `datasets.Dataset` or one-split `DatasetDict`, a RAGAS
            `EvaluationDataset`, a columnar dict, a list of row dicts or of `Sample`s, or a `Dataset`.
        column_map: As for `load_dataset`.

    A `SampleStream` is returned as it is (a job's, checked already: `SampleStream.checked_count`).

    Returns:
        A `SampleStream` whose samples are `load_dataset(source, column_map=column_map)`'s.

    Raises:
        DataError: What `load_dataset` raises for the source before it builds a sample: a missing or
            unreadable file, an unsupported extension or type, a malformed `.jsonl` line (the file is
            read once here for its columns), a `column_map` entry that names no column. Problems that
            only building the samples finds are left to `check_samples`.
        MissingDependencyError: A Parquet file is given and pyarrow is not installed.
    """
    if isinstance(source, SampleStream):
        if column_map:
            raise DataError(
                f"column_map={dict(column_map)!r} was passed with an opened stream ({source.source}); it "
                "only applies while opening. Pass the original source instead."
            )
        return source
    if isinstance(source, Dataset):
        if column_map:
            raise DataError(
                f"column_map={dict(column_map)!r} was passed with an already loaded Dataset "
                f"({source.source}); it only applies while loading. Pass the original source instead."
            )
        dataset = source
        return SampleStream(
            source=dataset.source,
            columns=dataset.columns,
            roles=dataset.column_roles,
            origin=dataset,
            kind="dataset",
            rows=lambda: (sample.to_row() for sample in dataset),
            length=len(dataset),
            dataset=dataset,
        )
    opened = _open(source)
    try:
        roles = column_roles(opened.columns, column_map)
    except DataError:
        if not opened.read:
            for _ in opened.rows():  # load_dataset reports a damaged source before a column_map problem
                pass
        raise
    return SampleStream(
        source=opened.description,
        columns=opened.columns,
        roles=roles,
        origin=source,
        kind=opened.kind,
        rows=opened.rows,
        length=opened.length,
    )


def check_samples(
    stream: SampleStream,
    requirements: Mapping[str, Iterable[Column | str | UserColumn]],
    *,
    warn_long_contexts: bool = True,
) -> int:
    """Check a stream as `validate(load_dataset(source), requirements)` checks its source, in one pass.

    Every sample is built and dropped: memory holds the counts, the first `MAX_LISTED` positions of each
    missing column, and one 8-byte hash per sample id (a second pass names the samples when two ids
    repeat). A cell error is raised only once the source has been read to its end, since a damaged file
    is what `load_dataset` reports first.

    Args:
        stream: From `open_samples`.
        requirements: Metric name -> the columns it needs, as for `validate`.
        warn_long_contexts: As for `validate`.

    Returns:
        The number of samples (then also `len(stream)`).

    Raises:
        DataError: With the message `load_dataset` or `validate` gives for the same source: a cell of
            the wrong type, two samples with one id, an empty dataset, a lone surrogate, samples that
            lack the columns their metrics need.
    """
    return stream.check(requirements, warn_long_contexts=warn_long_contexts)


def _needs(needed: Iterable[Column | str | UserColumn] | Column | str | UserColumn) -> frozenset[Any]:
    """A requirement's columns as a set, as `SampleChecks` reads them (one column, or several)."""
    if isinstance(needed, (str, Column, UserColumn)):
        return frozenset([needed])
    return frozenset(needed)


# --------------------------------------------------------------------------------------------------
# Sources -> columns and a way to read the rows


@dataclass(frozen=True)
class _Opened:
    kind: str
    description: str
    columns: list[str]
    rows: Callable[[], Iterator[Row]]
    length: int | None
    read: bool
    """Whether opening read every row already, so that any reading error has been raised."""


def _open(source: Any) -> _Opened:
    if isinstance(source, (str, os.PathLike)):
        try:
            path = Path(os.fspath(source)).expanduser()
        except RuntimeError as exc:  # "~someone/data.json" for a user this system does not know
            raise DataError(
                f"Cannot use {os.fspath(source)!r} as a dataset path: {str(exc).rstrip('.')}. Check the path."
            ) from None
        return _open_file(path)
    if is_type(source, "pandas", "DataFrame"):
        columns = dataframe_columns(source)
        rows = lambda: dataframe_rows(source, columns)  # noqa: E731
        return _Opened("pandas", DATAFRAME_DESCRIPTION, columns, rows, len(source), read=True)
    if is_type(source, "datasets", "DatasetDict", "IterableDatasetDict"):
        name, split = only_split(source)
        description = f"datasets.{type(source).__name__} split {name!r}"
        return _open_hf(split, description, f"split {name!r}")
    if is_type(source, "datasets", "Dataset", "IterableDataset"):
        return _open_hf(source, f"datasets.{type(source).__name__}", "datasets.Dataset")
    if isinstance(source, Mapping):
        columns, rows, _ = read_mapping(source, "dict")
        return _in_memory(columns, rows, f"dict of {len(rows)} rows")
    if hasattr(source, "samples") and not isinstance(source, (str, bytes)):
        rows = rows_from_items(source.samples, "EvaluationDataset.samples")
        return _in_memory(union_keys(rows), rows, f"{type(source).__name__} (RAGAS-style .samples)")
    if isinstance(source, Iterable) and not isinstance(source, (bytes, bytearray)):
        rows = rows_from_items(source, "list")
        return _in_memory(union_keys(rows), rows, f"list of {len(rows)} rows")
    raise DataError(
        f"Cannot load a dataset from a {type(source).__name__} ({preview(source)}). Pass a columnar dict, "
        f"a list of row dicts, a path to a {'/'.join(SUPPORTED_EXTENSIONS)} file, a pandas DataFrame, a "
        "datasets.Dataset or a RAGAS EvaluationDataset."
    )


def _open_file(path: Path) -> _Opened:
    description = describe_file(path)
    kind = file_kind(path)
    if kind == "jsonl":
        seen: dict[str, None] = {}
        count = 0
        for row in file_rows(path, kind):
            seen.update(dict.fromkeys(row))
            count += 1
        return _Opened(kind, description, list(seen), lambda: file_rows(path, kind), count, read=True)
    if kind == "csv":
        return _Opened(kind, description, csv_columns(path), lambda: file_rows(path, kind), None, read=False)
    if kind == "parquet":
        columns, count = parquet_columns(path)
        return _Opened(kind, description, columns, lambda: file_rows(path, kind), count, read=False)
    columns, rows, description = read_json_file(path)  # .json: one document, parsed whole
    return _Opened(kind, description, columns, lambda: iter(rows), len(rows), read=True)


def _open_hf(split: Any, description: str, items: str) -> _Opened:
    """A Hugging Face `Dataset` or `IterableDataset`, read row by row."""

    def rows() -> Iterator[Row]:
        for index, item in enumerate(split):
            yield row_from_item(index, item, items)

    names = getattr(split, "column_names", None)
    try:
        length: int | None = len(split)
    except TypeError:  # an IterableDataset
        length = None
    if names:
        return _Opened("hf", description, [str(n) for n in names], rows, length, read=False)
    seen: dict[str, None] = {}
    count = 0
    for row in rows():
        seen.update(dict.fromkeys(row))
        count += 1
    return _Opened("hf", description, [str(n) for n in seen], rows, count, read=True)


def _in_memory(columns: list[str], rows: list[Row], description: str) -> _Opened:
    return _Opened("rows", description, columns, lambda: iter(rows), len(rows), read=True)


# --------------------------------------------------------------------------------------------------
# Sample ids


class _IdHashes:
    """One 64-bit hash per sample id, in a growing array: repeats are found by sorting at the end."""

    def __init__(self, capacity: int) -> None:
        self._hashes = np.empty(max(capacity, 1), dtype=np.int64)
        self._count = 0

    def add(self, sample_id: str) -> None:
        if self._count == len(self._hashes):
            grown = np.empty(2 * len(self._hashes), dtype=np.int64)
            grown[: self._count] = self._hashes
            self._hashes = grown
        self._hashes[self._count] = hash(sample_id)
        self._count += 1

    def repeated(self) -> set[int]:
        """The hashes that more than one id has (sorts the array in place: call it once, at the end)."""
        ordered = self._hashes[: self._count]
        ordered.sort()
        return {int(h) for h in ordered[1:][ordered[1:] == ordered[:-1]]}
