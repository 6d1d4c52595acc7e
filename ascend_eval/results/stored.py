"""A saved run's `samples.jsonl` read on demand: one pass records where each line starts and every
metric's score, reason and each sample's language (a few bytes per sample); a sample's inputs and details
are parsed only when that sample is asked for."""

from __future__ import annotations

import json
import math
import sys
from abc import abstractmethod
from array import array
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any, TypeVar, overload

from ascend_eval.data import Sample
from ascend_eval.metrics.base import MetricResult
from ascend_eval.results.files import result_from_row, sample_from_row

T = TypeVar("T")


class RowFile:
    """Random access to the rows of one `samples.jsonl`, with the light columns of all rows in memory."""

    def __init__(self, path: Path, metrics: Sequence[str]) -> None:
        self.path = path
        self.metrics = list(metrics)
        self._offsets: array[int] | None = None
        self._scores: dict[str, array[float]] = {}
        self._reasons: dict[str, list[str | None]] = {}
        self._languages: list[str] = []

    def _index(self) -> None:
        if self._offsets is not None:
            return
        offsets: array[int] = array("q")
        scores = {m: array("d") for m in self.metrics}
        reasons: dict[str, list[str | None]] = {m: [] for m in self.metrics}
        languages: list[str] = []
        with self.path.open("rb") as f:
            position = 0
            for line in f:
                start, position = position, position + len(line)
                if not line.strip():
                    continue
                row = json.loads(line)
                offsets.append(start)
                languages.append(sys.intern(str(row.get("language", "en"))))
                for m in self.metrics:
                    value = row.get(m)
                    scores[m].append(math.nan if value is None else float(value))
                    reason = row.get(f"{m}_reason")
                    reasons[m].append(None if reason is None else sys.intern(reason))
        self._offsets, self._scores, self._reasons, self._languages = offsets, scores, reasons, languages

    def __len__(self) -> int:
        self._index()
        assert self._offsets is not None
        return len(self._offsets)

    def row(self, index: int) -> dict[str, Any]:
        self._index()
        assert self._offsets is not None
        with self.path.open("rb") as f:
            f.seek(self._offsets[index])
            return json.loads(f.readline())  # type: ignore[no-any-return]

    def scores(self, metric: str) -> list[float]:
        self._index()
        return list(self._scores[metric])

    def reasons(self, metric: str) -> list[str | None]:
        self._index()
        return self._reasons[metric]

    def languages(self) -> list[str]:
        self._index()
        return self._languages


class _RowView(Sequence[T]):
    """A sequence over a `RowFile`'s rows, each item made from its row when indexed."""

    def __init__(self, rows: RowFile) -> None:
        self._rows = rows

    def __len__(self) -> int:
        return len(self._rows)

    @abstractmethod
    def _item(self, row: dict[str, Any], index: int) -> T:
        """The item that sample `index`'s row stands for."""

    @overload
    def __getitem__(self, index: int) -> T: ...

    @overload
    def __getitem__(self, index: slice) -> list[T]: ...

    def __getitem__(self, index: int | slice) -> T | list[T]:
        n = len(self)
        if isinstance(index, slice):
            return [self[i] for i in range(*index.indices(n))]
        if index < 0:
            index += n
        if not 0 <= index < n:
            raise IndexError(index)
        return self._item(self._rows.row(index), index)


class StoredSamples(_RowView[Sample]):
    """The run's samples (id and inputs), each parsed when asked for."""

    def _item(self, row: dict[str, Any], index: int) -> Sample:
        return sample_from_row(row, index)


class StoredColumn(_RowView[MetricResult]):
    """One metric's outcomes: `[i]` parses sample i's row (details included)."""

    def __init__(self, rows: RowFile, metric: str) -> None:
        super().__init__(rows)
        self.metric = metric

    def _item(self, row: dict[str, Any], index: int) -> MetricResult:
        return result_from_row(row, self.metric)

    def __iter__(self) -> Iterator[MetricResult]:
        with self._rows.path.open(encoding="utf-8") as f:
            for line in f:
                if line.strip():
                    yield result_from_row(json.loads(line), self.metric)


class StoredLanguages(Sequence[str]):
    def __init__(self, rows: RowFile) -> None:
        self._rows = rows

    def __len__(self) -> int:
        return len(self._rows)

    def __getitem__(self, index: Any) -> Any:
        return self._rows.languages()[index]
