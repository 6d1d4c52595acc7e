"""Masked mean pooling against a plain float64 reference, over odd shapes and every float dtype."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

from ascend_eval.kernels.mean_pool import MaskedMeanPool, masked_mean_pool, masked_mean_pool_native  # noqa: E402

DTYPES = [torch.float32, torch.float16, torch.bfloat16]
BATCHES = [1, 3, 17, 129]
HIDDEN = [1, 7, 384]
TOKENS = 9

# What any implementation must meet against the float64 reference on the same (rounded) inputs, relative
# to the size of the values (about 1 here). native accumulates in float32, so it meets the float32 bound for
# every dtype (checked below); a fused kernel may round the mean back through the input dtype's 11-bit
# (float16) or 8-bit (bfloat16) significand, up to about 2**-10 or 2**-7 relative error of a value near 2.
ATOL = {torch.float32: 1e-6, torch.float16: 2e-3, torch.bfloat16: 1.6e-2}
# float32 sum of at most 9 values of size ~1, then one division: well below 1e-6.
NATIVE_ATOL = 1e-6


def reference(hidden: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """Loops over rows in float64: slow, obviously right."""
    out = torch.zeros(hidden.shape[0], hidden.shape[2], dtype=torch.float64)
    for b in range(hidden.shape[0]):
        kept = [hidden[b, t].double() for t in range(hidden.shape[1]) if mask[b, t] != 0]
        if kept:
            out[b] = torch.stack(kept).mean(dim=0)
    return out


def make_mask(batch: int, gen: torch.Generator) -> torch.Tensor:
    """Right-padded lengths 0..TOKENS (row 0 keeps everything, the last row nothing when batch > 1)."""
    lengths = torch.randint(1, TOKENS + 1, (batch,), generator=gen)
    lengths[0] = TOKENS
    if batch > 1:
        lengths[-1] = 0
    return (torch.arange(TOKENS)[None, :] < lengths[:, None]).long()


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("h", HIDDEN)
@pytest.mark.parametrize("batch", BATCHES)
def test_matches_reference(batch: int, h: int, dtype: torch.dtype) -> None:
    gen = torch.Generator().manual_seed(batch * 31 + h)
    hidden = torch.randn(batch, TOKENS, h, generator=gen).to(dtype)
    mask = make_mask(batch, gen)
    expected = reference(hidden, mask)

    out = MaskedMeanPool("cpu")(hidden, mask)

    assert out.shape == (batch, h) and out.dtype == torch.float32
    assert torch.isfinite(out).all()
    torch.testing.assert_close(out.double(), expected, atol=ATOL[dtype], rtol=0)
    torch.testing.assert_close(
        masked_mean_pool_native(hidden, mask).double(), expected, atol=NATIVE_ATOL, rtol=0
    )


@pytest.mark.parametrize("mask_dtype", [torch.bool, torch.int64, torch.float32])
def test_mask_dtypes_and_all_zero_row(mask_dtype: torch.dtype) -> None:
    hidden = torch.arange(12, dtype=torch.float16).reshape(2, 3, 2)
    mask = torch.tensor([[1, 0, 1], [0, 0, 0]]).to(mask_dtype)
    out = masked_mean_pool(hidden, mask)
    torch.testing.assert_close(out, torch.tensor([[2.0, 3.0], [0.0, 0.0]]), atol=0, rtol=0)


def test_huge_padding_values_do_not_leak() -> None:
    hidden = torch.tensor([[[1.0], [1e30]], [[-1e30], [4.0]]])
    out = masked_mean_pool(hidden, torch.tensor([[1, 0], [0, 1]]))
    torch.testing.assert_close(out, torch.tensor([[1.0], [4.0]]), atol=0, rtol=0)


def test_empty_batch_and_no_tokens() -> None:
    assert masked_mean_pool(torch.zeros(0, 4, 3), torch.zeros(0, 4)).shape == (0, 3)
    assert masked_mean_pool(torch.zeros(2, 0, 3), torch.zeros(2, 0)).eq(0).all()


@pytest.mark.parametrize(
    ("hidden", "mask", "match"),
    [
        (torch.ones(2, 3), torch.ones(2, 3), r"\[B, T, H\]"),
        (torch.ones(2, 3, 4), torch.ones(2, 4), r"\[B, T\]"),
        (torch.ones(2, 3, 4, dtype=torch.int64), torch.ones(2, 3), "floating point"),
    ],
)
def test_rejects_bad_inputs(hidden: torch.Tensor, mask: torch.Tensor, match: str) -> None:
    with pytest.raises(ValueError, match=match):
        masked_mean_pool(hidden, mask)


def test_dispatch_falls_back_to_native() -> None:
    for device_type in ("cpu", "cuda", "npu"):
        assert MaskedMeanPool(device_type).name == "native"
    with pytest.raises(ValueError, match="valid"):
        MaskedMeanPool("tpu")
