"""One metric's aggregates kept online, as scores arrive in dataset order, in memory that does not grow
with the run: what `summary.json` holds, equal to what the same scores in a list give.

The mean is a plain running sum in dataset order, so it is the very float `aggregate()` computes from the
whole list. The interval is the seeded bootstrap while at most `BOOTSTRAP_LIMIT` scores are in (they are
kept until then), and the normal approximation from Welford's running variance after that, as
`mean_interval` does for a list of that size.
"""

from __future__ import annotations

import math
from collections import Counter
from typing import Any

from ascend_eval.metrics.base import MetricResult
from ascend_eval.results.intervals import (
    BOOTSTRAP_LIMIT,
    DEFAULT_RESAMPLES,
    mean_interval,
    normal_interval,
)

UNKNOWN_REASON = "unknown"
"""The NaN reason counted for a NaN score that came without one."""


class MetricTally:
    """Count, sum, min, max, NaN reasons, per-language sums and the mean's interval of one metric.

    >>> t = MetricTally("faithfulness")
    >>> for score, lang in ((1.0, "en"), (float("nan"), "zh"), (0.5, "zh")):
    ...     t.add(MetricResult(score, None if score == score else "no_statements"), lang)
    >>> t.aggregate()
    {'name': 'faithfulness', 'count': 2, 'mean': 0.75, 'min': 0.5, 'max': 1.0, 'nan_count': 1}
    >>> dict(t.reasons), t.language_means()
    ({'no_statements': 1}, {'en': 1.0, 'zh': 0.5})
    """

    def __init__(self, name: str) -> None:
        self.name = name
        self.count = 0
        self.nan_count = 0
        self.total = 0.0
        self.low = math.inf
        self.high = -math.inf
        self.reasons: Counter[str] = Counter()
        self.by_language: dict[str, list[float]] = {}
        """language -> [count, sum] of its scored samples."""
        self._mean = 0.0
        self._m2 = 0.0
        self._kept: list[float] | None = []
        """The scores so far while there are at most `BOOTSTRAP_LIMIT`; None after."""

    def add(self, result: MetricResult, language: str) -> None:
        score = result.score
        if math.isnan(score):
            self.nan_count += 1
            self.reasons[result.reason or UNKNOWN_REASON] += 1
            return
        self.count += 1
        self.total += score
        self.low = min(self.low, score)
        self.high = max(self.high, score)
        delta = score - self._mean
        self._mean += delta / self.count
        self._m2 += delta * (score - self._mean)
        entry = self.by_language.setdefault(language, [0, 0.0])
        entry[0] += 1
        entry[1] += score
        if self._kept is not None:
            self._kept.append(score)
            if len(self._kept) > BOOTSTRAP_LIMIT:
                self._kept = None

    def aggregate(self) -> dict[str, Any]:
        """NeMo Evaluator's aggregate shape, as `ascend_eval.results.aggregate` gives for the same scores."""
        scored = self.count > 0
        return {
            "name": self.name,
            "count": self.count,
            "mean": self.total / self.count if scored else None,
            "min": self.low if scored else None,
            "max": self.high if scored else None,
            "nan_count": self.nan_count,
        }

    def interval(
        self, *, confidence: float = 0.95, seed: int = 0, resamples: int = DEFAULT_RESAMPLES
    ) -> tuple[float, float] | None:
        """The mean's interval, as `mean_interval` gives for the same scores."""
        if self.count < 2:
            return None
        if self._kept is not None:
            return mean_interval(self._kept, confidence=confidence, resamples=resamples, seed=seed)
        return normal_interval(self.count, self._mean, self._m2 / self.count, confidence=confidence)

    def language_means(self) -> dict[str, float]:
        return {lang: total / n for lang, (n, total) in self.by_language.items() if n}
