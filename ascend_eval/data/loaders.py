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
"""

from __future__ import annotations

import ast
import contextlib
import csv
import difflib
import json
import math
import os
import re
from collections.abc import Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from ascend_eval.data.sample import (
    GROUND_TRUTHS,
    ID_COLUMNS,
    LEGACY_ALIASES,
    Column,
    Dataset,
    Sample,
    default_role,
)
from ascend_eval.models.errors import DataError, MissingDependencyError

SUPPORTED_EXTENSIONS: tuple[str, ...] = (".json", ".jsonl", ".csv", ".parquet")
"""File extensions `load_dataset` reads (case-insensitive)."""

INSTALL_HINT = "pip install 'ascend-eval[data]'"

_WRAPPER_KEYS = ("data", "rows")
# pandas writes a non-default DataFrame index into Parquet under this name; it is not a data column.
_PANDAS_INDEX_COLUMN = re.compile(r"__index_level_\d+__")
# csv's default field limit (128 KiB) is smaller than some retrieved-context lists. 2**31 - 1 is the
# largest value every platform's C long accepts.
_CSV_FIELD_LIMIT = 2**31 - 1

Row = dict[str, Any]


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
    string; use JSON to keep one). A context column holds a list of strings; a string cell in it is
    read as a JSON list (`["a", "b"]`), a Python-literal list (`['a', 'b']`) or else one context.
    numpy arrays become tuples. Strings are kept exactly (no stripping).

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
    roles = _column_roles(columns, column_map)
    samples = [_make_sample(index, row, roles) for index, row in enumerate(rows)]
    _check_unique_ids(samples, description)
    return Dataset(samples, columns=columns, source=description, column_roles=roles)


# --------------------------------------------------------------------------------------------------
# Sources -> (columns, rows, description)


def _read(source: Any) -> tuple[list[str], list[Row], str]:
    if isinstance(source, (str, os.PathLike)):
        return _read_file(Path(os.fspath(source)).expanduser())
    # The optional libraries are recognised by type name so that none of them is imported here.
    if _is_type(source, "pandas", "DataFrame"):
        return _read_dataframe(source)
    if _is_type(source, "datasets", "DatasetDict", "IterableDatasetDict"):
        return _read_dataset_dict(source)
    if _is_type(source, "datasets", "Dataset", "IterableDataset"):
        rows = _rows_from_items(source, "datasets.Dataset")
        names = getattr(source, "column_names", None)
        columns = [str(n) for n in names] if names else _union_keys(rows)
        return columns, rows, f"datasets.{type(source).__name__}"
    if isinstance(source, Mapping):
        columns, rows, _ = _read_mapping(source, "dict")
        return columns, rows, f"dict of {len(rows)} rows"
    if hasattr(source, "samples") and not isinstance(source, (str, bytes)):
        rows = _rows_from_items(source.samples, "EvaluationDataset.samples")
        return _union_keys(rows), rows, f"{type(source).__name__} (RAGAS-style .samples)"
    if isinstance(source, Iterable) and not isinstance(source, (bytes, bytearray)):
        rows = _rows_from_items(source, "list")
        return _union_keys(rows), rows, f"list of {len(rows)} rows"
    raise DataError(
        f"Cannot load a dataset from a {type(source).__name__} ({_preview(source)}). Pass a columnar dict, "
        f"a list of row dicts, a path to a {'/'.join(SUPPORTED_EXTENSIONS)} file, a pandas DataFrame, a "
        "datasets.Dataset or a RAGAS EvaluationDataset."
    )


def _is_type(obj: Any, package: str, *names: str) -> bool:
    return any(cls.__module__.split(".")[0] == package and cls.__name__ in names for cls in type(obj).__mro__)


def _read_file(path: Path) -> tuple[list[str], list[Row], str]:
    description = f"file '{path}'"
    if not path.exists():
        raise DataError(
            f"Dataset file '{path}' does not exist (resolved to '{path.absolute()}'). Check the path. "
            "load_dataset reads local files only; for a Hugging Face Hub dataset, load it with "
            "datasets.load_dataset(...) and pass the result."
        )
    if path.is_dir():
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
    if extension == ".jsonl":
        rows = _parse_jsonl(text, path)
        return _union_keys(rows), rows, description
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise DataError(
            f"'{path}' is not valid JSON: {exc.msg} at line {exc.lineno}, column {exc.colno}. Fix the file; "
            "if it holds one JSON object per line, give it the .jsonl extension."
        ) from exc
    if isinstance(data, Mapping):
        columns, rows, _ = _read_mapping(data, description)
        return columns, rows, description
    if isinstance(data, list):
        rows = _rows_from_items(data, description)
        return _union_keys(rows), rows, description
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
        if not isinstance(row, dict):
            raise DataError(
                f"'{path}', line {line_number}: a JSON {type(row).__name__}, not an object. Each line must "
                'be one row, e.g. {"question": "...", "answer": "..."}.'
            )
        rows.append(row)
    return rows


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
        for row in reader:
            if None in row:
                raise DataError(
                    f"'{path}', line {reader.line_num}: more fields than the {len(columns)} header columns. "
                    "Quote cells that contain commas or line breaks."
                )
            rows.append({name: (None if cell in (None, "") else cell) for name, cell in row.items()})
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
    try:
        table = pq.read_table(path)
    except (OSError, ValueError) as exc:
        raise DataError(
            f"Cannot read the Parquet file '{path}': {exc}. Check that it is a valid Parquet file."
        ) from exc
    columns = [name for name in table.column_names if not _PANDAS_INDEX_COLUMN.fullmatch(name)]
    return columns, table.select(columns).to_pylist()


def _read_dataframe(frame: Any) -> tuple[list[str], list[Row], str]:
    columns = [str(name) for name in frame.columns]
    repeated = sorted({name for name in columns if columns.count(name) > 1})
    if repeated:
        raise DataError(f"The DataFrame repeats column(s) {repeated}. Rename them so each is unique.")
    rows = [dict(zip(columns, values, strict=True)) for values in frame.itertuples(index=False, name=None)]
    return columns, rows, "pandas DataFrame"


def _read_dataset_dict(splits: Any) -> tuple[list[str], list[Row], str]:
    names = list(splits.keys())
    if len(names) != 1:
        example = f"load_dataset(ds[{names[0]!r}])" if names else "load_dataset(ds['test'])"
        raise DataError(
            f"The DatasetDict has {len(names)} splits {names}; load_dataset reads one. Pass the split to "
            f"evaluate, e.g. {example}."
        )
    split = splits[names[0]]
    rows = _rows_from_items(split, f"split {names[0]!r}")
    columns = [str(n) for n in (getattr(split, "column_names", None) or _union_keys(rows))]
    return columns, rows, f"datasets.{type(splits).__name__} split {names[0]!r}"


def _read_mapping(data: Mapping[Any, Any], description: str) -> tuple[list[str], list[Row], str]:
    known = set(LEGACY_ALIASES) | {c.value for c in Column} | {GROUND_TRUTHS}
    for key in _WRAPPER_KEYS:
        inner = data.get(key)
        wraps = isinstance(inner, Mapping) or (
            isinstance(inner, list) and all(isinstance(item, Mapping) for item in inner)
        )
        # {"data": [...]} wraps the dataset unless the dict is itself columnar with a "data" column.
        if wraps and not known.intersection(map(str, data)):
            if isinstance(inner, Mapping):
                return _read_mapping(inner, description)
            rows = _rows_from_items(inner, description)
            return _union_keys(rows), rows, description
    return _read_columnar(data, description)


def _read_columnar(data: Mapping[Any, Any], description: str) -> tuple[list[str], list[Row], str]:
    columns = [str(key) for key in data]
    lists: dict[str, list[Any]] = {}
    for key, name in zip(data, columns, strict=True):
        values = _as_list(data[key])
        if values is None:
            raise DataError(
                f"The {description} is read as columns (the RAGAS/NeMo format: each key maps to a list with "
                f"one value per sample), but column {name!r} holds a {type(data[key]).__name__} "
                f"({_preview(data[key])}). Make every value a list, or pass a list of row dicts "
                "(for a single row: [row])."
            )
        lists[name] = values
    lengths = {name: len(values) for name, values in lists.items()}
    if len(set(lengths.values())) > 1:
        raise DataError(
            f"The columns of the {description} have different lengths: {lengths}. Every column needs one "
            "value per sample; use None for a missing value."
        )
    count = next(iter(lengths.values()), 0)
    rows = [{name: lists[name][i] for name in columns} for i in range(count)]
    return columns, rows, description


def _as_list(value: Any) -> list[Any] | None:
    if isinstance(value, list):
        return value
    if isinstance(value, tuple):
        return list(value)
    if hasattr(value, "tolist") and not isinstance(value, (str, bytes)):
        converted = value.tolist()
        return converted if isinstance(converted, list) else None
    return None


def _rows_from_items(items: Iterable[Any], description: str) -> list[Row]:
    rows: list[Row] = []
    for index, item in enumerate(items):
        if isinstance(item, Sample):
            rows.append(_sample_row(item))
        elif isinstance(item, Mapping):
            rows.append({str(key): value for key, value in item.items()})
        elif callable(getattr(item, "to_dict", None)):
            rows.append(dict(item.to_dict()))
        elif callable(getattr(item, "model_dump", None)):
            rows.append(dict(item.model_dump(exclude_none=True)))
        else:
            raise DataError(
                f"Row {index} of the {description} is a {type(item).__name__} ({_preview(item)}), "
                "not a dict. "
                'Each row must map column names to values, e.g. {"question": "...", "answer": "..."}.'
            )
    return rows


def _sample_row(sample: Sample) -> Row:
    row: Row = {c.value: sample.get(c) for c in Column if sample.has(c)}
    if sample.id:
        row["id"] = sample.id
    row.update(sample.metadata)
    return row


def _union_keys(rows: Iterable[Mapping[str, Any]]) -> list[str]:
    seen: dict[str, None] = {}
    for row in rows:
        seen.update(dict.fromkeys(row))
    return list(seen)


# --------------------------------------------------------------------------------------------------
# Columns -> roles


def _column_roles(columns: Sequence[str], column_map: Mapping[str, str] | None) -> dict[str, str]:
    roles = {name: default_role(name) for name in columns}
    if not column_map:
        return roles
    if not isinstance(column_map, Mapping):
        raise DataError(
            f"column_map must be a dict from our column name to yours, e.g. {{'user_input': 'query'}}; got a "
            f"{type(column_map).__name__}."
        )
    claimed: dict[str, str] = {}
    for key, dataset_column in column_map.items():
        role = _map_key(key, dataset_column, columns)
        if role in claimed:
            raise DataError(
                f"column_map gives {role!r} twice ({claimed[role]!r} and {dataset_column!r}). Keep one entry."
            )
        if dataset_column not in roles:
            raise DataError(
                f"column_map={{{str(key)!r}: {dataset_column!r}}}: the dataset has no column "
                f"{dataset_column!r}. Its columns are {list(columns)}."
                f"{_did_you_mean(str(dataset_column), columns)} Fix the value to name one of them."
            )
        if dataset_column in claimed.values():
            other = next(r for r, c in claimed.items() if c == dataset_column)
            raise DataError(
                f"column_map maps both {other!r} and {role!r} to {dataset_column!r}. Map each dataset column "
                "to one of our columns."
            )
        claimed[role] = dataset_column
    for name in columns:
        # An explicit mapping wins over a column's own name; the overridden column stays in metadata.
        if roles[name] in claimed and claimed[roles[name]] != name:
            roles[name] = "metadata"
    for role, name in claimed.items():
        roles[name] = role
    return roles


def _map_key(key: Any, value: Any, columns: Sequence[str]) -> str:
    name = key.value if isinstance(key, Column) else str(key)
    if name in ID_COLUMNS:
        return "id"
    if name in LEGACY_ALIASES:
        return LEGACY_ALIASES[name].value
    if name in {c.value for c in Column}:
        return name
    valid = [c.value for c in Column] + list(LEGACY_ALIASES) + ["id"]
    hint = _did_you_mean(name, valid)
    if isinstance(value, str) and default_role(value) != "metadata" and name in columns:
        hint = f" It looks reversed: write column_map={{{value!r}: {name!r}}} (our name first, then yours)."
    raise DataError(
        f"column_map key {name!r} is not one of our column names {valid}.{hint} Keys are our names and "
        "values are your dataset's columns, e.g. column_map={'user_input': 'query'}."
    )


def _did_you_mean(name: str, options: Sequence[str]) -> str:
    close = difflib.get_close_matches(name, list(options), n=1)
    return f" Did you mean {close[0]!r}?" if close else ""


# --------------------------------------------------------------------------------------------------
# Rows -> samples


class _CellError(ValueError):
    """A cell has the wrong type; the message says what it holds and how to fix it."""


def _make_sample(index: int, row: Mapping[str, Any], roles: Mapping[str, str]) -> Sample:
    fields: dict[str, Any] = {}
    origin: dict[str, str] = {}
    metadata: dict[str, Any] = {}
    for name, raw in row.items():
        role = roles.get(name, "metadata")
        value = _scalar(raw)
        if _is_missing(value):
            continue
        if role == "metadata":
            metadata[name] = _jsonable(value)
            continue
        try:
            converted = _convert(role, name, value)
        except _CellError as exc:
            read_as = "" if name == role else f" (read as {role})"
            raise DataError(f"{_where(index, row, roles)}, column {name!r}{read_as}: {exc}") from None
        if converted is None:
            continue
        if role in fields and fields[role] != converted:
            raise DataError(
                f"{_where(index, row, roles)}: columns {origin[role]!r} and {name!r} both give {role!r}, "
                f"with different values ({_preview(fields[role])} vs {_preview(converted)}). "
                f"Drop one of the two columns, or choose one with column_map={{{role!r}: {origin[role]!r}}} "
                f"or column_map={{{role!r}: {name!r}}}."
            )
        fields[role] = converted
        origin[role] = name
    sample_id = fields.pop("id", None) or str(index)
    return Sample(id=sample_id, metadata=metadata, **fields)


def _convert(role: str, name: str, value: Any) -> Any:
    if role == "id":
        return _to_id(value)
    column = Column(role)
    if name == GROUND_TRUTHS:
        # RAGAS v0.0.x stored several reference answers; later versions (and metrics) use one.
        items = _to_text_list(value)
        return items[0] if items else None
    if column.is_list:
        return _to_text_list(value)
    return _to_text(value)


def _to_text(value: Any) -> str:
    if isinstance(value, str):
        return str(value)
    if isinstance(value, (list, tuple)) or hasattr(value, "tolist"):
        fix = (
            "If it holds several texts, join them into one string; if another column has the text, "
            "map that column with column_map."
        )
    elif isinstance(value, Mapping):
        fix = "Store the text itself, not an object."
    else:
        fix = f'Write it as a string, e.g. "{value}".'
    raise _CellError(f"expected a string, got {_describe(value)}. {fix}")


def _to_text_list(value: Any) -> tuple[str, ...]:
    if isinstance(value, str):
        items: Any = _parse_list_text(value)
    elif isinstance(value, (list, tuple)):
        items = value
    elif hasattr(value, "tolist"):
        items = value.tolist()
    else:
        items = None
    if not isinstance(items, (list, tuple)):
        raise _CellError(
            f"expected a list of strings, got {_describe(value)}. Write it as a list, "
            'e.g. ["passage 1", "passage 2"].'
        )
    texts = []
    for position, item in enumerate(items):
        item = _scalar(item)
        if not isinstance(item, str):
            raise _CellError(
                f"item {position} is {_describe(item)}, not a string. Make every item of the list a string "
                '(e.g. ["passage 1", "passage 2"]) and drop empty items.'
            )
        texts.append(str(item))
    return tuple(texts)


def _parse_list_text(text: str) -> list[Any]:
    """Read a list written as text (CSV cells): a JSON list, a Python-literal list, or one string."""
    stripped = text.strip()
    if stripped.startswith("["):
        # json first (the common case, and it keeps \u escapes exact); then Python literals, which
        # literal_eval parses without evaluating code.
        for parse in (json.loads, ast.literal_eval):
            try:
                parsed = parse(stripped)
            except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
                continue
            if isinstance(parsed, list):
                return parsed
        if stripped.startswith(('["', "['")):
            raise _CellError(
                f"looks like a list but is neither a JSON nor a Python list ({_preview(text)}). "
                'Fix the quoting, e.g. ["passage 1", "passage 2"].'
            )
    return [text]


def _to_id(value: Any) -> str:
    if isinstance(value, str):
        return str(value)
    if isinstance(value, int) and not isinstance(value, bool):
        return str(value)
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    raise _CellError(
        f"expected a string or integer id, got {_describe(value)}. Use strings or integers as ids."
    )


def _where(index: int, row: Mapping[str, Any], roles: Mapping[str, str]) -> str:
    for name, role in roles.items():
        if role == "id":
            with contextlib.suppress(_CellError):
                value = _scalar(row.get(name))
                if not _is_missing(value):
                    return f"Sample {index} (id {_to_id(value)!r})"
    return f"Sample {index}"


def _check_unique_ids(samples: Sequence[Sample], description: str) -> None:
    positions: dict[str, list[int]] = {}
    for index, sample in enumerate(samples):
        positions.setdefault(sample.id, []).append(index)
    repeated = {sample_id: where for sample_id, where in positions.items() if len(where) > 1}
    if repeated:
        shown = ", ".join(
            f"{sample_id!r} (samples {', '.join(map(str, where))})"
            for sample_id, where in list(repeated.items())[:5]
        )
        more = f" and {len(repeated) - 5} more" if len(repeated) > 5 else ""
        raise DataError(
            f"Sample ids must be unique, but in the {description} {len(repeated)} id(s) repeat: "
            f"{shown}{more}. "
            "Fix the id column, or drop it to number the samples by position."
        )


# --------------------------------------------------------------------------------------------------
# Cell values


def _scalar(value: Any) -> Any:
    # numpy and pandas scalars (0-d, with .item()) become Python values so the type checks see str/int/float.
    if getattr(value, "shape", None) == () and callable(getattr(value, "item", None)):
        return value.item()
    return value


def _is_missing(value: Any) -> bool:
    if value is None:
        return True
    if isinstance(value, float):
        return math.isnan(value)
    # pandas.NA and pandas.NaT, recognised without importing pandas.
    return type(value).__name__ in ("NAType", "NaTType")


def _jsonable(value: Any) -> Any:
    """A JSON-able copy of a metadata value: NaN and infinities become None, arrays lists, dates text.

    >>> _jsonable({"score": float("nan"), "tags": ("a", "b"), 3: 1.5})
    {'score': None, 'tags': ['a', 'b'], '3': 1.5}
    """
    value = _scalar(value)
    if value is None or isinstance(value, (bool, int)):
        return value
    if isinstance(value, str):
        return str(value)
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if _is_missing(value):
        return None
    if isinstance(value, Mapping):
        return {str(key): _jsonable(item) for key, item in value.items()}
    if hasattr(value, "tolist"):
        return _jsonable(value.tolist())
    if isinstance(value, (list, tuple, set, frozenset)):
        return [_jsonable(item) for item in value]
    if isinstance(value, (bytes, bytearray)):
        return bytes(value).decode("utf-8", errors="replace")
    if callable(getattr(value, "isoformat", None)):
        return value.isoformat()
    return str(value)


def _describe(value: Any) -> str:
    return "None" if value is None else f"{type(value).__name__} {_preview(value)}"


def _preview(value: Any, limit: int = 60) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."
