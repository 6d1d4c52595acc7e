"""Check, before any model loads, that every sample has the columns its metrics need and only text a
model can be sent.

All missing columns are reported at once, in one `DataError`, so that a user fixes the dataset in one
pass instead of one failed run per missing column.
"""

from __future__ import annotations

import difflib
import logging
from collections.abc import Iterable, Mapping, Sequence

from ascend_eval.data.cells import SURROGATE_FIX, lone_surrogate
from ascend_eval.data.sample import Column, Dataset, Sample
from ascend_eval.models.errors import DataError
from ascend_eval.text.truncate import NIM_CHARACTER_LIMIT

logger = logging.getLogger("ascend_eval.data")

_COLUMN_ORDER = list(Column)

MAX_LISTED = 5
"""How many sample positions a message lists before "and N more"."""

LONG_CONTEXT_CHARS = NIM_CHARACTER_LIMIT
"""A context longer than this (the NIMs' 65,535-character input limit) is sent whole, with a warning."""


def validate(
    samples: Sequence[Sample],
    requirements: Mapping[str, Iterable[Column | str]],
    *,
    warn_long_contexts: bool = True,
) -> None:
    """Raise one `DataError` listing every sample that lacks a column one of its metrics needs.

    Empty strings count as present (RAGAS scores them per metric). An empty context list counts as
    missing, since no context metric can score it.

    Args:
        samples: The samples to check, usually the `Dataset` from `load_dataset` (whose original
            column names make the hints precise); any sequence of `Sample` works.
        requirements: Metric name -> the columns it needs (`Column`s, or current or legacy names).
        warn_long_contexts: log one warning, with the count, when contexts are longer than
            `LONG_CONTEXT_CHARS`. They are sent whole (as RAGAS sends them); a judge whose context window
            is smaller truncates or fails them. Jobs cut them with `truncate_long_documents`.

    Raises:
        DataError: The dataset is empty; a sample's text holds a lone surrogate (not valid Unicode:
            `load_dataset` refuses it too, so this finds only `Sample`s built directly); or some samples
            lack required columns. The message groups the problems by metric and column, lists up to five
            sample positions each, names the dataset's columns, and suggests a `column_map` (with a
            similarly named column when there is one).

    >>> validate([Sample(id="0", user_input="q", response="a")], {"answer_relevancy": ["question", "answer"]})
    """
    columns, roles, source = _describe_dataset(samples)
    if len(samples) == 0:
        raise DataError(
            f"The dataset ({source}) is empty: there are no samples to evaluate. Check the file, or the "
            "filter that produced it."
        )
    _check_text(samples)
    if warn_long_contexts:
        _warn_long_contexts(samples)
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


def _check_text(samples: Sequence[Sample]) -> None:
    """Raise DataError for the first text a model could not be sent (a lone surrogate)."""
    for index, sample in enumerate(samples):
        texts: list[tuple[str, str]] = [("id", sample.id)]
        for column in Column:
            value = sample.get(column)
            if isinstance(value, str):
                texts.append((column.value, value))
            elif value is not None:
                texts += [(f"{column.value}[{i}]", item) for i, item in enumerate(value)]
        for where, text in texts:
            position = lone_surrogate(text)
            if position is not None:
                raise DataError(
                    f"Sample {_sample_ref(index, sample)}, column {where!r}: the text holds a lone "
                    f"surrogate ({text[position]!a}) at character {position}. {SURROGATE_FIX}"
                )


def _warn_long_contexts(samples: Sequence[Sample]) -> None:
    lengths = [
        len(context)
        for sample in samples
        for column in (Column.RETRIEVED_CONTEXTS, Column.REFERENCE_CONTEXTS)
        for context in sample.get(column) or ()
        if len(context) > LONG_CONTEXT_CHARS
    ]
    if lengths:
        logger.warning(
            "%d context(s) are longer than %s characters (the longest has %s); they are sent whole. A "
            "judge with a smaller context window truncates or fails them: cut them first (jobs: "
            "metric_params.truncate_long_documents).",
            len(lengths),
            f"{LONG_CONTEXT_CHARS:,}",
            f"{max(lengths):,}",
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
