"""The planner: a prefix tree (radix tree) over prompt token ids, deciding which shared prefixes run once.

Every prompt of a call is inserted into one `PrefixTree` that lives as long as the judge. A node holds a
run of tokens that the same set of prompts continues with; its `kv` (the KV cache of those tokens, given
every token before them) is computed once and then read by every prompt beneath it, in this call and, while
it stays within the byte budget, in later ones. Our prompts are laid out for this (DESIGN.md, Prompts): a
preamble every request of a prompt shares, then a sample block every request of that sample shares, then
a short task line, so the tree is two levels deep: the preamble's node, then one node per sample below it.

This module is pure Python: it sees a node's KV as an opaque object and measures it through the
`KvOps` the runner hands it (split in two, size in bytes).
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

__all__ = ["KvOps", "Node", "PrefixTree", "Unit", "batches_by_tails", "prefix_cuts", "sharing_pays", "widens"]


@dataclass(frozen=True)
class KvOps:
    """What the tree needs to do with a node's KV, which only the runner knows how to hold."""

    split: Callable[[Any, int], tuple[Any, Any]]
    """(KV of the first `n` tokens, KV of the rest)."""
    nbytes: Callable[[Any], int]


class Node:
    """A run of prompt tokens in the tree: `tokens` follow the `start` tokens of its ancestors."""

    __slots__ = ("children", "kv", "last_used", "nbytes", "parent", "pins", "rows", "start", "tokens")

    def __init__(self, tokens: tuple[int, ...], start: int, parent: Node | None) -> None:
        self.tokens = tokens
        self.start = start
        self.parent = parent
        self.children: dict[int, Node] = {}
        self.kv: Any = None
        self.nbytes = 0
        self.last_used = 0
        self.rows = 0
        """Prompts of the current call that run through this node."""
        self.pins = 0
        """Prompts of the current call served from this node's KV and not yet run: it must not be evicted."""

    @property
    def end(self) -> int:
        """How many prompt tokens this node's path covers, its own included."""
        return self.start + len(self.tokens)

    def chain(self) -> list[Node]:
        """The nodes from the root's first child down to this one."""
        out: list[Node] = []
        node: Node | None = self
        while node is not None and node.parent is not None:
            out.append(node)
            node = node.parent
        return out[::-1]

    def path_tokens(self) -> list[int]:
        return [t for n in self.chain() for t in n.tokens]


@dataclass(frozen=True)
class Unit:
    """Tokens to run in one row of a prompt pass: `nodes`' tokens, after the KV of `parent` (None: the
    root, nothing before them)."""

    parent: Node | None
    nodes: tuple[Node, ...]

    @property
    def tokens(self) -> list[int]:
        return [t for n in self.nodes for t in n.tokens]


