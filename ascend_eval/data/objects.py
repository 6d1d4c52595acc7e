"""In-memory sources -> (columns, rows, description): columnar dicts (RAGAS / NeMo), lists of rows or of
objects with `to_dict()` / `model_dump()`, pandas DataFrames and Hugging Face `datasets` objects.

pandas and datasets are recognised by their type names (`is_type`), so neither is imported here.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from typing import Any

from ascend_eval.data.cells import preview
from ascend_eval.data.sample import GROUND_TRUTHS, LEGACY_ALIASES, Column, Sample, bare_name
from ascend_eval.errors import DataError

Row = dict[str, Any]

_WRAPPER_KEYS = ("data", "rows")


def is_type(obj: Any, package: str, *names: str) -> bool:
    """Whether `obj` is an instance of `package`'s class of one of these names, without importing it."""
    return any(cls.__module__.split(".")[0] == package and cls.__name__ in names for cls in type(obj).__mro__)


DATAFRAME_DESCRIPTION = "pandas DataFrame"
"""How messages name a DataFrame source (`Dataset.source`)."""


def dataframe_columns(frame: Any) -> list[str]:
    """A pandas DataFrame's column names, as text; a name given twice is a `DataError`."""
    columns = [str(name) for name in frame.columns]
    repeated = sorted({name for name in columns if columns.count(name) > 1})
    if repeated:
        raise DataError(f"The DataFrame repeats column(s) {repeated}. Rename them so each is unique.")
    return columns


def dataframe_rows(frame: Any, columns: list[str]) -> Iterator[Row]:
    """A pandas DataFrame's rows, one at a time, keyed by `dataframe_columns(frame)`."""
    for values in frame.itertuples(index=False, name=None):
        yield dict(zip(columns, values, strict=True))


def only_split(splits: Any) -> tuple[str, Any]:
    """A Hugging Face `DatasetDict`'s one split and its name; several splits are a `DataError` naming them."""
    names = list(splits.keys())
    if len(names) != 1:
        example = f"load_dataset(ds[{names[0]!r}])" if names else "load_dataset(ds['test'])"
        raise DataError(
            f"The DatasetDict has {len(names)} splits {names}; load_dataset reads one. Pass the split to "
            f"evaluate, e.g. {example}."
        )
    return names[0], splits[names[0]]


def read_mapping(data: Mapping[Any, Any], description: str) -> tuple[list[str], list[Row], str]:
    """A dict: columnar (each key a column of values), or a dataset wrapped as `{"data"|"rows": ...}`."""
    known = set(LEGACY_ALIASES) | {c.value for c in Column} | {GROUND_TRUTHS}
    for key in _WRAPPER_KEYS:
        inner = data.get(key)
        wraps = isinstance(inner, Mapping) or (
            isinstance(inner, list) and all(isinstance(item, Mapping) for item in inner)
        )
        # {"data": [...]} wraps the dataset unless the dict is itself columnar with a "data" column.
        if wraps and not known.intersection(bare_name(str(key)) for key in data):
            if isinstance(inner, Mapping):
                return read_mapping(inner, description)
            rows = rows_from_items(inner, description)
            return union_keys(rows), rows, description
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
                f"({preview(data[key])}). Make every value a list, or pass a list of row dicts "
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


def rows_from_items(items: Iterable[Any], description: str) -> list[Row]:
    """One row dict per item: a mapping, a `Sample`, or an object with `to_dict()` / `model_dump()`."""
    return [row_from_item(index, item, description) for index, item in enumerate(items)]


def row_from_item(index: int, item: Any, description: str) -> Row:
    """Item `index` of a source as a row dict: a mapping, a `Sample`, or an object with `to_dict()` /
    `model_dump()`; anything else is a `DataError` naming the row and the `description`."""
    if isinstance(item, Sample):
        return item.to_row()
    if isinstance(item, Mapping):
        return {str(key): value for key, value in item.items()}
    if callable(getattr(item, "to_dict", None)):
        return _converted_row(index, item, "to_dict()", item.to_dict, description)
    if callable(getattr(item, "model_dump", None)):
        dump = lambda item=item: item.model_dump(exclude_none=True)  # noqa: E731
        return _converted_row(index, item, "model_dump()", dump, description)
    raise DataError(
        f"Row {index} of the {description} is a {type(item).__name__} ({preview(item)}), "
        "not a dict. "
        'Each row must map column names to values, e.g. {"question": "...", "answer": "..."}.'
    )


def _converted_row(index: int, item: Any, method: str, convert: Any, description: str) -> Row:
    """The row an object gives through its `to_dict()` / `model_dump()`, which must be a mapping."""
    try:
        row = convert()
    except Exception as exc:  # someone else's method: any failure is the row's problem, not ours
        raise DataError(
            f"Row {index} of the {description}: {type(item).__name__}.{method} raised "
            f"{type(exc).__name__}: {preview(str(exc), 120)}. Pass the rows as dicts instead."
        ) from exc
    if not isinstance(row, Mapping):
        raise DataError(
            f"Row {index} of the {description}: {type(item).__name__}.{method} returned a "
            f"{type(row).__name__}, not a dict. Pass the rows as dicts instead."
        )
    return {str(key): value for key, value in row.items()}


def union_keys(rows: Iterable[Mapping[str, Any]]) -> list[str]:
    """Every key of the rows, in the order first seen."""
    seen: dict[str, None] = {}
    for row in rows:
        seen.update(dict.fromkeys(row))
    return list(seen)
