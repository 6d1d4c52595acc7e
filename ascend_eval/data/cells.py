"""Rows -> samples: each cell converted to the type its column needs, or a `DataError` that names the
sample, the column and the fix. Also the sample-id checks and the JSON-able copy of metadata cells."""

from __future__ import annotations

import ast
import contextlib
import json
import math
import re
import reprlib
from collections.abc import Mapping, Sequence
from typing import Any

from pydantic import ValidationError

from ascend_eval.data.sample import GROUND_TRUTHS, Column, Sample, bare_name
from ascend_eval.errors import DataError

_SURROGATE = re.compile("[\ud800-\udfff]")

SURROGATE_FIX = (
    "A lone surrogate is not Unicode text: no file, tokenizer or server can encode it as UTF-8. It is "
    "usually half of an escaped emoji pair (such as \\ud83d without its partner) or bytes decoded with "
    "errors='surrogateescape'. Fix the text at its source, or replace it: "
    "text.encode('utf-8', 'replace').decode('utf-8')."
)
"""The fix for text with a lone surrogate, shared by the loaders and `validate`."""


class _CellError(ValueError):
    """A cell has the wrong type; the message says what it holds and how to fix it."""


def lone_surrogate(text: str) -> int | None:
    """The position of the first lone surrogate (U+D800..U+DFFF) in `text`, or None.

    >>> lone_surrogate("ok"), lone_surrogate("q" + chr(0xD800))
    (None, 1)
    """
    found = _SURROGATE.search(text)
    return None if found is None else found.start()


def _text(value: str) -> str:
    position = lone_surrogate(value)
    if position is not None:
        raise _CellError(
            f"the text holds a lone surrogate ({value[position]!a}) at character {position}. " + SURROGATE_FIX
        )
    return str(value)


def make_sample(index: int, row: Mapping[str, Any], roles: Mapping[str, str]) -> Sample:
    """Row `index` as a `Sample`: each cell converted for its role, the others kept as metadata.

    Raises:
        DataError: a cell has the wrong type, or two columns give one field different values; the
            message names the sample, the column and the fix.
    """
    fields: dict[str, Any] = {}
    origin: dict[str, str] = {}
    metadata: dict[str, Any] = {}
    for name, raw in row.items():
        role = roles.get(name, "metadata")
        value = _scalar(raw)
        if _is_missing(value):
            continue
        try:
            if role == "metadata":
                metadata[_text(name)] = _jsonable(value)
                continue
            converted = _convert(role, name, value)
        except _CellError as exc:
            read_as = "" if name == role else f" (read as {role})"
            raise DataError(f"{_where(index, row, roles)}, column {name!r}{read_as}: {exc}") from None
        except RecursionError:
            raise DataError(
                f"{_where(index, row, roles)}, column {name!r}: the value nests lists or objects too deeply "
                "to read. Store plain text (or a flat list of texts) in it, or drop the column."
            ) from None
        if converted is None:
            continue
        if role in fields and fields[role] != converted:
            raise DataError(
                f"{_where(index, row, roles)}: columns {origin[role]!r} and {name!r} both give {role!r}, "
                f"with different values ({preview(fields[role])} vs {preview(converted)}). "
                f"Drop one of the two columns, or choose one with column_map={{{role!r}: {origin[role]!r}}} "
                f"or column_map={{{role!r}: {name!r}}}."
            )
        fields[role] = converted
        origin[role] = name
    sample_id = fields.pop("id", None) or str(index)
    try:
        return Sample(id=sample_id, metadata=metadata, **fields)
    except ValidationError as exc:  # the cells passed their checks; only the metadata can still fail
        problem = exc.errors()[0].get("msg", str(exc)) if exc.errors() else str(exc)
        raise DataError(
            f"{_where(index, row, roles)}: the columns kept as metadata "
            f"({', '.join(repr(k) for k in metadata)}) cannot be stored: {problem}. Drop those columns or "
            "make their values plain JSON (text, numbers, lists, objects)."
        ) from None


def _convert(role: str, name: str, value: Any) -> Any:
    if role == "id":
        return _to_id(value)
    column = Column(role)
    if bare_name(name) == GROUND_TRUTHS:
        # RAGAS v0.0.x stored several reference answers; later versions (and metrics) use one. A plain
        # string there is the one reference.
        items = _to_text_list(value, plain_string_ok=True)
        return items[0] if items else None
    if column.is_list:
        return _to_text_list(value)
    return _to_text(value)


def _to_text(value: Any) -> str:
    if isinstance(value, str):
        return _text(value)
    if isinstance(value, (list, tuple)) or hasattr(value, "tolist"):
        fix = (
            "If it holds several texts, join them into one string; if another column has the text, "
            "map that column with column_map."
        )
    elif isinstance(value, Mapping):
        fix = "Store the text itself, not an object."
    else:
        fix = f"Write it as a string, e.g. {json.dumps(preview(value, 40).strip(chr(39)))}."
    raise _CellError(f"expected a string, got {_describe(value)}. {fix}")