class PrefixTree:
    """A radix tree over token ids whose nodes may hold the KV cache of their tokens.

    Args:
        min_shared: fewest tokens worth a node of its own; a shorter shared run is computed again under
            each of its children rather than in a prompt pass of its own.
        budget: bytes of KV kept once a call is done, least recently used evicted first; a call may hold
            more while its own prompts still need them.
        ops: splits and measures a node's KV.
    """

    def __init__(self, min_shared: int, budget: int, ops: KvOps) -> None:
        self.root = Node((), 0, None)
        self.min_shared = min_shared
        self.budget = budget
        self.ops = ops
        self.nbytes = 0
        self._clock = itertools.count(1)

    # ------------------------------------------------------------------ building a call's tree

    def insert(self, tokens: Sequence[int]) -> None:
        """Add a prompt (without the last token, which every prompt keeps to read its logits after)."""
        node, i = self.root, 0
        node.rows += 1
        while i < len(tokens):
            child = node.children.get(tokens[i])
            if child is None:
                child = Node(tuple(tokens[i:]), node.end, node)
                node.children[tokens[i]] = child
                child.rows += 1
                return
            k = _common_len(child.tokens, tokens, i)
            if k < len(child.tokens):
                child = self._split(child, k)
            child.rows += 1
            node, i = child, i + k

    def _split(self, node: Node, k: int) -> Node:
        """Cut `node` after its first `k` tokens; returns the new head node (the old one keeps the tail)."""
        parent = node.parent
        assert parent is not None
        head = Node(node.tokens[:k], node.start, parent)
        head.rows, head.pins, head.last_used = node.rows, node.pins, node.last_used
        parent.children[node.tokens[0]] = head
        node.tokens, node.start, node.parent = node.tokens[k:], node.start + k, head
        head.children[node.tokens[0]] = node
        if node.kv is not None:
            before = node.nbytes
            head.kv, node.kv = self.ops.split(node.kv, k)
            head.nbytes, node.nbytes = self.ops.nbytes(head.kv), self.ops.nbytes(node.kv)
            self.nbytes += head.nbytes + node.nbytes - before
        return head

    def serving(self, tokens: Sequence[int]) -> Node | None:
        """The deepest node on `tokens`' path that has KV, or that two or more of the call's prompts share
        with at least `min_shared` tokens since the node above it that has (or gets) KV; None to run the
        prompt whole. `tokens` must have been inserted."""
        best: Node | None = None
        for node, since in self._walk(tokens):
            if node.kv is not None or (node.rows >= 2 and since >= self.min_shared):
                best = node
        return best

    def _walk(self, tokens: Sequence[int]) -> Iterator[tuple[Node, int]]:
        """The nodes on `tokens`' path, each with the tokens since the last node that has KV or would be
        computed, its own included."""
        node, i, since = self.root, 0, 0
        while i < len(tokens):
            child = node.children.get(tokens[i])
            if child is None or _common_len(child.tokens, tokens, i) < len(child.tokens):
                return
            since += len(child.tokens)
            yield child, since
            if child.kv is not None or (child.rows >= 2 and since >= self.min_shared):
                since = 0
            node, i = child, i + len(child.tokens)

    def missing(self, node: Node) -> list[Unit]:
        """The prompt-pass rows that give `node` and the served nodes above it their KV, shallowest first:
        each unit runs after the KV of its parent, which the unit before it (or the cache) provides."""
        units: list[Unit] = []
        pending: list[Node] = []
        for n in reversed(node.chain()):
            if n.kv is not None:
                break
            pending.append(n)
        pending.reverse()
        # Cut the uncomputed part of the chain at the nodes that are themselves served (multi-level).
        since, run, parent = 0, [], pending[0].parent if pending else None
        for n in pending:
            run.append(n)
            since += len(n.tokens)
            if n is node or (n.rows >= 2 and since >= self.min_shared):
                units.append(Unit(None if parent is self.root else parent, tuple(run)))
                parent, run, since = n, [], 0
        return units

    # ------------------------------------------------------------------ KV bookkeeping

    def store(self, node: Node, kv: Any) -> None:
        """Give `node` its KV (a node computed twice in one pass keeps the first)."""
        if node.kv is not None:
            return
        node.kv, node.nbytes = kv, self.ops.nbytes(kv)
        self.nbytes += node.nbytes
        self.touch(node)

    def touch(self, node: Node) -> None:
        stamp = next(self._clock)
        for n in node.chain():
            n.last_used = stamp

    def pin(self, node: Node | None, delta: int) -> None:
        if node is not None:
            for n in node.chain():
                n.pins += delta

    def evict(self) -> int:
        """Drop the least recently used KV that no pending prompt needs until the total is within the
        budget; returns the bytes freed. Only a node without KV below it goes, so a node's ancestors always
        keep theirs."""
        freed = 0
        while self.nbytes > self.budget:
            leaves = [
                n for n in self._kv_nodes() if n.pins == 0 and all(c.kv is None for c in n.children.values())
            ]
            if not leaves:
                break
            victim = min(leaves, key=lambda n: n.last_used)
            freed += victim.nbytes
            self.nbytes -= victim.nbytes
            victim.kv, victim.nbytes = None, 0
        return freed

    def end_call(self) -> None:
        """Forget the call's prompts: reset counts and pins, drop the nodes without KV, then evict to the
        budget."""
        stack = [self.root]
        while stack:
            node = stack.pop()
            node.rows = node.pins = 0
            stack.extend(node.children.values())
        self.evict()
        stack = [self.root]
        while stack:
            node = stack.pop()
            node.children = {t: c for t, c in node.children.items() if c.kv is not None}
            stack.extend(node.children.values())

    def clear(self) -> None:
        self.root = Node((), 0, None)
        self.nbytes = 0

    def _kv_nodes(self) -> Iterator[Node]:
        stack = list(self.root.children.values())
        while stack:
            node = stack.pop()
            if node.kv is not None:
                yield node
                stack.extend(node.children.values())

    @property
    def kv_tokens(self) -> int:
        """Prompt tokens whose KV the tree holds."""
        return sum(len(n.tokens) for n in self._kv_nodes())


