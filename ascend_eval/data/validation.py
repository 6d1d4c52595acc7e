"""Check, before any model loads, that every sample has the columns its metrics need.

All problems are reported at once, in one `DataError`, so that a user fixes the dataset in one pass
instead of one failed run per missing column.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable, Mapping, Sequence

from ascend_eval.data.sample import Column, Dataset, Sample
from ascend_eval.models.errors import DataError

_COLUMN_ORDER = list(Column)

MAX_LISTED = 5
"""How many sample positions a message lists before "and N more"."""


def validate(samples: Sequence[Sample], requirements: Mapping[str, Iterable[Column | str]]) -> None:
    """Raise one `DataError` listing every sample that lacks a column one of its metrics needs.

    Empty strings count as present (RAGAS scores them per metric). An empty context list counts as
    missing, since no context metric can score it.

    Args:
        samples: The samples to check, usually the `Dataset` from `load_dataset` (whose original
            column names make the hints precise); any sequence of `Sample` works.
        requirements: Metric name -> the columns it needs (`Column`s, or current or legacy names).

    Raises:
        DataError: The dataset is empty, or some samples lack required columns. The message groups the
            problems by metric and column, lists up to five sample positions each, names the dataset's
            columns, and suggests a `column_map` (with a similarly named column when there is one).

    >>> validate([Sample(id="0", user_input="q", response="a")], {"answer_relevancy": ["question", "answer"]})
    """
    columns, roles, source = _describe_dataset(samples)
    if len(samples) == 0:
        raise DataError(
            f"The dataset ({source}) is empty: there are no samples to evaluate. Check the file, or the "
            "filter that produced it."
        )
    # Which samples lack each column, computed once per column however many metrics need it.
    gaps: dict[Column, tuple[list[int], list[int]]] = {}
    problems: list[str] = []
    for metric, needed in requirements.items():
        if isinstance(needed, (str, Column)):
            needed = [needed]
        # Enum order, not the caller's: metrics often declare their columns as a frozenset, whose
        # iteration order changes between processes, and the message should not.
        for column in sorted({Column.resolve(name) for name in needed}, key=_COLUMN_ORDER.index):
            if column not in gaps:
                gaps[column] = _find_gaps(samples, column)
            absent, empty = gaps[column]
            if absent or empty:
                problems.append(_problem(metric, column, absent, empty, samples, columns, roles))
    if not problems:
        return
    count = f"{len(problems)} problem" + ("s" if len(problems) > 1 else "")
    raise DataError(
        f"The dataset ({source}) cannot be evaluated as given ({count}):\n"
        + "\n".join(f"- {problem}" for problem in problems)
        + f"\nThe dataset has columns {list(columns)}."
    )


def _find_gaps(samples: Sequence[Sample], column: Column) -> tuple[list[int], list[int]]:
    absent: list[int] = []
    empty: list[int] = []
    for index, sample in enumerate(samples):
        value = sample.get(column)
        if value is None:
            absent.append(index)
        elif column.is_list and len(value) == 0:
            empty.append(index)
    return absent, empty


def _problem(
    metric: str,
    column: Column,
    absent: list[int],
    empty: list[int],
    samples: Sequence[Sample],
    columns: Sequence[str],
    roles: Mapping[str, str],
) -> str:
    legacy = f" (legacy name {column.legacy_name!r})" if column.legacy_name else ""
    who = []
    if absent:
        who.append(f"{_samples_phrase(absent, samples)} {'lacks' if len(absent) == 1 else 'lack'} it")
    if empty:
        who.append(f"{_samples_phrase(empty, samples)} {'has' if len(empty) == 1 else 'have'} an empty list")
    sourced = any(role == column.value for role in roles.values())
    if sourced:
        hint = "Fill in those samples, drop them, or drop the metric."
    else:
        similar = suggest_column(
            column, [name for name in columns if roles.get(name, "metadata") == "metadata"]
        )
        if similar is not None:
            hint = (
                f"Pass column_map={{{column.value!r}: {similar!r}}} (your column {similar!r} has a similar "
                "name) or drop the metric."
            )
        else:
            hint = f"Pass column_map={{{column.value!r}: '<your column>'}} or drop the metric."
    return f"Metric {metric!r} needs column {column.value!r}{legacy}; {'; '.join(who)}. {hint}"


def suggest_column(column: Column, candidates: Sequence[str]) -> str | None:
    """The candidate column name closest to a column's current or legacy name, if any is close.

    Args:
        column: The column a metric needs.
        candidates: Dataset column names not used for anything else.

    Returns:
        The closest candidate, as written in the dataset, or None.

    >>> suggest_column(Column.RETRIEVED_CONTEXTS, ["question", "Context", "score"])
    'Context'
    >>> suggest_column(Column.REFERENCE, ["score"]) is None
    True
    """
    by_lower = {name.lower(): name for name in reversed(candidates)}
    targets = [column.value] + ([column.legacy_name] if column.legacy_name else [])
    best: tuple[float, str] | None = None
    for target in targets:
        for match in difflib.get_close_matches(target, list(by_lower), n=1, cutoff=0.6):
            ratio = difflib.SequenceMatcher(None, target, match).ratio()
            if best is None or ratio > best[0]:
                best = (ratio, by_lower[match])
    return None if best is None else best[1]


def _samples_phrase(indices: list[int], samples: Sequence[Sample]) -> str:
    if len(indices) == len(samples) and len(indices) > 1:
        return f"all {len(indices)} samples"
    shown = ", ".join(_sample_ref(index, samples[index]) for index in indices[:MAX_LISTED])
    more = f" and {len(indices) - MAX_LISTED} more" if len(indices) > MAX_LISTED else ""
    return f"{'sample' if len(indices) == 1 else 'samples'} {shown}{more}"


def _sample_ref(index: int, sample: Sample) -> str:
    # Show the id only when it says more than the position does.
    return str(index) if sample.id in ("", str(index)) else f"{index} (id {sample.id!r})"


def _describe_dataset(samples: Sequence[Sample]) -> tuple[tuple[str, ...], Mapping[str, str], str]:
    if isinstance(samples, Dataset):
        return samples.columns, samples.column_roles, samples.source
    for index, sample in enumerate(samples):
        if not isinstance(sample, Sample):
            raise DataError(
                f"validate() got a {type(sample).__name__} at position {index}, not a Sample. "
                "Load the data with load_dataset(...) first."
            )
    names: dict[str, str] = {}
    for column in Column:
        if any(sample.has(column) for sample in samples):
            names[column.value] = column.value
    for sample in samples:
        for key in sample.metadata:
            names.setdefault(key, "metadata")
    return tuple(names), names, f"{len(samples)} sample{'' if len(samples) == 1 else 's'}"
