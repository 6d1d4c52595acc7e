"""scoring="expected": each formula against the brute-force expectation over every verdict outcome."""

from __future__ import annotations

import itertools
import math
import random

import pytest

from ascend_eval.metrics.answer_correctness import expected_fbeta, fbeta_score
from ascend_eval.metrics.context_precision import average_precision, expected_average_precision
from ascend_eval.metrics.faithfulness import expected_supported_ratio, supported_ratio
from ascend_eval.metrics.noise_sensitivity import (
    expected_noise_sensitivity,
    noise_sensitivity_score,
    transpose,
)


def outcomes(probs: list[float]):
    """Every yes/no outcome of independent verdicts, with its probability."""
    for bits in itertools.product((False, True), repeat=len(probs)):
        weight = math.prod(p if b else 1 - p for p, b in zip(probs, bits, strict=True))
        yield list(bits), weight


@pytest.mark.parametrize("seed", range(6))
def test_expected_average_precision_is_the_exact_expectation(seed):
    rng = random.Random(seed)
    p = [rng.random() for _ in range(rng.randint(1, 7))]
    brute = sum(w * average_precision([int(b) for b in bits]) for bits, w in outcomes(p))
    assert expected_average_precision(p) == pytest.approx(brute, abs=1e-12)


@pytest.mark.parametrize("seed", range(4))
def test_expected_supported_ratio_is_the_exact_expectation(seed):
    rng = random.Random(seed)
    p = [rng.random() for _ in range(rng.randint(1, 6))]
    brute = sum(w * supported_ratio([float(b) for b in bits]) for bits, w in outcomes(p))
    assert expected_supported_ratio(p) == pytest.approx(brute)


@pytest.mark.parametrize("mode", ["relevant", "irrelevant"])
@pytest.mark.parametrize("seed", range(4))
def test_expected_noise_sensitivity_is_the_exact_expectation(mode, seed):
    rng = random.Random(seed)
    k, g, a = rng.randint(1, 2), rng.randint(1, 2), rng.randint(1, 2)  # at most 2*2 + 2*2 + 2 = 10 verdicts
    p_ref = [[rng.random() for _ in range(k)] for _ in range(g)]  # [g][c]
    p_ans = [[rng.random() for _ in range(k)] for _ in range(a)]  # [a][c]
    p_ref_ans = [rng.random() for _ in range(a)]
    flat = [x for row in p_ref for x in row] + [x for row in p_ans for x in row] + p_ref_ans
    brute = 0.0
    for bits, w in outcomes(flat):
        it = iter(bits)
        ref = [[next(it) for _ in range(k)] for _ in range(g)]
        ans = [[next(it) for _ in range(k)] for _ in range(a)]
        brute += w * noise_sensitivity_score(ref, ans, [next(it) for _ in range(a)], mode)
    assert expected_noise_sensitivity(p_ref, p_ans, p_ref_ans, mode) == pytest.approx(brute, abs=1e-12)


def test_hard_verdicts_give_the_threshold_scores():
    assert expected_average_precision([1.0, 0.0, 1.0, 1.0]) == pytest.approx(average_precision([1, 0, 1, 1]))
    assert expected_fbeta([1.0, 0.0, 1.0], [1.0, 0.0], 2.0) == fbeta_score(2, 1, 1, 2.0)
    ref, ans, g2a = [[True, False]], [[True, False], [False, True]], [False, False]
    as_p = [[float(x) for x in row] for row in ans]
    assert expected_noise_sensitivity([[1.0, 0.0]], as_p, [0.0, 0.0], "relevant") == (
        noise_sensitivity_score(ref, ans, g2a, "relevant")
    )
    assert transpose([[True, False]], 2) == [[True], [False]]


def test_expected_scores_break_the_ties_thresholds_make():
    """The case that motivated them: every context above 0.5, the good row's clearly higher."""
    good, flawed = [0.81, 0.74, 0.68], [0.59, 0.57, 0.54]

    def hard(p):
        return average_precision([int(x > 0.5) for x in p])

    assert hard(good) == hard(flawed) == 1.0  # counted against 0.5: a tie
    assert expected_average_precision(good) > expected_average_precision(flawed)
