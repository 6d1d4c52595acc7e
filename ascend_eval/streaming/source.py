"""Placeholder until the streaming readers land: reads the whole dataset (replaced by a real stream)."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from typing import Any

from ascend_eval.data import Column, Dataset, Sample, load_dataset, validate


class SampleStream:
    def __init__(self, data: Dataset, origin: Any) -> None:
        self.data = data
        self.origin = origin
        self.source = data.source
        self.columns = data.columns
        self.roles = data.column_roles

    def __iter__(self) -> Iterator[Sample]:
        return iter(self.data)

    def __len__(self) -> int:
        return len(self.data)


def open_samples(source: Any, *, column_map: Mapping[str, str] | None = None) -> SampleStream:
    return SampleStream(load_dataset(source, column_map=column_map), source)


def check_samples(stream: SampleStream, requirements: Mapping[str, Iterable[Column | str]]) -> int:
    validate(stream.data, requirements)
    return len(stream.data)
