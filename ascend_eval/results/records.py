"""What an executor hands back for each sample: its position, the sample, its prompt language and every
metric's outcome. The local engine and the Ray executor both produce these, in dataset order, and one sink
(`ascend_eval.results.sink`) turns them into files and aggregates."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from ascend_eval.data import Sample
from ascend_eval.metrics.base import MetricResult


@dataclass(frozen=True)
class ScoredSample:
    """One sample, scored by every metric of the run."""

    index: int
    """Its position in the dataset (0-based)."""
    sample: Sample
    language: str
    """The prompt language its plans ran in ("en" or "zh")."""
    results: Mapping[str, MetricResult]
    """Metric name -> outcome, in the run's metric order."""
