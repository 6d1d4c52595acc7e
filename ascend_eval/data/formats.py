"""Dataset files: `.json` read whole, `.jsonl`, `.csv` and `.parquet` a row at a time.

Only the Parquet reader imports pyarrow (an optional dependency); JSON and CSV use the standard library.

Text files are UTF-8, with or without byte-order marks: every BOM at the start of the file is dropped (a
file re-saved by an editor that adds one has two, and the second one would be read as the start of the
first column's name, so that an `id` column went unrecognised), and so is every BOM at the start of a
`.jsonl` line (two files with BOMs joined with `cat`).
"""

from __future__ import annotations

import codecs
import contextlib
import csv
import json
import re
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from ascend_eval.data.corpus import require_regular_file
from ascend_eval.data.objects import Row, read_mapping, rows_from_items, union_keys
from ascend_eval.errors import DataError, MissingDependencyError

SUPPORTED_EXTENSIONS: tuple[str, ...] = (".json", ".jsonl", ".csv", ".parquet")
"""File extensions `load_dataset` reads (case-insensitive)."""

INSTALL_HINT = "pip install 'ascend-eval[data]'"

# pandas writes a non-default DataFrame index into Parquet under this name; it is not a data column.
_PANDAS_INDEX_COLUMN = re.compile(r"__index_level_\d+__")
# csv's default field limit (128 KiB) is smaller than some retrieved-context lists. 2**31 - 1 is the
# largest value every platform's C long accepts.
_CSV_FIELD_LIMIT = 2**31 - 1
BOM = "\ufeff"
"""U+FEFF, the byte-order mark, as text: the `utf-8-sig` codec drops one at the start, not more."""


def read_json_file(path: Path) -> tuple[list[str], list[Row], str]:
    """A `.json` dataset file's columns, rows and description: one document, parsed whole (a columnar
    object, a list of rows, or either wrapped as {"data": ...} or {"rows": ...}). The other formats are
    read a row at a time (`iter_jsonl_rows`, `iter_csv_rows`, `iter_parquet_rows`).

    Raises:
        DataError: the file is not UTF-8, not valid JSON, or holds something else than rows.
    """
    description = describe_file(path)
    try:
        text = path.read_text(encoding="utf-8-sig").lstrip(BOM)
    except UnicodeDecodeError as exc:
        raise _not_utf8(path, ".json", exc.start) from exc
    except OSError as exc:
        raise _unreadable(path, exc) from exc
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise DataError(
            f"'{path}' is not valid JSON: {exc.msg} at line {exc.lineno}, column {exc.colno}. Fix the file; "
            "if it holds one JSON object per line, give it the .jsonl extension."
        ) from exc
    except (RecursionError, ValueError) as exc:
        raise DataError(f"'{path}' cannot be read as JSON: {_json_problem(exc)}") from None
    if isinstance(data, Mapping):
        columns, rows, _ = read_mapping(data, description)
        return columns, rows, description
    if isinstance(data, list):
        rows = rows_from_items(data, description)
        return union_keys(rows), rows, description
    raise DataError(
        f"'{path}' holds a JSON {type(data).__name__}; expected a list of row objects or an object mapping "
        'each column to a list (optionally wrapped as {"data": ...} or {"rows": ...}).'
    )


def describe_file(path: Path) -> str:
    """How messages name a dataset file (`Dataset.source`)."""
    return f"file '{path}'"


