"""What a metric is: required columns, the model roles it needs, and a plan that yields requests.

A metric never calls a model. Its `plan(sample, ctx)` is a generator: it yields lists of typed requests,
receives their results in the same order, and returns a `MetricResult`. The scoring after the last yield
is a pure function, tested on its own.
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from collections.abc import Generator, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, ClassVar, Literal

from ascend_eval.choices import JudgeMode, Method, Scoring
from ascend_eval.data import Column, Sample, UserColumn
from ascend_eval.models.base import Request
from ascend_eval.prompts.base import MAX_WRITTEN_ITEMS, Written
from ascend_eval.prompts.layout import SampleBlock
from ascend_eval.text.language import Language

RoleName = Literal["judge", "embedder", "reranker"]


RAW_HEAD = 2000
RAW_TAIL = 200
"""A raw judge reply kept in a result's details (`raw`, also inside each of `failures`) is at most its
first `RAW_HEAD` and last `RAW_TAIL` characters, with its full length as `raw_chars` beside it: a judge
that ignores max_tokens may send megabytes, and every results file copies the details."""


def raw_excerpt(text: str) -> str:
    """`text` as a result keeps it: whole up to `RAW_HEAD + RAW_TAIL` characters, else its start and end
    around a marker that says how much was left out.

    >>> raw_excerpt("short")
    'short'
    >>> e = raw_excerpt("a" * 3000 + "z" * 300); e[:3], e[-3:], len(e) < 2300
    ('aaa', 'zzz', True)
    """
    if len(text) <= RAW_HEAD + RAW_TAIL:
        return text
    left_out = len(text) - RAW_HEAD - RAW_TAIL
    return f"{text[:RAW_HEAD]}\n[… {left_out:,} characters not kept …]\n{text[-RAW_TAIL:]}"


def _bounded_raw(entry: dict[str, Any]) -> dict[str, Any]:
    raw = entry.get("raw")
    if not isinstance(raw, str) or "raw_chars" in entry or len(raw) <= RAW_HEAD + RAW_TAIL:
        return entry  # short, not text, or already cut (a result read back from results.json)
    return {**entry, "raw": raw_excerpt(raw), "raw_chars": len(raw)}


def bounded_details(details: dict[str, Any]) -> dict[str, Any]:
    """`details` with each raw judge reply in it cut to `raw_excerpt` and its length beside it
    (`raw_chars`): `raw` itself, and `raw` in each object of a list (the dual judges' `failures`). The
    dict is returned as it is when nothing needs cutting.

    >>> d = bounded_details({"raw": "x" * 5000, "failures": [None, {"reason": "r", "raw": "y" * 9000}]})
    >>> d["raw_chars"], len(d["raw"]) < 2300, d["failures"][1]["raw_chars"]
    (5000, True, 9000)
    """
    if not isinstance(details, dict):
        return details
    out = _bounded_raw(details)
    for key, value in details.items():
        if isinstance(value, list) and any(isinstance(item, dict) and "raw" in item for item in value):
            items = [_bounded_raw(item) if isinstance(item, dict) else item for item in value]
            if any(a is not b for a, b in zip(items, value, strict=True)):
                out = {**out, key: items}
    return out


@dataclass(frozen=True)
class MetricResult:
    """One metric's outcome on one sample: a score, or NaN with the reason.

    Reasons: "no_statements" and similar mean the score is undefined for this sample; "parse_failure: ...",
    "truncated: ..." and "backend_error: ..." mean the judge or a backend failed. `details` keeps what the
    score was computed from (statements, verdict probabilities, raw judge text on failure).
    """

    score: float
    reason: str | None = None
    details: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        # The one place raw judge text is bounded: every metric builds its results here, and results.json,
        # samples.jsonl, report.html and the Ray executor's records all copy these details.
        object.__setattr__(self, "details", bounded_details(self.details))
        cut = {k: v.given for k, v in self.details.items() if isinstance(v, Written) and v.cut}
        if cut and "items_cut" not in self.details:
            said = ", ".join(f"{key}: {given:,} written" for key, given in cut.items())
            self.details["items_cut"] = f"{said}; the first {MAX_WRITTEN_ITEMS} of each were judged"

    @classmethod
    def nan(cls, reason: str, **details: Any) -> MetricResult:
        return cls(math.nan, reason, details)

    @property
    def ok(self) -> bool:
        return not math.isnan(self.score)


@dataclass(frozen=True)
class PlanContext:
    """Per-sample settings a plan reads."""

    language: Language
    """The prompt language chosen for this sample ("auto" is resolved before plans start)."""
    ragas_compat: bool = False
    """Reproduce RAGAS's arithmetic exactly, quirks included (epsilons, NaN handling, exact-string entity
    matching), instead of the sensible defaults. Each difference is listed in the metrics docs."""
    judge_mode: JudgeMode = "classify"
    """"classify": verdicts and ratings are `Classify` requests answered from next-token probabilities in
    one forward pass. "generate": RAGAS's procedure, schema-constrained JSON with a reason per verdict."""
    block: SampleBlock | None = None
    """The sample's texts, which its prompts are rendered after (`prompts/layout.py`); None renders them
    task first."""
    calibration: Method | None = None
    """How yes/no verdicts are calibrated in classify mode (`prompts/calibration.py`); None: read as they
    come, against `VERDICT_THRESHOLD`."""
    scoring: Scoring = "threshold"
    """"threshold": each verdict counts as yes or no, as RAGAS counts them. "expected": a verdict-based
    score is its expected value under the verdict probabilities (`docs/metrics.md`, "Expected scores")."""

    def task_first(self) -> PlanContext:
        """This context without the sample block: the requests a plan builds from it are task first in
        every layout. For a metric whose own use of a shared prompt was measured worse sample first, where
        other metrics' uses of the same prompt were not (`docs/metrics.md`, "Prompt layout")."""
        return replace(self, block=None)


Plan = Generator[Sequence[Request], list[Any], MetricResult]


class Metric(ABC):
    """Base of every metric. Subclasses set `name` and `required` and write `plan`."""

    name: ClassVar[str]
    """The result column, snake_case, as RAGAS names it."""
    required: ClassVar[frozenset[Column]]
    """Columns every sample must have for this metric."""

    @property
    def needs(self) -> frozenset[Column | UserColumn]:
        """Every column a sample must have for this metric: `required`, and the user's own columns that a
        metric of the user's reads (`metrics/criteria.py`). Checked before any model loads."""
        return frozenset(self.required)

    @property
    def roles(self) -> frozenset[RoleName]:
        """The model roles this metric (as configured) sends requests to."""
        return frozenset({"judge"})

    @property
    def params(self) -> dict[str, Any]:
        """The settings that change scores, recorded in provenance."""
        return {}

    @abstractmethod
    def plan(self, sample: Sample, ctx: PlanContext) -> Plan:
        """Yield requests, receive results, return the score."""

    def __repr__(self) -> str:
        args = ", ".join(f"{k}={v!r}" for k, v in self.params.items())
        return f"{type(self).__name__}({args})"
