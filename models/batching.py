"""Length-sorted batching shared by every backend.

Backends sort requests longest first so that each batch pads to similar lengths (and a batch that would
run out of memory fails at the start, not after an hour), then hand results back in input order.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import TypeVar

T = TypeVar("T")


def longest_first(lengths: Sequence[int]) -> list[int]:
    """Indices that visit `lengths` from longest to shortest (stable on ties).

    >>> longest_first([3, 10, 3, 7])
    [1, 3, 0, 2]
    """
    return sorted(range(len(lengths)), key=lambda i: -lengths[i])


def batches_by_budget(
    order: Sequence[int], lengths: Sequence[int], *, token_budget: int, max_batch_size: int
) -> Iterator[list[int]]:
    """Cut `order` into batches whose padded size (rows x longest row) stays within `token_budget`.

    A single row longer than the budget still forms a batch of its own.

    >>> list(batches_by_budget([0, 1, 2, 3], [8, 4, 4, 2], token_budget=16, max_batch_size=8))
    [[0, 1], [2, 3]]
    >>> list(batches_by_budget([0, 1, 2], [5, 5, 5], token_budget=100, max_batch_size=2))
    [[0, 1], [2]]
    """
    if token_budget < 1 or max_batch_size < 1:
        raise ValueError("token_budget and max_batch_size must be >= 1")
    batch: list[int] = []
    longest = 0
    for i in order:
        candidate = max(longest, lengths[i])
        if batch and (len(batch) + 1 > max_batch_size or candidate * (len(batch) + 1) > token_budget):
            yield batch
            batch, candidate = [], lengths[i]
        batch.append(i)
        longest = candidate
    if batch:
        yield batch


def scatter(n: int, pieces: Sequence[tuple[Sequence[int], Sequence[T]]]) -> list[T]:
    """Put each batch's outputs back at their input positions.

    >>> scatter(3, [([2, 0], ["c", "a"]), ([1], ["b"])])
    ['a', 'b', 'c']
    """
    out: list[T | None] = [None] * n
    for indices, values in pieces:
        if len(indices) != len(values):
            raise ValueError(f"a batch of {len(indices)} inputs returned {len(values)} outputs")
        for i, v in zip(indices, values, strict=True):
            out[i] = v
    missing = [i for i, v in enumerate(out) if v is None]
    if missing:
        raise ValueError(f"no output for inputs {missing[:10]}")
    return out  # type: ignore[return-value]
