"""Planning prompt passes: which prompt prefixes the rows of a batch share."""

from __future__ import annotations

from collections.abc import Sequence

from ascend_eval.models.batching import longest_first

__all__ = ["common_prefix_len", "prefix_groups", "shared_prefix_batches", "usable_prefix"]


def common_prefix_len(a: Sequence[int], b: Sequence[int]) -> int:
    """How many leading tokens `a` and `b` share.

    >>> common_prefix_len([1, 2, 3, 4], [1, 2, 5])
    2
    """
    n = 0
    for x, y in zip(a, b, strict=False):  # stops at the shorter, by design
        if x != y:
            break
        n += 1
    return n


def prefix_groups(
    runnable: Sequence[int], prompts: Sequence[Sequence[int]], key_tokens: int
) -> list[list[int]]:
    """Requests grouped by their first `key_tokens` tokens, each group longest first, groups in order of
    their longest prompt (so that a batch that runs out of memory still does so first).

    A prompt no longer than `key_tokens`, or the only one with its first tokens, goes to one remaining
    group, whose batches share a prefix only by chance.

    >>> prefix_groups([0, 1, 2, 3, 4], [[1, 2, 3], [7, 8, 9, 9], [1, 2, 4, 4, 4], [5], [1, 2, 9]], 2)
    [[2, 0, 4], [1, 3]]
    """
    by_key: dict[tuple[int, ...], list[int]] = {}
    loose: list[int] = []
    for i in runnable:
        if len(prompts[i]) > key_tokens:
            by_key.setdefault(tuple(prompts[i][:key_tokens]), []).append(i)
        else:
            loose.append(i)
    groups = [g for g in by_key.values() if len(g) > 1]
    loose.extend(i for g in by_key.values() if len(g) == 1 for i in g)
    if loose:
        groups.append(sorted(loose))
    ordered = [[g[j] for j in longest_first([len(prompts[i]) for i in g])] for g in groups]
    return sorted(ordered, key=lambda g: -len(prompts[g[0]]))


def shared_prefix_batches(
    order: Sequence[int],
    prompts: Sequence[Sequence[int]],
    *,
    token_budget: int,
    max_batch_size: int,
    min_shared: int,
) -> list[tuple[list[int], int]]:
    """Cut `order` into batches as `batches_by_budget` does, but let a batch whose rows share a prefix of
    at least `min_shared` tokens count it once: prefix + rows x longest suffix.

    Returns:
        (batch, shared) pairs: the request indices and the prefix length that batch's rows share, at most
        its shortest prompt less one (so that every row keeps a token to read the next-token logits
        after); 0 for a batch that runs unshared (one row, or too short a common prefix).

    >>> prompts = [[1, 2, 3, 4, 5, 6], [1, 2, 3, 4, 7], [1, 2, 3, 4], [9, 9]]
    >>> shared_prefix_batches([0, 1, 2, 3], prompts, token_budget=12, max_batch_size=8, min_shared=2)
    [([0, 1, 2], 3), ([3], 0)]
    """
    batches: list[tuple[list[int], int]] = []
    batch: list[int] = []
    common = shortest = longest = shared = 0
    for i in order:
        row = prompts[i]
        if batch:
            # The common prefix of a set is the least it shares with any one member, e.g. the first.
            c = min(common, common_prefix_len(prompts[batch[0]], row))
            low, top = min(shortest, len(row)), max(longest, len(row))
            s = usable_prefix(c, low, len(batch) + 1, min_shared)
            if len(batch) < max_batch_size and s + (len(batch) + 1) * (top - s) <= token_budget:
                batch.append(i)
                common, shortest, longest, shared = c, low, top, s
                continue
            batches.append((batch, shared))
        batch, common, shortest, longest, shared = [i], len(row), len(row), len(row), 0
    if batch:
        batches.append((batch, shared))
    return batches


def usable_prefix(common: int, shortest: int, rows: int, min_shared: int) -> int:
    """The prefix a batch runs once: its rows' common prefix, less a token if that is a whole prompt;
    0 when one row or fewer than `min_shared` tokens would be shared.

    >>> usable_prefix(40, 40, 3, 32), usable_prefix(40, 40, 1, 32), usable_prefix(20, 50, 3, 32)
    (39, 0, 0)
    """
    shared = min(common, shortest - 1)
    return shared if rows > 1 and shared >= min_shared else 0
