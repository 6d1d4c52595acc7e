"""Masked mean pooling: the average of each sequence's token vectors over its unmasked positions.

`native` is pure torch: the oracle for every other implementation and the path on the CPU. It accumulates
in float32 (a half-precision sum over hundreds of tokens loses digits) with one batched matmul of the mask
against the hidden states. A fused NPU/CUDA kernel would pay when pooling runs over large half-precision
batches (long documents, batch x tokens x hidden in the hundreds of millions): it could read the hidden
states once in their own dtype instead of materialising a float32 copy. For the embedders here the
encoder's forward pass costs far more, so none is registered yet.

A row whose mask is all zeros (an empty sequence) pools to zeros, never NaN.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # torch is imported lazily so that importing the kernels package stays cheap
    from torch import Tensor

DEVICE_TYPES = ("npu", "cuda", "cpu")


def masked_mean_pool_native(hidden: Tensor, mask: Tensor) -> Tensor:
    """Mean of `hidden` over the positions where `mask` is nonzero.

    Args:
        hidden: `[B, T, H]`, any floating dtype.
        mask: `[B, T]`, bool, integer or float; nonzero keeps a position. Same device as `hidden`.

    Returns:
        float32 `[B, H]` on the inputs' device; zeros for a row with no kept position.

    Raises:
        ValueError: the shapes, dtypes or devices do not fit.

    >>> import torch
    >>> h = torch.tensor([[[1.0, 2.0], [3.0, 4.0], [100.0, 100.0]], [[5.0, 5.0], [6.0, 6.0], [7.0, 7.0]]])
    >>> masked_mean_pool_native(h, torch.tensor([[1, 1, 0], [0, 0, 0]])).tolist()
    [[2.0, 3.0], [0.0, 0.0]]
    """
    import torch

    if hidden.ndim != 3 or mask.ndim != 2 or tuple(mask.shape) != tuple(hidden.shape[:2]):
        raise ValueError(
            "mean pooling needs hidden [B, T, H] and mask [B, T], "
            f"got {tuple(hidden.shape)} and {tuple(mask.shape)}"
        )
    if not hidden.is_floating_point():
        raise ValueError(f"hidden must be floating point, got {hidden.dtype}")
    if hidden.device != mask.device:
        raise ValueError(f"hidden and mask must be on one device, got {hidden.device} and {mask.device}")
    weights = (mask != 0).to(torch.float32)  # [B, T]
    sums = torch.bmm(weights.unsqueeze(1), hidden.float()).squeeze(1)  # [B, H]
    counts = weights.sum(dim=1, keepdim=True)
    # An all-zero row has sum 0 and count 0; dividing by max(count, 1) keeps it 0 instead of 0/0 = NaN.
    return sums / counts.clamp_min(1.0)


PoolFn = Callable[["Tensor", "Tensor"], "Tensor"]

_FUSED: dict[str, tuple[PoolFn, str]] = {}
"""Device type -> (implementation, name) of a fused kernel. Empty: `native` serves everywhere."""


class MaskedMeanPool:
    """Masked mean pooling with the implementation chosen once for a device type.

    >>> import torch
    >>> pool = MaskedMeanPool("cpu")
    >>> pool.name, pool(torch.ones(1, 2, 3), torch.tensor([[1, 0]])).shape
    ('native', torch.Size([1, 3]))
    """

    def __init__(self, device_type: str = "cpu") -> None:
        """
        Args:
            device_type: `DeviceInfo.type` of where the tensors live ("npu", "cuda" or "cpu").

        Raises:
            ValueError: unknown device type.
        """
        if device_type not in DEVICE_TYPES:
            raise ValueError(f"device_type={device_type!r}; valid: {', '.join(DEVICE_TYPES)}")
        self._impl, self.name = _FUSED.get(device_type, (masked_mean_pool_native, "native"))

    def __call__(self, hidden: Tensor, mask: Tensor) -> Tensor:
        """float32 `[B, H]`; see `masked_mean_pool_native`."""
        return self._impl(hidden, mask)


def masked_mean_pool(hidden: Tensor, mask: Tensor) -> Tensor:
    """float32 `[B, H]` masked means with the `native` implementation (the CPU path); see
    `masked_mean_pool_native`."""
    return masked_mean_pool_native(hidden, mask)
