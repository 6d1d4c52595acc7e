"""One line on why a sample got its score, read from what each metric keeps in `MetricResult.details`.

Rules follow the details' keys rather than metric names, so a new metric whose details look like an
existing one's (statements with support probabilities, per-context verdicts, ratings) is explained too.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from ascend_eval.metrics.base import MetricResult
from ascend_eval.prompts.base import VERDICT_THRESHOLD

_MAX_REASON = 120


def _numbers(values: Any) -> list[float] | None:
    if (
        isinstance(values, Sequence)
        and not isinstance(values, str)
        and all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in values)
    ):
        return [float(v) for v in values]
    return None


def _flags(values: Any) -> list[bool] | None:
    numbers = _numbers(values)
    if numbers is None and isinstance(values, Sequence) and all(isinstance(v, bool) for v in values):
        numbers = [float(v) for v in values]
    return None if numbers is None else [v != 0 for v in numbers]


def _share(what: str, flags: Sequence[bool], of: str) -> str:
    return f"{sum(flags)}/{len(flags)} {what} {of}"


def _fmt(values: Sequence[float | None]) -> str:
    return ", ".join("-" if v is None else f"{v:.2f}" for v in values)


def _statements(d: dict[str, Any]) -> str | None:
    statements = d.get("statements")
    if not isinstance(statements, list):
        return None
    probs = _numbers(d.get("p_supported"))
    if probs is not None and len(probs) == len(statements):
        return _share("statements", [p > VERDICT_THRESHOLD for p in probs], "supported")
    for key, word in (("verdicts", "supported"), ("attributed", "attributed")):
        flags = _flags(d.get(key))
        if flags is not None:
            return _share("statements", flags, word)
    return f"{len(statements)} statement(s)"


def _correctness(d: dict[str, Any]) -> str | None:
    if all(k in d for k in ("tp", "fp", "fn")):
        line = f"TP {d['tp']}, FP {d['fp']}, FN {d['fn']}"
    elif isinstance(d.get("factuality"), (int, float)) and isinstance(d.get("response_statements"), list):
        # no TP/FP/FN when a side had no statements to classify (e.g. none extracted from the response)
        counts = [
            len(d[k]) for k in ("response_statements", "reference_statements") if isinstance(d.get(k), list)
        ]
        line = f"factuality {d['factuality']:.2f} ({' vs '.join(map(str, counts))} statements)"
    else:
        return None
    if isinstance(d.get("similarity"), (int, float)):
        line += f"; similarity {d['similarity']:.2f}"
    return line


def _contexts(d: dict[str, Any]) -> str | None:
    flags = _flags(d.get("verdicts"))
    if flags is None:
        return None
    if not flags:
        return "no contexts"
    marks = "".join("+" if f else "-" for f in flags)
    return f"{sum(flags)}/{len(flags)} contexts useful ({marks} in rank order)"


def _ratings(d: dict[str, Any]) -> str | None:
    ratings = d.get("ratings")
    if not isinstance(ratings, list):
        return None
    return f"ratings {_fmt(ratings)}"


def _questions(d: dict[str, Any]) -> str | None:
    questions = d.get("questions")
    if not isinstance(questions, list):
        return None
    line = f"{len(questions)} generated questions"
    noncommittal = _flags(d.get("noncommittal"))
    if noncommittal:
        line += f", {sum(noncommittal)} noncommittal"
    similarities = _numbers(d.get("similarities"))
    if similarities:
        line += f", similarity {_fmt(similarities)}"
    return line


def _entities(d: dict[str, Any]) -> str | None:
    reference = d.get("reference_entities")
    matched = d.get("matched")
    if not isinstance(reference, list) or not isinstance(matched, list):
        return None
    return f"{len(matched)}/{len(reference)} reference entities in the contexts"


def _noise(d: dict[str, Any]) -> str | None:
    statements = d.get("response_statements")
    supported = _flags(d.get("ref_supports_answer"))
    if not isinstance(statements, list) or supported is None:
        return None
    return f"{len(statements)} response statement(s), {sum(supported)} supported by the reference"


_RULES = (_correctness, _noise, _statements, _contexts, _ratings, _questions, _entities)


def explain(result: MetricResult) -> str:
    """A short account of one score from its details: counts of supported statements, per-context
    verdicts, ratings, the NaN reason; "" when the details hold nothing this recognises.

    >>> explain(MetricResult(0.5, details={"statements": ["a", "b"], "p_supported": [0.9, 0.1]}))
    '1/2 statements supported'
    >>> explain(MetricResult(0.5, details={"verdicts": [0, 1]}))
    '1/2 contexts useful (-+ in rank order)'
    >>> explain(MetricResult.nan("parse_failure: not JSON", raw="{"))
    'NaN: parse_failure: not JSON'
    >>> explain(MetricResult(0.2, details={"response_statements": [], "reference_statements": ["a"],
    ...     "factuality": 0.0, "similarity": 0.94}))
    'factuality 0.00 (0 vs 1 statements); similarity 0.94'
    >>> explain(MetricResult(0.9, details={"raw_score": 0.9}))
    ''
    """
    details = result.details or {}
    if math.isnan(result.score):
        reason = result.reason or "unknown"
        if len(reason) > _MAX_REASON:
            reason = reason[: _MAX_REASON - 1] + "…"
        return f"NaN: {reason}"
    for key in ("shortcut", "note"):
        if isinstance(details.get(key), str):
            return details[key]
    for rule in _RULES:
        line = rule(details)
        if line:
            return line
    return ""