def file_extension(path: Path) -> str:
    """The lower-case extension of a dataset file that exists and is of a format read here.

    Raises:
        DataError: the path is unusable, missing or a directory, or the extension is not supported.
    """
    try:
        exists, is_dir = path.exists(), path.is_dir()
    except (OSError, ValueError) as exc:  # a NUL byte in the name, a name too long for the system
        raise DataError(
            f"Cannot use {str(path)!r} as a dataset path: {str(exc).rstrip('.')}. Check the path."
        ) from None
    if not exists:
        raise DataError(
            f"Dataset file '{path}' does not exist (resolved to '{path.absolute()}'). Check the path. "
            "load_dataset reads local files only; for a Hugging Face Hub dataset, load it with "
            "datasets.load_dataset(...) and pass the result."
        )
    if is_dir:
        raise DataError(
            f"'{path}' is a directory. Pass one dataset file ({', '.join(SUPPORTED_EXTENSIONS)})."
        )
    try:
        info = path.stat()
    except OSError as exc:
        raise _unreadable(path, exc) from None
    # Before it is opened: opening a FIFO waits for a writer, and a device never ends.
    require_regular_file(info, f"dataset file '{path}'", "Pass a JSON, JSONL, CSV or Parquet file.")
    extension = path.suffix.lower()
    if extension not in SUPPORTED_EXTENSIONS:
        raise DataError(
            f"Cannot read '{path}': unsupported extension {extension or '(none)'!r}. Supported extensions: "
            f"{list(SUPPORTED_EXTENSIONS)}. Convert the file to one of them, or load it yourself and pass "
            "the rows."
        )
    return extension


def _not_utf8(path: Path, extension: str, offset: int) -> DataError:
    return DataError(
        f"'{path}' is not UTF-8 text (bad byte at offset {offset}). Re-save it as UTF-8, e.g. "
        f"`iconv -f GBK -t UTF-8 '{path}' > out{extension}`."
    )


def _unreadable(path: Path, exc: OSError) -> DataError:
    return DataError(f"Cannot read '{path}': {exc.strerror or exc}. Check the file's permissions.")


def _jsonl_row(line: str, line_number: int, path: Path) -> Row:
    try:
        row = json.loads(line)
    except json.JSONDecodeError as exc:
        raise DataError(
            f"'{path}', line {line_number}: not valid JSON ({exc.msg}, column {exc.colno}). Each line of "
            "a .jsonl file must be one JSON object; if the file is one JSON document, name it .json."
        ) from exc
    except (RecursionError, ValueError) as exc:
        raise DataError(f"'{path}', line {line_number}: {_json_problem(exc)}") from None
    if not isinstance(row, dict):
        raise DataError(
            f"'{path}', line {line_number}: a JSON {type(row).__name__}, not an object. Each line must "
            'be one row, e.g. {"question": "...", "answer": "..."}.'
        )
    return row


def _json_problem(exc: Exception) -> str:
    """What json.loads could not do, beyond a syntax error, and the fix."""
    if isinstance(exc, RecursionError):
        return (
            "it nests arrays or objects too deeply for Python's parser (thousands of levels). A dataset "
            "is a list of rows or an object of columns; flatten the file."
        )
    # Python refuses to convert integers of more than 4300 digits (CVE-2020-10735).
    return f"{exc}. Write such values as strings."


@contextlib.contextmanager
def _csv_field_limit(limit: int) -> Iterator[None]:
    previous = csv.field_size_limit(limit)
    try:
        yield
    finally:
        csv.field_size_limit(previous)


def _csv_reader(path: Path) -> Iterator[Any]:
    """The header's column names, then each row. csv's field limit is raised only while the reader
    parses, so that a paused stream leaves the process's limit as it was."""
    # The stdlib reader keeps every cell as the exact text written (pandas would turn "42" into an
    # int and "None" or "NA" into NaN); only an empty cell means "absent".
    with path.open(encoding="utf-8-sig", newline="") as handle:
        reader = csv.DictReader(_without_leading_boms(handle))
        with _csv_field_limit(_CSV_FIELD_LIMIT):
            columns = list(reader.fieldnames or [])
        repeated = sorted({name for name in columns if columns.count(name) > 1})
        if repeated:
            raise DataError(
                f"'{path}': the header repeats column(s) {repeated}. Rename them so each is unique."
            )
        yield columns
        while True:
            try:
                with _csv_field_limit(_CSV_FIELD_LIMIT):
                    row = next(reader, None)
            except csv.Error as exc:
                raise DataError(
                    f"'{path}', line {reader.line_num}: not valid CSV ({exc}). Quote cells that contain "
                    "commas, quotes or line breaks (a quote inside a quoted cell is written twice)."
                ) from None
            if row is None:
                return
            if None in row:
                raise DataError(
                    f"'{path}', line {reader.line_num}: more fields than the {len(columns)} header "
                    "columns. Quote cells that contain commas or line breaks."
                )
            yield {name: (None if cell in (None, "") else cell) for name, cell in row.items()}


