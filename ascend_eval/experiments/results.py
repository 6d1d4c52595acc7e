"""What an experiment produces: one `PointResult` per point of the grid and the `ExperimentResult` that
holds them all (the report renders it; the sweep fills it)."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any


@dataclass
class PointResult:
    """One point of the grid: its parameters, its job spec, and its scores (or why it failed)."""

    label: str
    params: dict[str, Any]
    spec: dict[str, Any]
    status: str
    """"completed" or "failed"."""
    seconds: float
    aggregates: list[dict[str, Any]] = field(default_factory=list)
    rows: list[dict[str, Any]] = field(default_factory=list)
    error: str | None = None
    job: dict[str, Any] | None = None
    """The job's id and directory, when the point ran as a job."""

    def aggregate(self, metric: str) -> dict[str, Any] | None:
        return next((a for a in self.aggregates if a.get("name") == metric), None)

    def mean(self, metric: str) -> float | None:
        found = self.aggregate(metric)
        return None if found is None else found.get("mean")

    def scores(self, metric: str) -> list[float]:
        """Per-sample scores of `metric`, NaN (stored as None) left out."""
        values = (row.get(metric) for row in self.rows)
        return [float(v) for v in values if isinstance(v, int | float) and not math.isnan(v)]

    def summary(self) -> dict[str, Any]:
        return {
            "label": self.label,
            "params": self.params,
            "status": self.status,
            "seconds": round(self.seconds, 3),
            "aggregate_scores": self.aggregates,
            "error": self.error,
            "job": self.job,
            "spec": self.spec,
        }


@dataclass
class ExperimentResult:
    """Every point's scores and where the comparison was written."""

    name: str
    sweep: dict[str, list[Any]]
    points: list[PointResult]
    out_dir: Path
    wall_seconds: float
    paths: dict[str, Path] = field(default_factory=dict)
    """"report" (report.html), "summary" (summary.md), "points" (points.json)."""

    @property
    def metrics(self) -> list[str]:
        """Metric names in the order the points report them."""
        names: dict[str, None] = {}
        for point in self.points:
            names.update((a["name"], None) for a in point.aggregates)
        return list(names)

    def best(self, metric: str) -> PointResult | None:
        """The point with the highest mean of `metric` (the first one on a tie)."""
        scored = [p for p in self.points if p.mean(metric) is not None]
        return max(scored, key=lambda p: p.mean(metric)) if scored else None  # type: ignore[arg-type,return-value]

    def table(self) -> str:
        """Mean of every metric per point, as aligned text."""
        header = ["point", *self.metrics, "seconds"]
        body = [
            [p.label, *(format_mean(p.mean(m)) for m in self.metrics), f"{p.seconds:.1f}"]
            if p.status == "completed"
            else [p.label, *("-" for _ in self.metrics), f"failed: {p.error}"[:60]]
            for p in self.points
        ]
        widths = [max(len(r[i]) for r in [header, *body]) for i in range(len(header))]
        lines = [
            "  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip() for r in [header, *body]
        ]
        lines.insert(1, "  ".join("-" * w for w in widths))
        return "\n".join(lines)

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "sweep": self.sweep,
            "metrics": self.metrics,
            "wall_seconds": round(self.wall_seconds, 3),
            "points": [p.summary() for p in self.points],
        }


def format_mean(value: float | None) -> str:
    """A mean as the tables show it: four decimals, "-" for none.

    >>> format_mean(0.5), format_mean(None)
    ('0.5000', '-')
    """
    return "-" if value is None else f"{value:.4f}"
