"""The fuzz suite's tally: cases, clear errors, scores, NaNs with a reason and crashes, per input format.

A plain module (not the conftest) so that the tests and the conftest's report share one copy."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

TALLY: Counter[str] = Counter()
"""Outcome -> count, summed over every format the fuzz tests ran."""
BY_FORMAT: dict[str, Counter[str]] = {}
FEATURES: Counter[str] = Counter()
"""Hostile input kind (lone surrogate, control character, deep nesting, huge field, wrong type, empty
value) -> how many cases held one."""
NAN_REASONS: Counter[str] = Counter()
"""NaN reason (up to its first ':') -> count."""
CRASHES: list[str] = []
"""One line per crash: the format, the exception and the input's preview."""


def record(fmt: str, outcome: str, n: int = 1) -> None:
    TALLY[outcome] += n
    BY_FORMAT.setdefault(fmt, Counter())[outcome] += n


def summary() -> dict[str, Any]:
    return {
        "cases": TALLY["cases"],
        "clear_errors": TALLY["clear_error"],
        "scored_results": TALLY["scored"],
        "nan_with_reason_results": TALLY["nan"],
        "evaluations": TALLY["evaluated"],
        "crashes": TALLY["crash"],
        "nan_reasons": dict(NAN_REASONS.most_common()),
        "cases_with": dict(FEATURES.most_common()),
        "by_format": {fmt: dict(counts) for fmt, counts in sorted(BY_FORMAT.items())},
        "crash_examples": CRASHES[:20],
    }


def write_summary(path: Path) -> dict[str, Any]:
    data = summary()
    path.write_text(json.dumps(data, indent=2, ensure_ascii=True), encoding="utf-8")
    return data
