"""Percentile-bootstrap intervals: checked against a plain, independently written bootstrap, and for the
properties a reader relies on (zero width without spread, the same answer for a seed, coverage)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from ascend_eval.results.intervals import (
    bootstrap_means,
    excludes_zero,
    mean_interval,
    paired_differences,
    paired_interval,
)


def direct_interval(values, *, confidence=0.95, resamples=20_000, seed=12345):
    """The textbook procedure, one resample at a time: draw n values with replacement, keep the mean,
    take the two tail percentiles of the means. Shares no code with the library. Also returns the
    spread (standard deviation) of the resampled means, which sets the tolerance below."""
    rng = np.random.default_rng(seed)
    values = [v for v in values if not math.isnan(v)]
    means = [float(np.mean(rng.choice(values, size=len(values), replace=True))) for _ in range(resamples)]
    tail = (1 - confidence) / 2 * 100
    return (np.percentile(means, tail), np.percentile(means, 100 - tail)), float(np.std(means))


def close_to_direct(got, values, **kwargs):
    """Two bootstraps with different random draws agree only up to Monte Carlo error: a 2.5% quantile
    from 20,000 resamples has a standard error of about 0.02 standard deviations of the resampled
    means, so two independent ones differ by about 0.03 of one. 0.15 of one is five of those errors."""
    (low, high), spread = direct_interval(values, **kwargs)
    tolerance = 0.15 * spread
    assert abs(got[0] - low) <= tolerance and abs(got[1] - high) <= tolerance, (got, (low, high), tolerance)


@pytest.mark.parametrize(
    "values",
    [
        [0.0, 1.0, 1.0, 0.5, 1.0, 0.0, 1.0, 1.0, 0.25, 0.75, 1.0, 1.0],  # lumpy [0, 1] scores
        list(np.random.default_rng(3).beta(2, 5, size=40)),
        [0.9, 0.1, float("nan"), 0.8, 0.7, float("nan"), 0.95, 0.3],  # NaN are left out
    ],
)
def test_mean_interval_agrees_with_a_direct_bootstrap(values):
    got = mean_interval(values, resamples=20_000, seed=0)
    close_to_direct(got, values)
    finite = [v for v in values if not math.isnan(v)]
    assert got[0] <= np.mean(finite) <= got[1]


def test_a_90_percent_interval_agrees_with_a_direct_one_and_is_narrower():
    values = list(np.random.default_rng(5).normal(0.6, 0.2, size=30))
    narrow = mean_interval(values, confidence=0.9, resamples=20_000, seed=1)
    close_to_direct(narrow, values, confidence=0.9)
    wide = mean_interval(values, confidence=0.95, resamples=20_000, seed=1)
    assert wide[0] < narrow[0] < narrow[1] < wide[1]


def test_paired_interval_is_the_bootstrap_of_the_differences():
    rng = np.random.default_rng(7)
    a = rng.uniform(size=25)
    b = np.clip(a + rng.normal(0.05, 0.1, size=25), 0, 1)
    a[3], b[9] = np.nan, np.nan
    got = paired_interval(a, b, resamples=20_000, seed=2)
    differences = [y - x for x, y in zip(a, b, strict=True) if not (math.isnan(x) or math.isnan(y))]
    assert len(differences) == 23
    close_to_direct(got, differences)
    # Pairing: resampling whole samples is resampling their differences, draw for draw.
    assert got == pytest.approx(mean_interval(differences, resamples=20_000, seed=2), abs=1e-12)
    assert paired_differences(a, b).tolist() == pytest.approx(differences)


def test_pairing_is_narrower_than_treating_the_runs_as_independent():
    rng = np.random.default_rng(11)
    a = rng.uniform(size=40)
    b = a + 0.02 + rng.normal(0, 0.01, size=40)  # every sample up by about 0.02
    low, high = paired_interval(a, b)
    assert 0.0 < low < 0.02 < high < 0.04 and excludes_zero((low, high))
    a_low, a_high = mean_interval(a)
    assert high - low < (a_high - a_low) / 5


def test_a_constant_difference_has_a_zero_width_interval():
    a = [0.1, 0.5, 0.9, 0.3, 0.7]
    assert paired_interval(a, [x + 0.25 for x in a]) == (0.25, 0.25)
    assert paired_interval(a, a) == (0.0, 0.0) and not excludes_zero((0.0, 0.0))
    assert mean_interval([0.4] * 10) == (0.4, 0.4)


def test_the_same_seed_gives_the_same_interval_and_another_seed_another():
    values = list(np.random.default_rng(0).uniform(size=50))
    first = mean_interval(values, seed=4)
    assert mean_interval(values, seed=4) == first
    assert mean_interval(np.array(values), seed=4) == first
    assert mean_interval(values, seed=5) != first
    assert bootstrap_means(np.array(values), resamples=100, seed=4).tolist() == (
        bootstrap_means(np.array(values), resamples=100, seed=4).tolist()
    )


def test_coverage_on_normal_data_with_a_known_mean():
    """Of 200 datasets of 50 normal draws around 0.5, a 95% interval should hold 0.5 in about 95% of
    them. The percentile bootstrap runs a little short at n = 50 (about 94%); with 200 datasets the
    binomial spread is 1.5 points, so [0.88, 0.99] fails only if the intervals are wrong."""
    rng = np.random.default_rng(2024)
    hits = 0
    for k in range(200):
        data = rng.normal(0.5, 0.15, size=50)
        low, high = mean_interval(data, resamples=2_000, seed=k)
        hits += low <= 0.5 <= high
    assert 0.88 <= hits / 200 <= 0.99, hits


def test_a_large_run_is_resampled_in_blocks_with_the_right_spread():
    values = np.random.default_rng(9).uniform(size=60_000)  # more than one block of resamples
    low, high = mean_interval(values, resamples=300, seed=0)
    assert mean_interval(values, resamples=300, seed=0) == (low, high)
    expected = 2 * 1.96 * values.std() / math.sqrt(len(values))
    assert low < values.mean() < high and 0.7 * expected < high - low < 1.3 * expected


def test_too_few_values_give_no_interval_and_bad_settings_are_refused():
    assert mean_interval([]) is None and mean_interval([0.3]) is None
    assert mean_interval([float("nan"), 0.3, float("nan")]) is None
    assert paired_interval([0.1, float("nan")], [float("nan"), 0.2]) is None
    with pytest.raises(ValueError, match="confidence"):
        mean_interval([0.1, 0.2], confidence=95)
    with pytest.raises(ValueError, match="resamples"):
        mean_interval([0.1, 0.2], resamples=0)
    with pytest.raises(ValueError, match="Match the samples by id"):
        paired_interval([0.1, 0.2], [0.1])
