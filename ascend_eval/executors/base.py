"""What every executor is: a function from one checked evaluation (`RunInput`) to its result.

`evaluate()` does what all runs share (build the settings, open and check the samples, choose the sink)
and hands the rest to the executor its settings name (`ascend_eval.executors.EXECUTORS`): the local one
runs one engine in this process (`ascend_eval.executors.local`), the Ray one a pool of actors, each with an
engine of its own (`ascend_eval.executors.ray_data`). Both put their scored samples into the same sink, in
dataset order, so their results are the same.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol

from ascend_eval.config import EvaluationConfig
from ascend_eval.data.stream import SampleStream
from ascend_eval.metrics import Metric
from ascend_eval.results import EvaluationResult
from ascend_eval.results.sink import FileSink, MemorySink


@dataclass(frozen=True)
class RunInput:
    """One evaluation, checked and ready to score."""

    stream: SampleStream
    """The samples, read as the executor iterates them (every check already passed)."""
    count: int
    metrics: list[Metric]
    config: EvaluationConfig
    sink: MemorySink | FileSink
    """Where scored samples go, in dataset order; the executor finishes it."""
    tracer: Any
    """The run's OpenTelemetry tracer (`ascend_eval.engine.tracing`), a no-op one when tracing is off."""
    started: float
    """`time.perf_counter()` when the evaluation began: the wall time it records counts from here."""

    @property
    def names(self) -> list[str]:
        return [m.name for m in self.metrics]


class Executor(Protocol):
    """Scores every sample of `run` with every metric and returns the finished sink's result."""

    def __call__(self, run: RunInput) -> EvaluationResult: ...