def _without_leading_boms(lines: Iterator[str]) -> Iterator[str]:
    """`lines` with every BOM at the start of the first one dropped (`utf-8-sig` drops only one), so that
    a header `\\ufeff"id",...` is read as the quoted name `id`, not as `\\ufeff"id"`."""
    for number, line in enumerate(lines):
        yield line.lstrip(BOM) if number == 0 else line


def _arrow_errors(pa: Any) -> tuple[type[BaseException], ...]:
    """What pyarrow raises for a file it cannot read as Parquet."""
    return (OSError, ValueError, TypeError, NotImplementedError, pa.ArrowException)


def _pyarrow(path: Path) -> tuple[Any, Any]:
    """pyarrow and pyarrow.parquet, or the MissingDependencyError that names the Parquet file."""
    try:
        # Lazy: pyarrow is an optional dependency and heavy to import.
        import pyarrow.parquet as pq
    except ImportError as exc:
        raise MissingDependencyError(
            f"Reading the Parquet file '{path}' needs pyarrow, which is not installed. Install it with "
            f"{INSTALL_HINT}, or convert the file to .jsonl or .csv."
        ) from exc
    import pyarrow as pa

    return pa, pq


def _data_columns(names: list[str]) -> list[str]:
    return [name for name in names if not _PANDAS_INDEX_COLUMN.fullmatch(name)]


def _bad_parquet(path: Path, exc: Exception) -> DataError:
    return DataError(f"Cannot read the Parquet file '{path}': {exc}. Check that it is a valid Parquet file.")


# --------------------------------------------------------------------------------------------------
# `.jsonl`, `.csv` and Parquet read a row at a time, in memory that does not grow with the file
# (`ascend_eval.data.stream`; `load_dataset` holds what they give).


def iter_jsonl_rows(path: Path) -> Iterator[Row]:
    """The rows of a `.jsonl` file, read a line at a time (blank lines skipped, a BOM at the start of a
    line dropped).

    A byte that is not UTF-8 anywhere in the file is reported before a malformed line: after a malformed
    line this reads on, and reports such a byte instead when there is one.

    Raises:
        DataError: a byte that is not UTF-8, a line that is not one JSON object, an unreadable file.
    """
    problem: DataError | None = None
    for line_number, raw in _text_lines(path, ".jsonl"):
        line = raw.lstrip(BOM)
        if problem is not None or not line.strip():
            continue
        try:
            row = _jsonl_row(line, line_number, path)
        except DataError as exc:
            problem = exc
            continue
        yield row
    if problem is not None:
        raise problem


def _text_lines(path: Path, extension: str) -> Iterator[tuple[int, str]]:
    """(number, line) for each of `path.read_text(encoding="utf-8-sig").splitlines()`, reading one line of
    bytes at a time. A byte that is not UTF-8 is reported at the offset read_text gives it (counted after
    a BOM, which the decoder drops)."""
    decoder = codecs.getincrementaldecoder("utf-8-sig")()
    number = fed = 0
    bom = False
    try:
        with path.open("rb") as handle:
            while True:
                chunk = handle.readline()  # up to b"\n": no UTF-8 sequence holds that byte
                if fed == 0:
                    bom = chunk.startswith(codecs.BOM_UTF8)
                start = fed - len(decoder.getstate()[0])  # where this call's bytes start in the file
                fed += len(chunk)
                try:
                    text = decoder.decode(chunk, final=not chunk)
                except UnicodeDecodeError as exc:
                    # The first call's offsets already leave out the BOM it drops; later ones count it.
                    dropped = len(codecs.BOM_UTF8) if bom and start > 0 else 0
                    raise _not_utf8(path, extension, start + exc.start - dropped) from exc
                # `text` ends with a line break (or the file), so its lines are the whole text's.
                for line in text.splitlines():
                    number += 1
                    yield number, line
                if not chunk:
                    return
    except OSError as exc:
        raise _unreadable(path, exc) from exc


