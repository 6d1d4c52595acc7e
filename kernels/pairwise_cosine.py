"""Cosine similarity of embedding rows: every pair of two sets (`[n, d] x [m, d] -> [n, m]`), or row by row.

`native` is pure torch: the oracle for every other implementation and the path on the CPU. It upcasts to
float32, normalises each row and multiplies, `block` rows of `a` at a time, so the temporaries stay at
`block x d` and `block x m` whatever `n` is. A fused NPU/CUDA kernel would only pay where this op is a
measurable share of a run: corpus-scale similarity (n x m in the tens of millions) with half-precision
inputs, where fusing the norm into the matmul saves the float32 copies and a pass over memory. At RAGAS
scale (a few contexts per sample) the model forward passes dominate, so none is registered yet.

Zero rows have no direction; their similarity to anything is 0, never NaN.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # torch is imported lazily so that importing the kernels package stays cheap
    from torch import Tensor

DEFAULT_BLOCK = 1024
DEVICE_TYPES = ("npu", "cuda", "cpu")


def _check_pair(a: Tensor, b: Tensor, *, same_rows: bool) -> None:
    if a.ndim != 2 or b.ndim != 2:
        raise ValueError(
            f"cosine needs 2-D [rows, dim] tensors, got shapes {tuple(a.shape)} and {tuple(b.shape)}"
        )
    if a.shape[1] != b.shape[1]:
        raise ValueError(f"cosine needs equal dims, got {a.shape[1]} and {b.shape[1]}")
    if same_rows and a.shape[0] != b.shape[0]:
        raise ValueError(f"rowwise cosine needs equal row counts, got {a.shape[0]} and {b.shape[0]}")
    if not (a.is_floating_point() and b.is_floating_point()):
        raise ValueError(f"cosine needs floating point tensors, got {a.dtype} and {b.dtype}")
    if a.device != b.device:
        raise ValueError(f"both tensors must be on one device, got {a.device} and {b.device}")


def _unit_rows(x: Tensor) -> Tensor:
    """Rows of `x` scaled to unit length in float32; rows whose squared norm is 0 stay 0."""
    import torch

    x = x.float()
    sq = (x * x).sum(dim=-1, keepdim=True)
    # rsqrt(0) is inf and 0 * inf is NaN, so zero rows are masked instead of clamped: a clamp would also
    # shrink legitimate tiny rows.
    inv = torch.where(sq > 0, torch.rsqrt(sq), torch.zeros_like(sq))
    return x * inv


def pairwise_cosine_native(a: Tensor, b: Tensor, *, block: int = DEFAULT_BLOCK) -> Tensor:
    """Cosine similarity of every row of `a` with every row of `b`.

    Args:
        a: `[n, d]`, any floating dtype.
        b: `[m, d]`, same device as `a`.
        block: rows of `a` handled at once; bounds the temporaries to `block x (d + m)` float32.

    Returns:
        float32 `[n, m]` on the inputs' device, in [-1, 1]; 0 where either row is all zeros.

    Raises:
        ValueError: the shapes, dtypes or devices do not fit, or `block` < 1.
    """
    import torch

    _check_pair(a, b, same_rows=False)
    if block < 1:
        raise ValueError(f"block must be >= 1, got {block}")
    n, m = a.shape[0], b.shape[0]
    out = torch.empty((n, m), dtype=torch.float32, device=a.device)
    b_unit = _unit_rows(b)
    for start in range(0, n, block):
        stop = min(start + block, n)
        torch.matmul(_unit_rows(a[start:stop]), b_unit.T, out=out[start:stop])
    # Rounding can put parallel rows a few ulp above 1; callers take acos or compare against 1.
    return out.clamp_(-1.0, 1.0)


def rowwise_cosine_native(a: Tensor, b: Tensor) -> Tensor:
    """Cosine similarity of row i of `a` with row i of `b`.

    Args:
        a: `[n, d]`, any floating dtype.
        b: `[n, d]`, same device as `a`.

    Returns:
        float32 `[n]`, in [-1, 1]; 0 where either row is all zeros.

    Raises:
        ValueError: the shapes, dtypes or devices do not fit.
    """
    _check_pair(a, b, same_rows=True)
    return (_unit_rows(a) * _unit_rows(b)).sum(dim=-1).clamp_(-1.0, 1.0)


PairwiseFn = Callable[..., "Tensor"]
RowwiseFn = Callable[["Tensor", "Tensor"], "Tensor"]

_FUSED: dict[str, tuple[PairwiseFn, RowwiseFn, str]] = {}
"""Device type -> (pairwise, rowwise, name) of a fused implementation. Empty: `native` serves everywhere."""


class PairwiseCosine:
    """Cosine similarity with the implementation chosen once for a device type.

    >>> import torch
    >>> op = PairwiseCosine("cpu")
    >>> op.name
    'native'
    >>> op.pairwise(torch.tensor([[1.0, 0.0], [0.0, 0.0]]), torch.tensor([[2.0, 0.0], [0.0, 3.0]])).tolist()
    [[1.0, 0.0], [0.0, 0.0]]
    """

    def __init__(self, device_type: str = "cpu", *, block: int = DEFAULT_BLOCK) -> None:
        """
        Args:
            device_type: `DeviceInfo.type` of where the tensors live ("npu", "cuda" or "cpu").
            block: rows of `a` per step in `pairwise`.

        Raises:
            ValueError: unknown device type, or `block` < 1.
        """
        if device_type not in DEVICE_TYPES:
            raise ValueError(f"device_type={device_type!r}; valid: {', '.join(DEVICE_TYPES)}")
        if block < 1:
            raise ValueError(f"block must be >= 1, got {block}")
        self.block = block
        self._pairwise, self._rowwise, self.name = _FUSED.get(
            device_type, (pairwise_cosine_native, rowwise_cosine_native, "native")
        )

    def pairwise(self, a: Tensor, b: Tensor) -> Tensor:
        """float32 `[n, m]`; see `pairwise_cosine_native`."""
        return self._pairwise(a, b, block=self.block)

    def rowwise(self, a: Tensor, b: Tensor) -> Tensor:
        """float32 `[n]`; see `rowwise_cosine_native`."""
        return self._rowwise(a, b)


def pairwise_cosine(a: Tensor, b: Tensor, *, block: int = DEFAULT_BLOCK) -> Tensor:
    """float32 `[n, m]` cosine similarities with the `native` implementation (the CPU path).

    >>> import torch
    >>> b = torch.tensor([[3.0, 4.0], [-4.0, 3.0], [0.0, 0.0]])
    >>> pairwise_cosine(torch.tensor([[3.0, 4.0]]), b).tolist()
    [[1.0, 0.0, 0.0]]
    """
    return pairwise_cosine_native(a, b, block=block)


def rowwise_cosine(a: Tensor, b: Tensor) -> Tensor:
    """float32 `[n]` cosine similarities of matching rows with the `native` implementation (the CPU path).

    >>> import torch
    >>> cos = rowwise_cosine(torch.tensor([[1.0, 1.0], [1.0, 0.0]]), torch.tensor([[2.0, 2.0], [0.0, 0.0]]))
    >>> [round(c, 6) for c in cos.tolist()]
    [1.0, 0.0]
    """
    return rowwise_cosine_native(a, b)
