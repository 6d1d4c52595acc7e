"""One evaluation row (`Sample`), its columns (`Column`) and a loaded dataset (`Dataset`).

Column names follow RAGAS v0.2+ (`user_input`, `response`, `retrieved_contexts`, `reference`,
`reference_contexts`). The RAGAS v0.1 / NeMo Evaluator names (`question`, `answer`, `contexts`,
`ground_truth`) are accepted everywhere as aliases; see `LEGACY_ALIASES`.
"""

from __future__ import annotations

import copy
import json
import unicodedata
from collections.abc import Iterator, Mapping, Sequence
from enum import Enum
from types import MappingProxyType
from typing import Any, overload

from pydantic import BaseModel, ConfigDict, Field, StrictStr, field_validator, model_validator

from ascend_eval.errors import DataError


class Column(str, Enum):
    """A column that metrics read. The values are the RAGAS v0.2+ field names."""

    USER_INPUT = "user_input"
    RESPONSE = "response"
    RETRIEVED_CONTEXTS = "retrieved_contexts"
    REFERENCE = "reference"
    REFERENCE_CONTEXTS = "reference_contexts"

    def __str__(self) -> str:
        return self.value

    @property
    def legacy_name(self) -> str | None:
        """The RAGAS v0.1 / NeMo name of this column, or None if it never had one.

        >>> Column.RETRIEVED_CONTEXTS.legacy_name
        'contexts'
        >>> Column.REFERENCE_CONTEXTS.legacy_name is None
        True
        """
        return _LEGACY_NAMES.get(self)

    @property
    def is_list(self) -> bool:
        """True for the columns that hold a list of strings (the context columns).

        >>> Column.RETRIEVED_CONTEXTS.is_list, Column.USER_INPUT.is_list
        (True, False)
        """
        return self in LIST_COLUMNS

    @classmethod
    def resolve(cls, name: str | Column) -> Column:
        """The column for a current or legacy name.

        Args:
            name: A `Column`, its value (`"user_input"`) or its legacy name (`"question"`).

        Returns:
            The matching `Column`.

        Raises:
            DataError: `name` is neither a current nor a legacy column name.

        >>> Column.resolve("question")
        <Column.USER_INPUT: 'user_input'>
        >>> Column.resolve("retrieved_contexts")
        <Column.RETRIEVED_CONTEXTS: 'retrieved_contexts'>
        """
        if isinstance(name, Column):
            return name
        if name in LEGACY_ALIASES:
            return LEGACY_ALIASES[name]
        try:
            return cls(name)
        except ValueError:
            pass
        known = [c.value for c in cls] + list(LEGACY_ALIASES)
        raise DataError(
            f"Unknown column {name!r}. Valid names are {known} (the last {len(LEGACY_ALIASES)} are "
            f"legacy aliases).{did_you_mean(name, known)}"
        )


LEGACY_ALIASES: Mapping[str, Column] = MappingProxyType(
    {
        "question": Column.USER_INPUT,
        "answer": Column.RESPONSE,
        "contexts": Column.RETRIEVED_CONTEXTS,
        "ground_truth": Column.REFERENCE,
    }
)
"""RAGAS v0.1 / NeMo Evaluator column names and the current column each one means.

A very old format (RAGAS v0.0.x) also used `ground_truths`, a list of strings; `load_dataset` reads its
first element as `reference`. It is not listed here because it is not a plain rename.
"""

LIST_COLUMNS: frozenset[Column] = frozenset({Column.RETRIEVED_CONTEXTS, Column.REFERENCE_CONTEXTS})
"""Columns whose value is a list of strings; the others hold one string."""

_LEGACY_NAMES: dict[Column, str] = {column: legacy for legacy, column in LEGACY_ALIASES.items()}


def _as_tuple(value: Any) -> Any:
    return tuple(value) if isinstance(value, list) else value


def did_you_mean(name: str, options: Sequence[str]) -> str:
    import difflib

    close = difflib.get_close_matches(name, list(options), n=1)
    return f" Did you mean {close[0]!r}?" if close else ""