def csv_columns(path: Path) -> list[str]:
    """A `.csv` file's column names (its header)."""
    reader = _streamed_csv(path)
    try:
        return next(reader)
    finally:
        reader.close()


def iter_csv_rows(path: Path) -> Iterator[Row]:
    """The rows of a `.csv` file, read one at a time: each cell the exact text written, an empty one None."""
    reader = _streamed_csv(path)
    next(reader)  # the header
    yield from reader


def _streamed_csv(path: Path) -> Iterator[Any]:
    try:
        yield from _csv_reader(path)
    except UnicodeDecodeError as exc:
        raise _not_utf8(path, ".csv", exc.start) from exc
    except OSError as exc:
        raise _unreadable(path, exc) from exc


def parquet_columns(path: Path) -> tuple[list[str], int]:
    """A Parquet file's data columns (pandas index columns left out) and row count, from its footer."""
    handle = _open_parquet(path)
    try:
        return _data_columns(handle.schema_arrow.names), handle.metadata.num_rows
    finally:
        handle.close()


def iter_parquet_rows(path: Path, *, batch_size: int = 1024) -> Iterator[Row]:
    """The rows of a Parquet file, read `batch_size` rows at a time."""
    pa, _ = _pyarrow(path)
    handle = _open_parquet(path)
    try:
        # Every column is read, the index ones too: a damaged index column is an error, as it is for
        # pyarrow's read_table.
        for batch in handle.iter_batches(batch_size=batch_size):
            yield from arrow_rows(pa.Table.from_batches([batch]))
    except _arrow_errors(pa) as exc:
        raise _bad_parquet(path, exc) from exc
    finally:
        handle.close()


def arrow_rows(table: Any) -> list[Row]:
    """The rows of an Arrow table read from a Parquet file, as `iter_parquet_rows` gives them: its data
    columns only (a pandas index column is not one), each cell as pyarrow gives it in Python."""
    return table.select(_data_columns(table.column_names)).to_pylist()


def file_rows(path: Path, kind: str) -> Iterator[Row]:
    """The rows of a `.jsonl`, `.csv` or `.parquet` file, read a row at a time by the reader of its `kind`
    (the extension without its dot, as `file_kind` gives it): the one table of which reader reads which
    format, for `open_samples` and for the blocks a cluster reads (`ascend_eval.data.blocks`)."""
    readers = {"jsonl": iter_jsonl_rows, "csv": iter_csv_rows, "parquet": iter_parquet_rows}
    return readers[kind](path)


def file_kind(path: Path) -> str:
    """The format of a dataset file that exists and is of a format read here: its lower-case extension
    without the dot ("json", "jsonl", "csv", "parquet").

    Raises:
        DataError: as `file_extension`.
    """
    return file_extension(path).lstrip(".")


def _open_parquet(path: Path) -> Any:
    pa, pq = _pyarrow(path)
    try:
        return pq.ParquetFile(path)
    except _arrow_errors(pa) as exc:
        # read_table words a file it cannot open more plainly ("Could not open Parquet input source
        # ..."), and fails as fast: its message, where it fails too.
        try:
            pq.read_table(path)
        except _arrow_errors(pa) as plainer:
            raise _bad_parquet(path, plainer) from plainer
        raise _bad_parquet(path, exc) from exc
