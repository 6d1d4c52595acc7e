"""Check, before any model loads, that every sample has the columns its metrics need and only text a
model can be sent.

All missing columns are reported at once, in one `DataError`, so that a user fixes the dataset in one
pass instead of one failed run per missing column.
"""

from __future__ import annotations

import difflib
import logging
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from ascend_eval.data.cells import SURROGATE_FIX, lone_surrogate
from ascend_eval.data.sample import Column, Dataset, Sample
from ascend_eval.errors import DataError
from ascend_eval.text.truncate import NIM_CHARACTER_LIMIT

logger = logging.getLogger("ascend_eval.data")

_COLUMN_ORDER = list(Column)

MAX_LISTED = 5
"""How many sample positions a message lists before "and N more"."""

LONG_CONTEXT_CHARS = NIM_CHARACTER_LIMIT
"""A context longer than this (the NIMs' 65,535-character input limit) is sent whole, with a warning."""


@dataclass(frozen=True)
class UserColumn:
    """A column of the user's own that a metric reads (a `Sample`'s `metadata` key), such as a criterion
    over a "source_title" column: checked like the RAGAS columns, present and not None in every sample.

    >>> checks = SampleChecks({"cites_source": [Column.RESPONSE, UserColumn("source_title")]})
    >>> checks.add(Sample(id="a", response="r", metadata={"source_title": "T"}))
    >>> checks.add(Sample(id="b", response="r"))
    >>> try:
    ...     checks.finish("2 samples", ("response", "source_title"), {"response": "response"})
    ... except DataError as exc:
    ...     print(str(exc).splitlines()[1].partition(". ")[0])
    - Metric 'cites_source' reads your column 'source_title'; sample 1 (id 'b') lacks it
    """

    name: str


