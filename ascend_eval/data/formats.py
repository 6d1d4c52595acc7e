"""Files -> (columns, rows, description): `.json`, `.jsonl`, `.csv` and `.parquet`.

Only the Parquet reader imports pyarrow (an optional dependency); JSON and CSV use the standard library.
"""

from __future__ import annotations

import contextlib
import csv
import json
import re
from collections.abc import Iterator, Mapping
from pathlib import Path

from ascend_eval.data.objects import Row, read_mapping, rows_from_items, union_keys
from ascend_eval.models.errors import DataError, MissingDependencyError

SUPPORTED_EXTENSIONS: tuple[str, ...] = (".json", ".jsonl", ".csv", ".parquet")
"""File extensions `load_dataset` reads (case-insensitive)."""

INSTALL_HINT = "pip install 'ascend-eval[data]'"

# pandas writes a non-default DataFrame index into Parquet under this name; it is not a data column.
_PANDAS_INDEX_COLUMN = re.compile(r"__index_level_\d+__")
# csv's default field limit (128 KiB) is smaller than some retrieved-context lists. 2**31 - 1 is the
# largest value every platform's C long accepts.
_CSV_FIELD_LIMIT = 2**31 - 1


def read_file(path: Path) -> tuple[list[str], list[Row], str]:
    """A dataset file's columns, rows and description, by its extension.

    Raises:
        DataError: the file is missing, a directory, not UTF-8, malformed, or of another extension.
        MissingDependencyError: a Parquet file without pyarrow.
    """
    description = f"file '{path}'"
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
    extension = path.suffix.lower()
    if extension == ".parquet":
        columns, rows = _read_parquet(path)
        return columns, rows, description
    if extension not in SUPPORTED_EXTENSIONS:
        raise DataError(
            f"Cannot read '{path}': unsupported extension {extension or '(none)'!r}. Supported extensions: "
            f"{list(SUPPORTED_EXTENSIONS)}. Convert the file to one of them, or load it yourself and pass "
            "the rows."
        )
    try:
        if extension == ".csv":
            columns, rows = _read_csv(path)
            return columns, rows, description
        text = path.read_text(encoding="utf-8-sig")
    except UnicodeDecodeError as exc:
        raise DataError(
            f"'{path}' is not UTF-8 text (bad byte at offset {exc.start}). Re-save it as UTF-8, e.g. "
            f"`iconv -f GBK -t UTF-8 '{path}' > out{extension}`."
        ) from exc
    except OSError as exc:
        raise DataError(
            f"Cannot read '{path}': {exc.strerror or exc}. Check the file's permissions."
        ) from exc
    if extension == ".jsonl":
        rows = _parse_jsonl(text, path)
        return union_keys(rows), rows, description
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


def _parse_jsonl(text: str, path: Path) -> list[Row]:
    rows: list[Row] = []
    for line_number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
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
        rows.append(row)
    return rows


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


def _read_csv(path: Path) -> tuple[list[str], list[Row]]:
    # The stdlib reader keeps every cell as the exact text written (pandas would turn "42" into an
    # int and "None" or "NA" into NaN); only an empty cell means "absent".
    with _csv_field_limit(_CSV_FIELD_LIMIT), path.open(encoding="utf-8-sig", newline="") as handle:
        reader = csv.DictReader(handle)
        columns = list(reader.fieldnames or [])
        repeated = sorted({name for name in columns if columns.count(name) > 1})
        if repeated:
            raise DataError(
                f"'{path}': the header repeats column(s) {repeated}. Rename them so each is unique."
            )
        rows: list[Row] = []
        try:
            for row in reader:
                if None in row:
                    raise DataError(
                        f"'{path}', line {reader.line_num}: more fields than the {len(columns)} header "
                        "columns. Quote cells that contain commas or line breaks."
                    )
                rows.append({name: (None if cell in (None, "") else cell) for name, cell in row.items()})
        except csv.Error as exc:
            raise DataError(
                f"'{path}', line {reader.line_num}: not valid CSV ({exc}). Quote cells that contain commas, "
                "quotes or line breaks (a quote inside a quoted cell is written twice)."
            ) from None
    return columns, rows


def _read_parquet(path: Path) -> tuple[list[str], list[Row]]:
    try:
        # Lazy: pyarrow is an optional dependency and heavy to import.
        import pyarrow.parquet as pq
    except ImportError as exc:
        raise MissingDependencyError(
            f"Reading the Parquet file '{path}' needs pyarrow, which is not installed. Install it with "
            f"{INSTALL_HINT}, or convert the file to .jsonl or .csv."
        ) from exc
    import pyarrow as pa

    try:
        table = pq.read_table(path)
        columns = [name for name in table.column_names if not _PANDAS_INDEX_COLUMN.fullmatch(name)]
        rows = table.select(columns).to_pylist()
    except (OSError, ValueError, TypeError, NotImplementedError, pa.ArrowException) as exc:
        raise DataError(
            f"Cannot read the Parquet file '{path}': {exc}. Check that it is a valid Parquet file."
        ) from exc
    return columns, rows
