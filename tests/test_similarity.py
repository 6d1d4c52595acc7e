"""`ascend_eval.similarity` against plain references: cosine over odd shapes and dtypes against a float64
loop, and `top_k` against the stable sort it replaces, ties and NaN included."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from ascend_eval.similarity import TOP_K_BLOCK, cosine, cosine_matrix, top_k

DTYPES = [np.float32, np.float16, np.float64]
ROWS = [1, 3, 17, 129]
DIMS = [1, 7, 384]


def reference(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Loops over pairs in float64: slow, obviously right."""
    out = np.zeros((a.shape[0], b.shape[0]))
    for i, x in enumerate(a.astype(np.float64)):
        for j, y in enumerate(b.astype(np.float64)):
            nx, ny = math.sqrt(float(x @ x)), math.sqrt(float(y @ y))
            if nx > 0 and ny > 0:
                out[i, j] = float(x @ y) / (nx * ny)
    return out


def make(n: int, d: int, dtype: type, seed: int) -> np.ndarray:
    x = np.random.default_rng(seed).standard_normal((n, d)) * 3
    if n > 2:
        x[n // 2] = 0  # a zero row in every larger case
    return x.astype(dtype)


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda t: t.__name__)
@pytest.mark.parametrize("d", DIMS)
@pytest.mark.parametrize(("n", "m"), [(r, ROWS[(i + 1) % len(ROWS)]) for i, r in enumerate(ROWS)])
def test_cosine_matrix_matches_reference(n: int, m: int, d: int, dtype: type) -> None:
    a, b = make(n, d, dtype, seed=n * 7 + d), make(m, d, dtype, seed=m * 11 + d + 1)
    out = cosine_matrix(a, b)
    assert out.shape == (n, m) and out.dtype == np.float32
    assert np.isfinite(out).all() and np.abs(out).max() <= 1.0
    # float32 rounding over a d=384 dot product of unit vectors: well below 1e-5, whatever the input dtype.
    np.testing.assert_allclose(out, reference(a, b), atol=1e-5, rtol=0)


@pytest.mark.parametrize("d", DIMS)
def test_cosine_of_a_pair_matches_reference(d: int) -> None:
    a, b = make(2, d, np.float32, seed=d)  # two vectors
    assert cosine(a, b) == pytest.approx(reference(a[None], b[None])[0, 0], abs=1e-12)
    assert cosine(a, 2 * a) == pytest.approx(1.0, abs=1e-12)


def test_zero_vectors_give_zero_not_nan() -> None:
    zeros, ones = np.zeros((2, 4), np.float32), np.ones((3, 4), np.float32)
    assert (cosine_matrix(zeros, ones) == 0).all() and (cosine_matrix(ones, zeros) == 0).all()
    assert cosine(zeros[0], ones[0]) == 0.0 and math.isnan(cosine(zeros[0], ones[0], zero=math.nan))


def test_cosine_matrix_shapes() -> None:
    assert cosine_matrix(np.zeros((0, 3)), np.ones((4, 3))).shape == (0, 4)
    assert cosine_matrix(np.ones((4, 3)), np.zeros((0, 3))).shape == (4, 0)
    for a, b in [(np.ones(3), np.ones((2, 3))), (np.ones((2, 3)), np.ones((2, 4)))]:
        with pytest.raises(ValueError, match=r"\[n, d\] and \[m, d\]"):
            cosine_matrix(a, b)


def stable_top(scores: np.ndarray, k: int) -> list[list[int]]:
    """What `top_k` must equal: the stable descending sort, cut at k."""
    return [row[:k].tolist() for row in np.argsort(-scores, axis=1, kind="stable")]


# Few distinct values, so that ties (also across the k-th place) are the rule, not the exception.
SCORES = hnp.arrays(
    np.float32,
    hnp.array_shapes(min_dims=2, max_dims=2, min_side=0, max_side=12),
    elements=st.sampled_from([-1.0, -0.0, 0.0, 0.25, 0.5, 1.0, math.inf, -math.inf, math.nan]),
)


@settings(max_examples=300, deadline=None)
@given(scores=SCORES, k=st.integers(0, 14))
def test_top_k_is_the_stable_sort(scores: np.ndarray, k: int) -> None:
    assert top_k(scores, k) == stable_top(scores, k)


def test_top_k_over_several_blocks() -> None:
    rng = np.random.default_rng(0)
    scores = rng.integers(0, 5, (2 * TOP_K_BLOCK + 3, 50)).astype(np.float32)  # many ties
    scores[TOP_K_BLOCK + 1, 7] = np.nan  # one block with a NaN takes the sorting path
    for k in (1, 3, 49, 50, 80):
        assert top_k(scores, k) == stable_top(scores, k)


def test_top_k_refuses_bad_arguments() -> None:
    with pytest.raises(ValueError, match=r"\[n, m\] matrix"):
        top_k(np.ones(3), 1)
    with pytest.raises(ValueError, match="k >= 0"):
        top_k(np.ones((1, 3)), -1)