def validate(
    samples: Sequence[Sample],
    requirements: Mapping[str, Iterable[Column | str | UserColumn]],
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
    checks = SampleChecks(requirements, warn_long_contexts=warn_long_contexts)
    for sample in samples:
        checks.add(sample)
    checks.finish(source, columns, roles)


class SampleChecks:
    """`validate`'s checks, fed one sample at a time, in memory that does not grow with the number of
    samples: what `finish` needs is the count, each column's gap count with its first `MAX_LISTED`
    positions and ids, and the long contexts' count and longest length.

    `add` raises for a lone surrogate as it meets one; `finish` raises or warns for the rest exactly as
    `validate` does for the same samples, in the same order.

    Args:
        requirements: Metric name -> the columns it needs, as for `validate`.
        warn_long_contexts: As for `validate`.
        may_lack: Columns a caller fills in later (a job's RAG pipeline fills the contexts and answers):
            a sample without a value in one (None, an empty string or an empty list) is no problem here;
            `lacking` says which of them the metrics need and some sample lacks. The long-context warning
            is then left to the check of the filled samples.

    >>> checks = SampleChecks({"answer_relevancy": ["question", "answer"]})
    >>> for sample in [Sample(id="0", user_input="q", response="a"), Sample(id="1", user_input="q")]:
    ...     checks.add(sample)
    >>> roles = {"question": "user_input", "answer": "response"}
    >>> try:
    ...     checks.finish("2 samples", ("question", "answer"), roles)
    ... except DataError as exc:
    ...     print(str(exc).splitlines()[1].partition(". ")[0])
    - Metric 'answer_relevancy' needs column 'response' (legacy name 'answer'); sample 1 lacks it
    """

    def __init__(
        self,
        requirements: Mapping[str, Iterable[Column | str | UserColumn]],
        *,
        warn_long_contexts: bool = True,
        may_lack: Iterable[Column] = (),
    ) -> None:
        self.count = 0
        """How many samples have been added."""
        self.lacking: set[Column] = set()
        """The columns of `may_lack` the metrics need that some sample added has no value for."""
        self._warn = warn_long_contexts
        self._long = self._longest = 0
        self._needs: list[tuple[str, Column]] = []
        # Which samples lack each column, kept once per column however many metrics need it.
        self._gaps: dict[Column, tuple[_Gap, _Gap]] = {}
        self._requirement_error: Exception | None = None
        self._user: list[tuple[str, str]] = []
        self._user_gaps: dict[str, _Gap] = {}
        try:
            for metric, needed in requirements.items():
                if isinstance(needed, (str, Column, UserColumn)):
                    needed = [needed]
                needed = list(needed)
                for user in (n for n in needed if isinstance(n, UserColumn)):
                    self._user.append((metric, user.name))
                    self._user_gaps.setdefault(user.name, _Gap())
                needed = [n for n in needed if not isinstance(n, UserColumn)]
                # Enum order, not the caller's: metrics often declare their columns as a frozenset, whose
                # iteration order changes between processes, and the message should not.
                for column in sorted({Column.resolve(name) for name in needed}, key=_COLUMN_ORDER.index):
                    self._needs.append((metric, column))
                    self._gaps.setdefault(column, (_Gap(), _Gap()))
        except Exception as exc:  # raised where validate meets it: after the checks of the samples
            self._requirement_error = exc
        self._may_lack = frozenset(may_lack) & set(self._gaps)

    def add(self, sample: Sample) -> None:
        """Check the next sample.

        Raises:
            DataError: its text holds a lone surrogate.
        """
        index = self.count
        _check_text(index, sample)
        if self._warn:
            for column in (Column.RETRIEVED_CONTEXTS, Column.REFERENCE_CONTEXTS):
                for context in sample.get(column) or ():
                    if len(context) > LONG_CONTEXT_CHARS:
                        self._long += 1
                        self._longest = max(self._longest, len(context))
        for column, (absent, empty) in self._gaps.items():
            value = sample.get(column)
            if value is None:
                absent.add(index, sample.id)
            elif column.is_list and len(value) == 0:
                empty.add(index, sample.id)
        for name, gap in self._user_gaps.items():
            if sample.metadata.get(name) is None:
                gap.add(index, sample.id)
        self.lacking.update(column for column in self._may_lack if not sample.get(column))
        self.count += 1

    def finish(self, source: str, columns: Sequence[str], roles: Mapping[str, str]) -> None:
        """Raise what `validate` raises for the samples added, and log its long-context warning.

        Args:
            source, columns, roles: The dataset's `source`, `columns` and `column_roles`, which the
                messages quote.

        Raises:
            DataError: There were no samples; a requirement names an unknown column; or some samples
                lack required columns (one error listing every problem).
        """
        if self.count == 0:
            raise DataError(
                f"The dataset ({source}) is empty: there are no samples to evaluate. Check the file, or the "
                "filter that produced it."
            )
        if self._long and not self.lacking:
            logger.warning(
                "%d context(s) are longer than %s characters (the longest has %s); they are sent whole. A "
                "judge with a smaller context window truncates or fails them: cut them first (jobs: "
                "metric_params.truncate_long_documents).",
                self._long,
                f"{LONG_CONTEXT_CHARS:,}",
                f"{self._longest:,}",
            )
        if self._requirement_error is not None:
            raise self._requirement_error
        problems: list[str] = []
        for metric, column in self._needs:
            absent, empty = self._gaps[column]
            if column not in self._may_lack and (absent.count or empty.count):
                problems.append(_problem(metric, column, absent, empty, self.count, columns, roles))
        for metric, name in self._user:
            gap = self._user_gaps[name]
            if gap.count:
                who = f"{_samples_phrase(gap, self.count)} {'lacks' if gap.count == 1 else 'lack'} it"
                problems.append(
                    f"Metric {metric!r} reads your column {name!r}; {who}. Fill it in, drop those samples, "
                    "or change the metric's `reads`."
                )
        if not problems:
            return
        count = f"{len(problems)} problem" + ("s" if len(problems) > 1 else "")
        raise DataError(
            f"The dataset ({source}) cannot be evaluated as given ({count}):\n"
            + "\n".join(f"- {problem}" for problem in problems)
            + f"\nThe dataset has columns {list(columns)}."
        )


class _Gap:
    """The samples that lack one column: how many, and the first `MAX_LISTED` (position, id)."""

    __slots__ = ("count", "shown")

    def __init__(self) -> None:
        self.count = 0
        self.shown: list[tuple[int, str]] = []

    def add(self, index: int, sample_id: str) -> None:
        if len(self.shown) < MAX_LISTED:
            self.shown.append((index, sample_id))
        self.count += 1


def _check_text(index: int, sample: Sample) -> None:
    """Raise DataError for the first text of sample `index` a model could not be sent (a lone surrogate)."""
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
                f"Sample {_sample_ref(index, sample.id)}, column {where!r}: the text holds a lone "
                f"surrogate ({text[position]!a}) at character {position}. {SURROGATE_FIX}"
            )


def _problem(
    metric: str,
    column: Column,
    absent: _Gap,
    empty: _Gap,
    total: int,
    columns: Sequence[str],
    roles: Mapping[str, str],
) -> str:
    legacy = f" (legacy name {column.legacy_name!r})" if column.legacy_name else ""
    who = []
    if absent.count:
        who.append(f"{_samples_phrase(absent, total)} {'lacks' if absent.count == 1 else 'lack'} it")
    if empty.count:
        who.append(f"{_samples_phrase(empty, total)} {'has' if empty.count == 1 else 'have'} an empty list")
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


def _samples_phrase(gap: _Gap, total: int) -> str:
    if gap.count == total and gap.count > 1:
        return f"all {gap.count} samples"
    shown = ", ".join(_sample_ref(index, sample_id) for index, sample_id in gap.shown)
    more = f" and {gap.count - MAX_LISTED} more" if gap.count > MAX_LISTED else ""
    return f"{'sample' if gap.count == 1 else 'samples'} {shown}{more}"


def _sample_ref(index: int, sample_id: str) -> str:
    # Show the id only when it says more than the position does.
    return str(index) if sample_id in ("", str(index)) else f"{index} (id {sample_id!r})"


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