class Sample(BaseModel):
    """One row to evaluate: the RAGAS single-turn fields, an id and the row's other columns.

    Every column is optional; each metric states the columns it needs and `validate` checks them before
    any model loads. Strings are kept exactly as given (no stripping, no normalisation). The legacy
    names are accepted as constructor keywords and readable as properties (`question`, `answer`,
    `contexts`, `ground_truth`).

    >>> s = Sample(question="法国的首都是哪里？", retrieved_contexts=["巴黎是法国的首都。"])
    >>> s.user_input, s.contexts, s.has(Column.RESPONSE)
    ('法国的首都是哪里？', ('巴黎是法国的首都。',), False)
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    user_input: StrictStr | None = None
    """The question or instruction sent to the RAG pipeline (legacy name `question`)."""
    response: StrictStr | None = None
    """The pipeline's answer (legacy name `answer`)."""
    retrieved_contexts: tuple[StrictStr, ...] | None = None
    """The passages the pipeline retrieved, in rank order (legacy name `contexts`)."""
    reference: StrictStr | None = None
    """The reference (ground-truth) answer (legacy name `ground_truth`)."""
    reference_contexts: tuple[StrictStr, ...] | None = None
    """The passages that should have been retrieved."""
    id: StrictStr = ""
    """The row's `id` / `sample_id` column, else its position as a string (set by `load_dataset`)."""
    metadata: dict[str, Any] = Field(default_factory=dict)
    """The row's other columns, JSON-able. Not part of the hash."""

    @model_validator(mode="before")
    @classmethod
    def _accept_legacy_names(cls, data: Any) -> Any:
        if not isinstance(data, Mapping):
            return data
        renamed = dict(data)
        for legacy, column in LEGACY_ALIASES.items():
            if legacy not in renamed:
                continue
            value = renamed.pop(legacy)
            if column.value in renamed and _as_tuple(renamed[column.value]) != _as_tuple(value):
                raise ValueError(
                    f"both {legacy!r} and {column.value!r} are given, with different values; "
                    f"pass only {column.value!r}"
                )
            renamed[column.value] = value
        return renamed

    @field_validator("metadata")
    @classmethod
    def _metadata_is_json(cls, value: dict[str, Any]) -> dict[str, Any]:
        # The round trip both proves the metadata is JSON-able (results are exported as JSON) and
        # copies it, so that the caller's dict cannot change a frozen sample afterwards.
        try:
            return json.loads(json.dumps(value, ensure_ascii=False, allow_nan=False))
        except (TypeError, ValueError) as exc:
            raise ValueError(
                f"metadata must be JSON-able (str, number, bool, None, list, dict): {exc}"
            ) from exc

    def __hash__(self) -> int:
        return hash(
            (
                self.id,
                self.user_input,
                self.response,
                self.retrieved_contexts,
                self.reference,
                self.reference_contexts,
            )
        )

    def get(self, column: Column | str) -> str | tuple[str, ...] | None:
        """The value of a column, or None when absent.

        Args:
            column: A `Column`, or a current or legacy column name.

        Returns:
            A string, a tuple of strings (the context columns) or None.

        Raises:
            DataError: `column` is not a column name.

        >>> Sample(user_input="q").get("question")
        'q'
        """
        return getattr(self, Column.resolve(column).value)

    def has(self, column: Column | str) -> bool:
        """Whether a column is present (not None). Empty strings and empty lists count as present.

        >>> Sample(response="").has(Column.RESPONSE), Sample().has("answer")
        (True, False)
        """
        return self.get(column) is not None

    def language_text(self) -> str:
        """The text used to detect the sample's language: user_input, response and reference.

        Returns:
            The present ones joined with newlines; an empty string when none is present.

        >>> Sample(user_input="什么是RAG？", reference="检索增强生成").language_text()
        '什么是RAG？\\n检索增强生成'
        """
        parts = (self.user_input, self.response, self.reference)
        return "\n".join(part for part in parts if part is not None)

    def to_row(self) -> dict[str, Any]:
        """The sample as a row dict: its id, its metadata, then each present column under its current
        name (the context columns as lists). `load_dataset([row])` reads it back to an equal sample.

        >>> Sample(id="q1", question="q", contexts=["c"], metadata={"k": 1}).to_row()
        {'id': 'q1', 'k': 1, 'user_input': 'q', 'retrieved_contexts': ['c']}
        """
        row: dict[str, Any] = {"id": self.id, **copy.deepcopy(self.metadata)}
        for column in Column:
            value = self.get(column)
            if value is not None:
                row[column.value] = list(value) if column.is_list else value
        return row

    @property
    def question(self) -> str | None:
        """Legacy name of `user_input`."""
        return self.user_input

    @property
    def answer(self) -> str | None:
        """Legacy name of `response`."""
        return self.response

    @property
    def contexts(self) -> tuple[str, ...] | None:
        """Legacy name of `retrieved_contexts`."""
        return self.retrieved_contexts

    @property
    def ground_truth(self) -> str | None:
        """Legacy name of `reference`."""
        return self.reference

    @property
    def joined_contexts(self) -> str | None:
        """The retrieved contexts joined with newlines, as RAGAS puts them in its prompts.

        >>> Sample(retrieved_contexts=["a", "b"]).joined_contexts
        'a\\nb'
        """
        if self.retrieved_contexts is None:
            return None
        return "\n".join(self.retrieved_contexts)


