"""Where scored samples go: into memory (an `EvaluationResult`), or into a results folder as they come
(a `StoredResult` read back from it), in both cases in dataset order.

`Collector` turns the engine's outcomes, which finish in any order, into `ScoredSample`s in dataset
order, holding only the samples whose plans are still running (or finished ahead of an earlier one).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import asdict
from pathlib import Path
from typing import Any

from ascend_eval.data import Sample
from ascend_eval.engine.plan import PlanError
from ascend_eval.engine.stats import RoundStats, StageStats
from ascend_eval.metrics.base import MetricResult
from ascend_eval.results.files import SAMPLES_FILE, SamplesWriter, sample_row, summary_dict
from ascend_eval.results.records import ScoredSample
from ascend_eval.results.result import EvaluationResult, StoredResult
from ascend_eval.results.tally import MetricTally


class Collector:
    """Gathers each sample's metric outcomes and emits the sample, complete, in dataset order.

    `expect(index, sample, language)` must come before any outcome of that sample (the local executor
    calls it just before the sample's first plan starts).
    """

    def __init__(self, metrics: Sequence[str], emit: Callable[[ScoredSample], None]) -> None:
        self.metrics = list(metrics)
        self.emit = emit
        self._pending: dict[int, tuple[Sample, str, dict[str, MetricResult]]] = {}
        self._next = 0

    def expect(self, index: int, sample: Sample, language: str) -> None:
        self._pending[index] = (sample, language, {})

    def outcome(self, pid: tuple[int, str], outcome: Any) -> None:
        index, metric = pid
        result = MetricResult.nan(outcome.reason) if isinstance(outcome, PlanError) else outcome
        self._pending[index][2][metric] = result
        while self._next in self._pending and len(self._pending[self._next][2]) == len(self.metrics):
            sample, language, results = self._pending.pop(self._next)
            self.emit(ScoredSample(self._next, sample, language, {m: results[m] for m in self.metrics}))
            self._next += 1

    @property
    def waiting(self) -> int:
        """Samples started and not emitted yet."""
        return len(self._pending)


class MemorySink:
    """Keeps every scored sample: the `EvaluationResult` of a run without a results folder."""

    def __init__(self, metrics: Sequence[str]) -> None:
        self.metrics = list(metrics)
        self.samples: list[Sample] = []
        self.languages: list[str] = []
        self.results: dict[str, list[MetricResult]] = {m: [] for m in self.metrics}

    def add(self, scored: ScoredSample) -> None:
        self.samples.append(scored.sample)
        self.languages.append(scored.language)
        for m in self.metrics:
            self.results[m].append(scored.results[m])

    def close(self) -> None:
        """Nothing to release."""

    def finish(
        self,
        *,
        rounds: list[RoundStats],
        stages: dict[str, StageStats],
        provenance: dict[str, Any],
        wall_seconds: float,
    ) -> EvaluationResult:
        return EvaluationResult(
            samples=self.samples,
            results=self.results,
            languages=self.languages,
            rounds=rounds,
            stages=stages,
            provenance=provenance,
            wall_seconds=wall_seconds,
        )


class FileSink:
    """Writes each scored sample to `out/samples.jsonl` as it comes and keeps only online aggregates;
    `finish` writes the rest of the folder and returns the run read back lazily from it.

    Memory does not grow with the number of samples: a sample is a line on disk once scored.
    """

    def __init__(self, out: Path, metrics: Sequence[str]) -> None:
        self.out = out
        self.metrics = list(metrics)
        self.tallies = {m: MetricTally(m) for m in self.metrics}
        self.languages: Counter[str] = Counter()
        self.count = 0
        self._writer = SamplesWriter(out / SAMPLES_FILE)

    def add(self, scored: ScoredSample) -> None:
        self._writer.write(sample_row(scored.sample, scored.language, scored.results, details=True))
        self.count += 1
        self.languages[scored.language] += 1
        for m in self.metrics:
            self.tallies[m].add(scored.results[m], scored.language)

    def close(self) -> None:
        """Flush and close `samples.jsonl` (what was scored so far stays on disk)."""
        self._writer.close()

    def finish(
        self,
        *,
        rounds: list[RoundStats],
        stages: dict[str, StageStats],
        provenance: dict[str, Any],
        wall_seconds: float,
    ) -> StoredResult:
        self._writer.finish()
        summary = summary_dict(
            aggregates=[self.tallies[m].aggregate() for m in self.metrics],
            intervals={m: self.tallies[m].interval() for m in self.metrics},
            samples=self.count,
            languages=self.languages,
            nan_reasons={m: self.tallies[m].reasons for m in self.metrics},
            engine={
                "wall_seconds": wall_seconds,
                "rounds": [asdict(r) for r in rounds],
                "stages": {label: asdict(s) for label, s in stages.items()},
            },
            provenance=provenance,
        )
        stored = StoredResult(self.out, summary)
        stored.write_folder(self.out)  # summary.json included
        return stored
