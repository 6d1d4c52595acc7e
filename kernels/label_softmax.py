"""Label probabilities from next-token logits: the op behind `ClassifyRequest`.

A label may be written by several tokens ("1" and " 1"), so its score is the log-sum-exp of those tokens'
logits; the probabilities are a softmax over the labels' scores, in float32 whatever the logits' dtype.
`expected_value` then turns probabilities over ordered labels into a rating.

Only the pure-torch `native` implementation exists, and it serves every device: the op gathers a handful
of columns (L x G, typically under ten) out of a `[B, V]` logits matrix and reduces them, so it costs
microseconds next to the forward pass that produced the logits, and a fused NPU or CUDA kernel would save
nothing worth its maintenance. The dispatch table still exists so that one could be added without
touching callers (the pattern of vLLM's `CustomOp.forward_native` / `forward_oot`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # torch is imported lazily: importing the kernels package must stay cheap
    import torch

__all__ = ["LabelSoftmax", "expected_value", "label_softmax_native"]

PAD_ID = -1
"""Marks an unused slot in a label's row of token ids."""


def label_softmax_native(logits: torch.Tensor, label_ids: torch.Tensor) -> torch.Tensor:
    """Probabilities over labels from final-position logits, in plain torch (the oracle and CPU path).

    Args:
        logits: `[B, V]`, any float dtype: the next-token logits of each row.
        label_ids: `[L, G]` long: for each label up to G token ids that spell it, padded with -1. Every
            label needs at least one id, and every id must be below V.

    Returns:
        `[B, L]` float32 probabilities; each row sums to 1.

    Raises:
        ValueError: the shapes do not fit, a label has no token id, or an id is out of range.
    """
    import torch

    if logits.dim() != 2 or label_ids.dim() != 2:
        raise ValueError(
            f"expected logits [B, V] and label_ids [L, G], "
            f"got {tuple(logits.shape)} and {tuple(label_ids.shape)}"
        )
    valid = label_ids != PAD_ID
    if not bool(valid.any(dim=1).all()):
        raise ValueError(f"every label needs at least one token id; label_ids={label_ids.tolist()}")
    vocab = logits.shape[1]
    if bool(((label_ids < PAD_ID) | (label_ids >= vocab)).any()):
        raise ValueError(
            f"label token ids must be in [0, {vocab}) or -1 for padding; got {label_ids.tolist()}"
        )

    label_ids = label_ids.to(logits.device)
    valid = valid.to(logits.device)
    # Gather [B, L*G] columns first and upcast only those: the full [B, V] matrix never leaves its dtype.
    picked = logits[:, label_ids.clamp(min=0).reshape(-1)].float().reshape(logits.shape[0], *label_ids.shape)
    picked = picked.masked_fill(~valid, float("-inf"))
    scores = torch.logsumexp(picked, dim=-1)  # [B, L]
    return torch.softmax(scores, dim=-1)


def expected_value(probs: torch.Tensor, values: torch.Tensor) -> torch.Tensor:
    """The expected value of ordered labels, e.g. a rating from probabilities over "0", "1", "2".

    Args:
        probs: `[B, L]` probabilities (rows sum to 1).
        values: `[L]` the value of each label; normalise them first (e.g. 0, 2, 4 -> 0, 0.5, 1) for a score
            in [0, 1].

    Returns:
        `[B]` float32.

    >>> import torch
    >>> expected_value(torch.tensor([[0.5, 0.5, 0.0], [0.0, 0.0, 1.0]]), torch.tensor([0.0, 0.5, 1.0]))
    tensor([0.2500, 1.0000])
    """
    if probs.dim() != 2 or values.dim() != 1 or probs.shape[1] != values.shape[0]:
        raise ValueError(
            f"expected probs [B, L] and values [L], got {tuple(probs.shape)} and {tuple(values.shape)}"
        )
    return probs.float() @ values.to(device=probs.device, dtype=probs.dtype).float()


Impl = Callable[["torch.Tensor", "torch.Tensor"], "torch.Tensor"]

# One implementation per device type; a device missing here runs `native`.
_IMPLS: dict[str, Impl] = {}


class LabelSoftmax:
    """The label-softmax op bound to one device type, chosen once at construction.

    Args:
        device_type: "npu", "cuda" or "cpu" (`DeviceInfo.type`).

    >>> import torch
    >>> op = LabelSoftmax("cpu")
    >>> op(torch.tensor([[0.0, 2.0, 2.0]]), torch.tensor([[1, -1], [2, -1]]))
    tensor([[0.5000, 0.5000]])
    """

    def __init__(self, device_type: str) -> None:
        self.device_type = device_type
        self.impl: Impl = _IMPLS.get(device_type, label_softmax_native)

    def __call__(self, logits: torch.Tensor, label_ids: torch.Tensor) -> torch.Tensor:
        """See `label_softmax_native` for shapes and dtypes."""
        return self.impl(logits, label_ids)