class Dataset(Sequence[Sample]):
    """An immutable sequence of `Sample`s that remembers where it came from.

    `load_dataset` builds it. Indexing with an int gives a `Sample`; slicing gives a `Dataset` with the
    same `columns` and `source`.

    Args:
        samples: The samples, in dataset order.
        columns: The column names the source had, as written there (before any renaming).
        source: A short description of the source, used in error messages.
        column_roles: For each source column, what it became: a `Column` value, `"id"`, or
            `"metadata"`. Defaults to a role derived from the name alone.

    >>> ds = Dataset([Sample(id="0", question="q")], columns=["question"], source="example")
    >>> len(ds), ds[0].question, ds.columns
    (1, 'q', ('question',))
    """

    __slots__ = ("_column_roles", "_columns", "_samples", "_source")

    def __init__(
        self,
        samples: Sequence[Sample],
        *,
        columns: Sequence[str] = (),
        source: str = "samples",
        column_roles: Mapping[str, str] | None = None,
    ) -> None:
        for index, sample in enumerate(samples):
            if not isinstance(sample, Sample):
                raise DataError(
                    f"Dataset item {index} is a {type(sample).__name__}, not a Sample. "
                    "Build datasets with load_dataset(...), which accepts rows, files and dataframes."
                )
        self._samples: tuple[Sample, ...] = tuple(samples)
        self._columns: tuple[str, ...] = tuple(columns)
        self._source = source
        if column_roles is None:
            column_roles = {name: default_role(name) for name in self._columns}
        self._column_roles: Mapping[str, str] = MappingProxyType(dict(column_roles))

    @property
    def columns(self) -> tuple[str, ...]:
        """The source's column names, as written there, in the order first seen."""
        return self._columns

    @property
    def source(self) -> str:
        """A short description of where the samples came from (a path, "pandas DataFrame", ...)."""
        return self._source

    @property
    def column_roles(self) -> Mapping[str, str]:
        """What each source column became: a `Column` value, `"id"` or `"metadata"`."""
        return self._column_roles

    def with_samples(self, samples: Sequence[Sample]) -> Dataset:
        """Other samples from the same source, e.g. with contexts cut or filled in by the RAG pipeline.

        The source and columns stay; a column the samples gained (a current column name or a metadata
        key no source column gives) is added to `columns`, so messages about the new samples name it.

        >>> ds = Dataset([Sample(id="0", question="q")], columns=["question"], source="example")
        >>> ds.with_samples([Sample(id="0", question="q", answer="a")]).columns
        ('question', 'response')
        """
        columns = list(self._columns)
        roles = dict(self._column_roles)
        given = set(roles.values())
        for column in Column:
            if column.value not in given and any(s.has(column) for s in samples):
                columns.append(column.value)
                roles[column.value] = column.value
        for sample in samples:
            for key in sample.metadata:
                if key not in roles:
                    columns.append(key)
                    roles[key] = "metadata"
        return Dataset(samples, columns=columns, source=self._source, column_roles=roles)

    def __len__(self) -> int:
        return len(self._samples)

    @overload
    def __getitem__(self, index: int) -> Sample: ...

    @overload
    def __getitem__(self, index: slice) -> Dataset: ...

    def __getitem__(self, index: int | slice) -> Sample | Dataset:
        if isinstance(index, slice):
            return Dataset(
                self._samples[index],
                columns=self._columns,
                source=self._source,
                column_roles=self._column_roles,
            )
        return self._samples[index]

    def __iter__(self) -> Iterator[Sample]:
        return iter(self._samples)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Dataset):
            return self._samples == other._samples and self._columns == other._columns
        return NotImplemented

    def __hash__(self) -> int:
        return hash((self._samples, self._columns))

    def __repr__(self) -> str:
        return f"Dataset({len(self)} samples from {self._source}, columns={list(self._columns)})"


def bare_name(name: str) -> str:
    """A column name as it shows: without invisible format characters anywhere in it (U+FEFF, the
    byte-order mark; U+200B, the zero-width space; joiners, bidi marks: Unicode's category Cf) and without
    white space at its ends, so that a name that holds them is matched as the name it shows. A CSV saved
    with two BOMs, files joined with `paste`, a JSON written from a CSV read without `utf-8-sig`, or a
    header copied from a web page give such names.

    >>> bare_name("\\ufeffid"), bare_name("gro\\ufeffund_truth"), bare_name("\\u200bid")
    ('id', 'ground_truth', 'id')
    >>> bare_name("\\ufeff \\ufeffid"), bare_name(" question ")
    ('id', 'question')
    """
    if name.isascii():
        return name.strip()
    return "".join(c for c in name if unicodedata.category(c) != "Cf").strip()


def default_role(name: str) -> str:
    """What a source column becomes when no column_map names it.

    Args:
        name: A column name as written in the source; a U+FEFF in it is ignored (`bare_name`).

    Returns:
        A `Column` value (current names, legacy aliases, and `ground_truths`, whose first element is
        the reference), `"id"` (for `id` and `sample_id`) or `"metadata"` (anything else).

    >>> default_role("contexts"), default_role("ground_truths"), default_role("sample_id"), default_role("x")
    ('retrieved_contexts', 'reference', 'id', 'metadata')
    """
    name = bare_name(name)
    if name in LEGACY_ALIASES:
        return LEGACY_ALIASES[name].value
    if name in _COLUMN_VALUES:
        return name
    if name == GROUND_TRUTHS:
        return Column.REFERENCE.value
    if name in ID_COLUMNS:
        return "id"
    return "metadata"


GROUND_TRUTHS = "ground_truths"
"""The RAGAS v0.0.x column: a list of reference answers, of which the first is used."""

ID_COLUMNS = ("id", "sample_id")
"""Source columns that give the sample id (if a row has both, they must agree)."""

_COLUMN_VALUES = frozenset(column.value for column in Column)
