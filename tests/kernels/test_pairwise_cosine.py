"""The cosine ops against a plain float64 reference, over odd shapes and every float dtype."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

from ascend_eval.kernels.pairwise_cosine import (  # noqa: E402
    PairwiseCosine,
    pairwise_cosine,
    pairwise_cosine_native,
    rowwise_cosine,
    rowwise_cosine_native,
)

DTYPES = [torch.float32, torch.float16, torch.bfloat16]
ROWS = [1, 3, 17, 129]
DIMS = [1, 7, 384]

# What any implementation must meet against the float64 reference on the same (rounded) inputs. native
# upcasts to float32 before every step, so it meets the float32 bound for every dtype (checked below); a
# fused kernel may normalise in the input dtype, which rounds each unit vector to 2**-11 (float16) or 2**-8
# (bfloat16) relative error, a cosine error of up to about twice that.
ATOL = {torch.float32: 1e-5, torch.float16: 2e-3, torch.bfloat16: 1.6e-2}
# float32 rounding over a d=384 dot product of unit vectors: well below 1e-5.
NATIVE_ATOL = 1e-5


def reference_pairwise(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """Loops over pairs in float64: slow, obviously right."""
    a64, b64 = a.double(), b.double()
    out = torch.zeros(a.shape[0], b.shape[0], dtype=torch.float64)
    for i in range(a.shape[0]):
        for j in range(b.shape[0]):
            na, nb = a64[i].norm(), b64[j].norm()
            if na > 0 and nb > 0:
                out[i, j] = (a64[i] @ b64[j]) / (na * nb)
    return out


def make(n: int, d: int, dtype: torch.dtype, seed: int) -> torch.Tensor:
    gen = torch.Generator().manual_seed(seed)
    x = torch.randn(n, d, generator=gen) * 3
    if n > 2:
        x[n // 2] = 0  # a zero row in every larger case
    return x.to(dtype)


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("d", DIMS)
@pytest.mark.parametrize(("n", "m"), [(r, ROWS[(i + 1) % len(ROWS)]) for i, r in enumerate(ROWS)])
def test_pairwise_matches_reference(n: int, m: int, d: int, dtype: torch.dtype) -> None:
    a, b = make(n, d, dtype, seed=n * 7 + d), make(m, d, dtype, seed=m * 11 + d + 1)
    expected = reference_pairwise(a, b)

    out = PairwiseCosine("cpu", block=16).pairwise(a, b)

    assert out.shape == (n, m) and out.dtype == torch.float32
    assert torch.isfinite(out).all()
    torch.testing.assert_close(out.double(), expected, atol=ATOL[dtype], rtol=0)
    torch.testing.assert_close(pairwise_cosine_native(a, b).double(), expected, atol=NATIVE_ATOL, rtol=0)


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("d", DIMS)
@pytest.mark.parametrize("n", ROWS)
def test_rowwise_matches_reference(n: int, d: int, dtype: torch.dtype) -> None:
    a, b = make(n, d, dtype, seed=n + d), make(n, d, dtype, seed=n + d + 99)
    b[0] = a[0] * 2  # one parallel pair: exactly 1 up to rounding
    expected = torch.stack([reference_pairwise(a[i : i + 1], b[i : i + 1])[0, 0] for i in range(n)])

    out = PairwiseCosine("cpu").rowwise(a, b)

    assert out.shape == (n,) and out.dtype == torch.float32
    torch.testing.assert_close(out.double(), expected, atol=ATOL[dtype], rtol=0)
    torch.testing.assert_close(rowwise_cosine_native(a, b).double(), expected, atol=NATIVE_ATOL, rtol=0)
    assert out.abs().max() <= 1.0


@pytest.mark.parametrize("block", [1, 5, 129, 10_000])
def test_block_size_does_not_change_results(block: int) -> None:
    a, b = make(129, 7, torch.float32, seed=1), make(17, 7, torch.float32, seed=2)
    # Equal up to the last bit or two: a one-row block goes through a matrix-vector routine whose summation
    # order differs from the matrix-matrix one.
    out = pairwise_cosine(a, b, block=block)
    torch.testing.assert_close(out, pairwise_cosine(a, b, block=1024), atol=2.5e-7, rtol=0)


def test_zero_vectors_give_zero_not_nan() -> None:
    zeros = torch.zeros(2, 4, dtype=torch.float16)
    ones = torch.ones(3, 4, dtype=torch.float16)
    assert pairwise_cosine(zeros, ones).eq(0).all()
    assert pairwise_cosine(ones, zeros).eq(0).all()
    assert rowwise_cosine(zeros, ones[:2]).eq(0).all()
    assert rowwise_cosine(zeros, zeros).eq(0).all()


def test_tiny_nonzero_vectors_keep_their_direction() -> None:
    a = torch.tensor([[1e-20, 0.0]])
    b = torch.tensor([[3e-20, 0.0], [0.0, 1e-19]])
    torch.testing.assert_close(pairwise_cosine(a, b), torch.tensor([[1.0, 0.0]]))


def test_empty_inputs() -> None:
    assert pairwise_cosine(torch.zeros(0, 3), torch.ones(4, 3)).shape == (0, 4)
    assert pairwise_cosine(torch.ones(4, 3), torch.zeros(0, 3)).shape == (4, 0)
    assert rowwise_cosine(torch.zeros(0, 3), torch.zeros(0, 3)).shape == (0,)


@pytest.mark.parametrize(
    ("a", "b", "match"),
    [
        (torch.ones(3), torch.ones(2, 3), "2-D"),
        (torch.ones(2, 3), torch.ones(2, 4), "equal dims"),
        (torch.ones(2, 3, dtype=torch.int64), torch.ones(2, 3), "floating point"),
    ],
)
def test_rejects_bad_inputs(a: torch.Tensor, b: torch.Tensor, match: str) -> None:
    with pytest.raises(ValueError, match=match):
        pairwise_cosine(a, b)


def test_rowwise_rejects_unequal_rows_and_bad_block() -> None:
    with pytest.raises(ValueError, match="equal row counts"):
        rowwise_cosine(torch.ones(2, 3), torch.ones(3, 3))
    with pytest.raises(ValueError, match="block"):
        pairwise_cosine(torch.ones(2, 3), torch.ones(3, 3), block=0)


def test_dispatch_falls_back_to_native() -> None:
    for device_type in ("cpu", "cuda", "npu"):
        assert PairwiseCosine(device_type).name == "native"
    with pytest.raises(ValueError, match="valid"):
        PairwiseCosine("tpu")
