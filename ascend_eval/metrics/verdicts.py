"""Yes/no verdicts as metrics ask for them: one prompt's requests, calibrated when the run says so.

`Asked` builds a classify prompt's requests for a list of inputs and, with `PlanContext.calibration` set,
appends that prompt's calibration requests (`prompts/calibration.py`); `read` parses the answers and moves
each verdict's probability by the calibration they measured. Every sample asks the same calibration
requests, so the engine answers them once per run and language.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel

from ascend_eval.metrics.base import PlanContext
from ascend_eval.models.base import ClassifyRequest, ClassifyResult
from ascend_eval.prompts.base import ClassifyPromptSpec, ParseFailure, Verdict
from ascend_eval.prompts.calibration import Calibration


@dataclass
class Asked:
    """The requests of one yes/no prompt for `inputs`, then its calibration requests (if any)."""

    spec: ClassifyPromptSpec[Any]
    inputs: Sequence[BaseModel]
    ctx: PlanContext
    requests: list[ClassifyRequest] = field(init=False)
    calibration: Calibration | None = field(init=False, default=None)
    """What `read` measured, None without calibration (or before `read`)."""

    def __post_init__(self) -> None:
        if self.spec.positive is None or len(self.spec.labels) != 2:
            raise ValueError(f"{self.spec.tag} is not a yes/no prompt")
        ctx = self.ctx
        self.requests = [self.spec.request(x, ctx.language, ctx.block) for x in self.inputs]
        if ctx.calibration is not None and self.inputs:
            sample_first = ctx.block is not None
            self.requests += self.spec.calibration_requests(ctx.calibration, ctx.language, sample_first)

    def read(self, results: Sequence[ClassifyResult]) -> list[Verdict | ParseFailure]:
        """Each input's verdict (or why it cannot be read), calibrated. A calibration answer that cannot
        be read fails every verdict, with its reason."""
        n = len(self.inputs)
        verdicts = [self.spec.parse(r) for r in results[:n]]
        if self.ctx.calibration is None or not n:
            return verdicts
        anchors = self.spec.parse_all(results[n:])
        if isinstance(anchors, ParseFailure):
            failed = ParseFailure(anchors.raw, f"{anchors.reason} (a calibration request of {self.spec.tag})")
            return [failed] * n
        self.calibration = Calibration.measured(self.ctx.calibration, [a.p_positive for a in anchors])
        return [v if isinstance(v, ParseFailure) else self._moved(v) for v in verdicts]

    def read_all(self, results: Sequence[ClassifyResult]) -> list[Verdict] | ParseFailure:
        """`read`, or its first failure: for scores that need every verdict."""
        verdicts = self.read(results)
        first = next((v for v in verdicts if isinstance(v, ParseFailure)), None)
        return first if first is not None else verdicts  # type: ignore[return-value]

    def details(self) -> dict[str, Any]:
        """What the calibration measured, for a result's details (nothing without one)."""
        c = self.calibration
        if c is None:
            return {}
        return {"calibration": {"method": c.method, "threshold": c.threshold, "scale": c.scale}}

    def _moved(self, verdict: Verdict) -> Verdict:
        assert self.calibration is not None and verdict.positive is not None
        p = self.calibration.apply(verdict.p_positive)
        probs = tuple(p if label == verdict.positive else 1 - p for label in verdict.labels)
        return Verdict(labels=verdict.labels, probs=probs, positive=verdict.positive)