def _to_text_list(value: Any, *, plain_string_ok: bool = False) -> tuple[str, ...]:
    if isinstance(value, str):
        items: Any = _parse_list_text(value)
        if items is None and plain_string_ok:
            items = [value]
        elif items is None:
            raise _CellError(
                f"expected a list of strings, got a plain string {preview(value)}. A context column holds "
                'a list, e.g. ["passage 1", "passage 2"] (one passage: ["passage"]); in a CSV cell, write '
                "that list as JSON text."
            )
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
        try:
            texts.append(_text(item))
        except _CellError as exc:
            raise _CellError(f"item {position}: {exc}") from None
    return tuple(texts)


def _parse_list_text(text: str) -> list[Any] | None:
    """Read a list written as text (CSV cells): a JSON list or a Python-literal list (pandas writes list
    cells as their repr); None for text that is not written as a list."""
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
                f"looks like a list but is neither a JSON nor a Python list ({preview(text)}). "
                'Fix the quoting, e.g. ["passage 1", "passage 2"].'
            )
    return None


def _to_id(value: Any) -> str:
    if isinstance(value, str):
        return _text(value)
    try:
        if isinstance(value, int) and not isinstance(value, bool):
            return str(value)
        if isinstance(value, float) and value.is_integer():
            return str(int(value))
    except ValueError:  # more than 4300 digits: Python refuses to write it in decimal
        raise _CellError(
            "expected a string or integer id, got an integer too long to write in decimal. Use a shorter id."
        ) from None
    raise _CellError(
        f"expected a string or integer id, got {_describe(value)}. Use strings or integers as ids."
    )


def _where(index: int, row: Mapping[str, Any], roles: Mapping[str, str]) -> str:
    for name, role in roles.items():
        if role == "id":
            with contextlib.suppress(_CellError):
                value = _scalar(row.get(name))
                if not _is_missing(value) and value != "":
                    return f"Sample {index} (id {_to_id(value)!r})"
    return f"Sample {index}"


def check_unique_ids(samples: Sequence[Sample], description: str) -> None:
    """Raise DataError listing the ids that more than one sample has."""
    positions: dict[str, list[int]] = {}
    for index, sample in enumerate(samples):
        positions.setdefault(sample.id, []).append(index)
    repeated = {sample_id: where for sample_id, where in positions.items() if len(where) > 1}
    if repeated:
        raise repeated_ids_error(repeated, description)


def repeated_ids_error(repeated: Mapping[str, Sequence[int]], description: str) -> DataError:
    """The error for ids that more than one sample has: id -> every position it is at (at least two),
    in the order the ids first occur."""
    shown = ", ".join(
        f"{sample_id!r} (samples {', '.join(map(str, where))})"
        for sample_id, where in list(repeated.items())[:5]
    )
    more = f" and {len(repeated) - 5} more" if len(repeated) > 5 else ""
    return DataError(
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
        return _text(value)
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if _is_missing(value):
        return None
    if isinstance(value, Mapping):
        return {_text(str(key)): _jsonable(item) for key, item in value.items()}
    if hasattr(value, "tolist"):
        return _jsonable(value.tolist())
    if isinstance(value, (list, tuple, set, frozenset)):
        return [_jsonable(item) for item in value]
    if isinstance(value, (bytes, bytearray)):
        return bytes(value).decode("utf-8", errors="replace")
    if callable(getattr(value, "isoformat", None)):
        return _text(value.isoformat())
    return _text(str(value))


def _describe(value: Any) -> str:
    return "None" if value is None else f"{type(value).__name__} {preview(value)}"


_REPR = reprlib.Repr()
# Bounded in depth and size, so that a message about a huge or deeply nested value costs nothing;
# small values read as repr() writes them.
_REPR.maxlevel, _REPR.maxlist, _REPR.maxtuple, _REPR.maxdict = 4, 12, 12, 12
_REPR.maxstring = _REPR.maxother = _REPR.maxlong = 200


def preview(value: Any, limit: int = 60) -> str:
    """`repr(value)`, cut to `limit` characters, for messages; ASCII-safe for surrogates, and bounded
    for huge or deeply nested values.

    >>> preview("x" * 100, 10), preview([[[[[1]]]]])
    ("'xxxxxx...", '[[[[[...]]]]]')
    """
    try:
        text = _REPR.repr(value)
    except Exception:  # a broken __repr__ must not hide the message it is quoted in
        text = f"<{type(value).__name__}>"
    return text if len(text) <= limit else text[: limit - 3] + "..."