def _common_len(run: Sequence[int], tokens: Sequence[int], start: int) -> int:
    """How many leading tokens of `run` equal `tokens[start:]`."""
    n = 0
    for a, b in zip(run, itertools.islice(tokens, start, None), strict=False):  # stops at the shorter
        if a != b:
            break
        n += 1
    return n


def prefix_cuts(rows: Sequence[Sequence[int]], min_shared: int) -> list[int] | None:
    """How many leading tokens of each row a fresh tree would serve from a shared node's KV (0: the row
    runs whole), or None where sharing does not pay (see `sharing_pays`).

    >>> a, b = [1] * 40, [5] * 40
    >>> prefix_cuts([[*a, 2], [*a, 3, 4], [*b, 6], [*b, 7], [9]], 32)
    [40, 40, 40, 40, 0]
    >>> prefix_cuts([[*a, 2], [7, *a]], 32) is None
    True
    """
    if min_shared == 0 or len(rows) < 2:
        return None
    tree = PrefixTree(min_shared, 0, KvOps(lambda kv, n: (kv, kv), lambda kv: 0))
    for r in rows:
        tree.insert(r[:-1])
    served = [tree.serving(r[:-1]) for r in rows]
    cuts = [0 if s is None else s.end for s in served]
    units = {id(u.nodes[-1]): len(u.tokens) for s in served if s is not None for u in tree.missing(s)}
    return cuts if sharing_pays(rows, cuts, sum(units.values())) else None


def sharing_pays(rows: Sequence[Sequence[int]], cuts: Sequence[int], new_prefix_tokens: float) -> bool:
    """Whether serving `cuts` leading tokens of each row from shared KV beats running the rows whole.

    It pays when some row is served, the prefix passes (`new_prefix_tokens`, the shared prefixes not yet
    computed) plus the rows' padded suffixes compute fewer tokens than the padded whole rows, and the
    suffix pass holds a KV cache no wider than one pass would (a long prefix before another row's long
    suffix would widen it).

    >>> sharing_pays([[1] * 72, [1] * 71], [70, 70], 70), sharing_pays([[1] * 72, [2] * 3], [70, 0], 0)
    (True, False)
    """
    if not any(cuts):
        return False
    width = max(len(r) for r in rows)
    tail = max(len(r) - c for r, c in zip(rows, cuts, strict=True))
    if widens(max(cuts), tail, width):
        return False
    return new_prefix_tokens + len(rows) * tail < len(rows) * width


def batches_by_tails(
    order: Sequence[int],
    cuts: Sequence[int],
    lengths: Sequence[int],
    *,
    token_budget: int,
    max_batch_size: int,
) -> list[list[int]]:
    """Cut `order` into batches as `batches_by_budget` does, but let the rows' served prefixes (`cuts`,
    indexed like `lengths`) count once: longest prefix + rows x longest rest. A row also starts a new
    batch where it would make the batch's cache wider than its longest prompt (`widens`).

    >>> batches_by_tails([0, 1, 2, 3], [40, 40, 40, 0], [44, 42, 41, 9], token_budget=60, max_batch_size=8)
    [[0, 1, 2], [3]]
    """
    batches: list[list[int]] = []
    batch: list[int] = []
    head = tail = width = 0
    for i in order:
        h, t, w = max(head, cuts[i]), max(tail, lengths[i] - cuts[i]), max(width, lengths[i])
        if batch and (
            len(batch) >= max_batch_size or h + (len(batch) + 1) * t > token_budget or widens(h, t, w)
        ):
            batches.append(batch)
            batch, h, t, w = [], cuts[i], lengths[i] - cuts[i], lengths[i]
        batch.append(i)
        head, tail, width = h, t, w
    if batch:
        batches.append(batch)
    return batches


def widens(head: int, tail: int, width: int) -> bool:
    """Whether a batch whose rows are served prefixes of up to `head` tokens and run up to `tail` tokens of
    their own would hold a cache wider than its longest prompt (`width`) with the prefixes served than
    without."""
    return head > 0 and head + tail > width
