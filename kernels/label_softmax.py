"""Label probabilities from next-token logits: the op behind `ClassifyRequest`, for every judge that reads
tokens itself (`TorchJudge` on the logits, `VllmJudge` on the label tokens' log-probabilities).

A label may be written by several tokens ("1" and " 1"), so its score is the log-sum-exp of those tokens'
logits; the probabilities are a softmax over the labels' scores.

There is one implementation, `label_softmax_native`, in plain torch, and it serves every device: the op
gathers a handful of columns (L x G, typically under ten) out of a `[B, V]` logits matrix and reduces them,
so it costs microseconds next to the forward pass that produced the logits. A fused NPU or CUDA version
would save nothing measurable, so none exists; one that did would be tested against this one.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # torch is imported lazily: importing the kernels package must stay cheap
    import torch

__all__ = ["PAD_ID", "label_id_matrix", "label_softmax_native"]

PAD_ID = -1
"""Marks an unused slot in a label's row of token ids."""


def label_id_matrix(label_ids: Sequence[Sequence[int]]) -> torch.Tensor:
    """The `[L, G]` long matrix `label_softmax_native` takes: label i's token ids in row i, padded with
    `PAD_ID` to the longest row.

    >>> label_id_matrix([(5,), (6, 7)]).tolist()
    [[5, -1], [6, 7]]
    """
    import torch

    width = max((len(ids) for ids in label_ids), default=0)
    return torch.tensor([[*ids, *([PAD_ID] * (width - len(ids)))] for ids in label_ids], dtype=torch.long)


def label_softmax_native(logits: torch.Tensor, label_ids: torch.Tensor) -> torch.Tensor:
    """Probabilities over labels from final-position logits, in plain torch.

    Args:
        logits: `[B, V]`, any float dtype: the next-token logits of each row (log-probabilities do as well:
            the vocabulary's normaliser is the same for every label of a row and cancels).
        label_ids: `[L, G]` long: for each label up to G token ids that spell it, padded with -1. Every
            label needs at least one id, and every id must be below V.

    Returns:
        `[B, L]` probabilities, float32 (float64 for float64 logits); each row sums to 1.

    Raises:
        ValueError: the shapes do not fit, a label has no token id, or an id is out of range.

    >>> import torch
    >>> label_softmax_native(torch.tensor([[0.0, 2.0, 2.0]]), label_id_matrix([[1], [2]]))
    tensor([[0.5000, 0.5000]])
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
    picked = logits[:, label_ids.clamp(min=0).reshape(-1)]
    picked = picked if picked.dtype == torch.float64 else picked.float()
    picked = picked.reshape(logits.shape[0], *label_ids.shape).masked_fill(~valid, float("-inf"))
    scores = torch.logsumexp(picked, dim=-1)  # [B, L]
    return torch.softmax(scores, dim=-1)
