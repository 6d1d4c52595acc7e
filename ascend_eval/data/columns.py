"""Column resolution: what each source column becomes (a `Column`, the id, or metadata), from its name
and the caller's `column_map`."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ascend_eval.data.cells import preview
from ascend_eval.data.sample import (
    ID_COLUMNS,
    LEGACY_ALIASES,
    Column,
    bare_name,
    default_role,
    did_you_mean,
)
from ascend_eval.errors import DataError


def column_roles(columns: Sequence[str], column_map: Mapping[str, str] | None) -> dict[str, str]:
    """Source column -> what it becomes: a `Column` value, "id" or "metadata".

    Invisible characters in a column's name (U+FEFF, U+200B, ...) and white space at its ends are ignored
    when the name is matched (`bare_name`), by its own name and by a `column_map` value alike:
    `"\\ufeffid"` is the id column, and `{"user_input": "query"}` names the column `"\\ufeffquery"` when
    the dataset has no column `"query"`.

    Raises:
        DataError: a `column_map` key is not our column name, a value names no dataset column, or two
            entries claim the same column.
    """
    roles = {name: default_role(name) for name in columns}
    if column_map is None:
        return roles
    if not isinstance(column_map, Mapping):
        raise DataError(
            f"column_map must be a dict from our column name to yours, e.g. {{'user_input': 'query'}}; got a "
            f"{type(column_map).__name__}."
        )
    claimed: dict[str, str] = {}
    for key, dataset_column in column_map.items():
        if not isinstance(dataset_column, str):
            raise DataError(
                f"column_map[{str(key)!r}] is a {type(dataset_column).__name__} ({preview(dataset_column)}); "
                "each value must be the name of one of your dataset's columns, e.g. "
                f"column_map={{'user_input': 'query'}}. The dataset's columns are {list(columns)}."
            )
        role = _map_key(key, dataset_column, columns)
        dataset_column = _column_named(dataset_column, columns)
        if role in claimed:
            raise DataError(
                f"column_map gives {role!r} twice ({claimed[role]!r} and {dataset_column!r}). Keep one entry."
            )
        if dataset_column not in roles:
            raise DataError(
                f"column_map={{{str(key)!r}: {dataset_column!r}}}: the dataset has no column "
                f"{dataset_column!r}. Its columns are {list(columns)}."
                f"{did_you_mean(str(dataset_column), columns)} Fix the value to name one of them."
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


def _column_named(name: str, columns: Sequence[str]) -> str:
    """The dataset column `name` means: itself when the dataset has it, else the one column whose name
    differs from it only by invisible characters or white space at its ends (`bare_name`), else `name`
    unchanged."""
    if name in columns:
        return name
    matches = [column for column in columns if bare_name(column) == bare_name(name)]
    return matches[0] if len(matches) == 1 else name


def _map_key(key: Any, value: Any, columns: Sequence[str]) -> str:
    name = key.value if isinstance(key, Column) else str(key)
    if name in ID_COLUMNS:
        return "id"
    if name in LEGACY_ALIASES:
        return LEGACY_ALIASES[name].value
    if name in {c.value for c in Column}:
        return name
    valid = [c.value for c in Column] + list(LEGACY_ALIASES) + ["id"]
    hint = did_you_mean(name, valid)
    if isinstance(value, str) and default_role(value) != "metadata" and name in columns:
        hint = f" It looks reversed: write column_map={{{value!r}: {name!r}}} (our name first, then yours)."
    raise DataError(
        f"column_map key {name!r} is not one of our column names {valid}.{hint} Keys are our names and "
        "values are your dataset's columns, e.g. column_map={'user_input': 'query'}."
    )
