"""The runner: model calls over left-padded rows, prompt passes served from the prefix tree's KV.

Prompt passes ("prefill") run each row's tokens after the KV of the tree node that serves it: the KV of
every node on its path, concatenated, left-padded to the batch's widest and expanded per row; then the
row's own tokens, left-padded, so that every row's last real token is the batch's last column. The
padding between a row's prefix and its own tokens is masked out, which full attention cannot tell from
padding at the start (`shares_prefix` checks every layer is plain full attention). Nodes a batch needs
that have no KV yet are computed first, level by level: the preamble's node, then each sample's node
after it.

torch is imported when a runner is built, not when this module is imported.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from ascend_eval.models.batching import batches_by_budget, longest_first
from ascend_eval.models.device import DeviceInfo
from ascend_eval.models.errors import BackendError
from ascend_eval.models.judge.torch.config import TorchJudgeConfig, cache_param, forward_params
from ascend_eval.models.judge.torch.kv import growing_cache
from ascend_eval.models.judge.torch.plan import KvOps, Node, PrefixTree, Unit, sharing_pays

if TYPE_CHECKING:
    import torch

__all__ = ["Batch", "Runner"]

Kv = tuple[tuple[Any, Any], ...]
"""Per layer, (keys, values) `[1, heads, tokens, head_dim]` of one node's tokens."""


class Batch:
    """A batch after its prompt pass: the KV cache, the attention mask `[B, T]` over what the cache holds
    (0 on padding) and each row's next position `[B]`."""

    __slots__ = ("cache", "mask", "positions")

    def __init__(self, cache: Any, mask: torch.Tensor, positions: torch.Tensor) -> None:
        self.cache, self.mask, self.positions = cache, mask, positions

    def select(self, index: torch.Tensor) -> None:
        """Keep only these rows, in this order."""
        self.cache.batch_select_indices(index)
        self.mask, self.positions = self.mask.index_select(0, index), self.positions.index_select(0, index)
        # Columns that only the rows gone had (a long prompt's): no row reads them any more.
        start = int(self.mask.any(dim=0).long().argmax())
        if start > 0:
            for layer in self.cache.layers:
                layer.keys, layer.values = layer.keys[:, :, start:], layer.values[:, :, start:]
            self.mask = self.mask[:, start:]

    def extend(self, other: Batch) -> None:
        """Append `other`'s rows below these, left-padding the narrower cache with masked columns."""
        import torch

        width = max(self.mask.shape[1], other.mask.shape[1])
        for mine, theirs in zip(self.cache.layers, other.cache.layers, strict=True):
            mine.keys = torch.cat([_pad_left(mine.keys, width), _pad_left(theirs.keys, width)])
            mine.values = torch.cat([_pad_left(mine.values, width), _pad_left(theirs.values, width)])
        self.mask = torch.cat([_pad_left(self.mask, width, dim=1), _pad_left(other.mask, width, dim=1)])
        self.positions = torch.cat([self.positions, other.positions])

    def compact_if_sparse(self) -> None:
        """Drop the masked columns once they are most of the cache (a speculative step leaves the draft
        tokens it did not keep; joins leave padding), so attention stops reading them and memory stays
        about what the rows hold. Each row's kept columns stay in order, right-aligned; positions are
        explicit, so nothing else changes."""
        import torch

        valid = self.mask.bool()
        width = int(valid.sum(dim=1).max())
        total = int(self.mask.shape[1])
        if total <= 2 * width + 64:
            return
        columns = torch.arange(total, device=self.mask.device).expand_as(self.mask)
        index = torch.where(valid, columns, torch.full_like(columns, -1)).sort(dim=1).values[:, -width:]
        self.mask = (index >= 0).to(self.mask.dtype)
        index = index.clamp(min=0)
        for layer in self.cache.layers:
            for name in ("keys", "values"):
                t = getattr(layer, name)
                setattr(
                    layer,
                    name,
                    t.gather(2, index[:, None, :, None].expand(t.shape[0], t.shape[1], width, t.shape[3])),
                )


def _pad_left(t: torch.Tensor, width: int, dim: int = 2) -> torch.Tensor:
    import torch

    missing = width - t.shape[dim]
    if missing == 0:
        return t
    shape = list(t.shape)
    shape[dim] = missing
    return torch.cat([t.new_zeros(shape), t], dim=dim)


class Runner:
    """Runs the judge's model: prompt passes (with the prefix tree) and decode steps.

    Attributes:
        forward_batches: model forward calls so far.
        decode_row_steps: rows computed by decode steps so far, summed over steps.
        computed_prompt_tokens: prompt tokens actually run through the model so far (padding not counted):
            what a prompt pass computed, so not those served from a shared or kept prefix's KV.
        tree: the prefix tree whose nodes' KV serve the prompts; kept across calls within
            `kv_cache_bytes`.
    """

    def __init__(self, model: Any, device: DeviceInfo, pad_id: int, config: TorchJudgeConfig, name: str):
        self.model = model
        self.device = device
        self.pad_id = pad_id
        self.config = config
        self.name = name
        self.forward_batches = 0
        self.computed_prompt_tokens = 0
        self.decode_row_steps = 0
        self.keeps_last_logits = "logits_to_keep" in forward_params(model)
        self.cache_kwarg = cache_param(model)
        self.shares_prefix = self._can_share_prefix()
        min_shared = config.min_shared_prefix if self.shares_prefix else 0
        self.tree = PrefixTree(min_shared, config.kv_cache_bytes, KvOps(_split_kv, _kv_nbytes))

    @property
    def min_shared(self) -> int:
        """`min_shared_prefix`, or 0 (no sharing) where the model's cache cannot be shared."""
        return self.tree.min_shared

    def _can_share_prefix(self) -> bool:
        """Whether rows may run after a shared prefix's KV: every layer's cache must be transformers' plain
        `DynamicLayer` (full attention whose `update` concatenates new keys onto the cached ones).
        Sliding-window, chunked and recurrent layers keep other state, which could not be laid out per row.
        """
        if self.cache_kwarg is None:
            return False
        try:
            from transformers.cache_utils import DynamicLayer

            layers = self.model_cache().layers
        except Exception:  # an older or unusual cache API: keep the plain path rather than guess
            return False
        return bool(layers) and all(type(layer) is DynamicLayer for layer in layers)

    def model_cache(self) -> Any:
        """An empty KV cache exactly as the model would build it (transformers' `DynamicCache`)."""
        from transformers.cache_utils import DynamicCache

        return DynamicCache(config=self.model.config)

    def new_cache(self) -> Any:
        """An empty KV cache of the kind the model would build itself (so generation matches its own);
        where every layer is plain full attention, its layers append in place (`kv.growing_cache`)."""
        cache = self.model_cache()
        return growing_cache(cache) if self.shares_prefix else cache

    def left_pad(self, rows: Sequence[Sequence[int]]) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """input_ids, attention_mask and position_ids `[B, T]` long, left-padded, on the device."""
        import torch

        width = max(len(r) for r in rows)
        ids = torch.full((len(rows), width), self.pad_id, dtype=torch.long)
        mask = torch.zeros((len(rows), width), dtype=torch.long)
        for i, r in enumerate(rows):
            if r:
                ids[i, width - len(r) :] = torch.tensor(r, dtype=torch.long)
                mask[i, width - len(r) :] = 1
        # Left padding shifts each row; positions must count real tokens only, or a padded row would be
        # computed at other positions than the same prompt alone.
        positions = (mask.cumsum(dim=1) - 1).clamp(min=0)
        dev = self.device.torch_device
        return ids.to(dev), mask.to(dev), positions.to(dev)

    def forward(
        self,
        what: str,
        ids: torch.Tensor,
        mask: torch.Tensor,
        positions: torch.Tensor,
        cache: Any,
        *,
        keep: int = 1,
    ) -> torch.Tensor:
        """One model call over `ids` `[B, T]`, appending to `cache` (None: keep no cache).

        Returns:
            `[B, V]` logits after each row's last column (left padding puts every row's last real token
            there); only that column goes through the lm_head where the model allows it. With `keep` > 1,
            `[B, keep, V]`: the logits after each of the last `keep` columns.
        """
        kwargs: dict[str, Any] = {"logits_to_keep": keep} if self.keeps_last_logits else {}
        if cache is None:
            kwargs["use_cache"] = False
        else:
            kwargs[self.cache_kwarg] = cache  # type: ignore[index]
            kwargs["use_cache"] = True
        try:
            out = self.model(input_ids=ids, attention_mask=mask, position_ids=positions, **kwargs)
        except Exception as e:
            rows, width = ids.shape
            raise BackendError(
                f"Judge {self.name} failed on a {what} batch of {rows} rows x {width} tokens on "
                f"{self.device.describe()}: {type(e).__name__}: {e}. If it ran out of memory, lower "
                f"token_budget (now {self.config.token_budget}) or max_batch_size (now "
                f"{self.config.max_batch_size})."
            ) from e
        self.forward_batches += 1
        return out.logits[:, -1, :] if keep == 1 else out.logits[:, -keep:, :]

    # ------------------------------------------------------------------ prompt passes

    def prefill(
        self, rows: Sequence[Sequence[int]], served: Sequence[Node | None], what: str, *, keep_cache: bool
    ) -> tuple[torch.Tensor, Batch | None]:
        """Run each prompt after the KV of the node that serves it (None: the prompt runs whole), computing
        first the nodes that have no KV yet.

        Returns:
            Logits `[B, V]` after each whole prompt, and the batch's cache, mask and next positions (None
            when `keep_cache` is False).
        """
        served = self.worth(rows, served)
        self.ensure(served, what)
        for node in served:
            if node is not None:
                self.tree.touch(node)
        tails = [r[0 if n is None else n.end :] for r, n in zip(rows, served, strict=True)]
        return self._run(tails, served, what, keep_cache=keep_cache)

    def worth(self, rows: Sequence[Sequence[int]], served: Sequence[Node | None]) -> list[Node | None]:
        """`served`, or no node for any row where serving them does not pay (`sharing_pays`). A node still
        to compute costs this batch its share: its tokens times the part of its rows in the batch."""
        if not any(n is not None for n in served):
            return list(served)
        units: dict[int, Unit] = {}
        for node in served:
            if node is not None and node.kv is None:
                units.update((id(u.nodes[-1]), u) for u in self.tree.missing(node))
        under: dict[int, int] = {}
        for node in served:
            for n in node.chain() if node is not None else ():
                under[id(n)] = under.get(id(n), 0) + 1
        new = sum(
            len(u.tokens) * min(1.0, under.get(key, 0) / max(1, u.nodes[-1].rows)) for key, u in units.items()
        )
        cuts = [0 if n is None else n.end for n in served]
        return list(served) if sharing_pays(rows, cuts, new) else [None] * len(served)

    def ensure(self, served: Sequence[Node | None], what: str) -> None:
        """Compute the KV of every served node (and of the served nodes above it) that has none."""
        pending: dict[tuple[int, int], Unit] = {}
        for node in served:
            if node is not None and node.kv is None:
                for u in self.tree.missing(node):
                    pending.setdefault((id(u.parent), id(u.nodes[-1])), u)
        units = list(pending.values())
        while units:
            ready = [u for u in units if u.parent is None or u.parent.kv is not None]
            units = [u for u in units if not (u.parent is None or u.parent.kv is not None)]
            if not ready:  # every unit's parent is a node above it on its path, computed first
                raise RuntimeError("prefix tree: a unit's parent has no KV and no unit computes it")
            lengths = [len(u.tokens) + (0 if u.parent is None else u.parent.end) for u in ready]
            order = longest_first(lengths)
            for batch in batches_by_budget(
                order,
                lengths,
                token_budget=self.config.token_budget,
                max_batch_size=self.config.max_batch_size,
            ):
                self._compute([ready[j] for j in batch], what)

    def _compute(self, units: list[Unit], what: str) -> None:
        """One prompt pass over `units`, storing each of their nodes' KV in the tree."""
        rows = [u.tokens for u in units]
        _, batch = self._run(rows, [u.parent for u in units], f"{what} (shared prefixes)", keep_cache=True)
        assert batch is not None
        width = batch.mask.shape[1]
        for i, unit in enumerate(units):
            offset = width - len(rows[i])
            for node in unit.nodes:
                end = offset + len(node.tokens)
                kv = tuple(
                    (
                        layer.keys[i : i + 1, :, offset:end].clone(),
                        layer.values[i : i + 1, :, offset:end].clone(),
                    )
                    for layer in batch.cache.layers
                )
                self.tree.store(node, kv)
                offset = end

    def _run(
        self, tails: Sequence[Sequence[int]], parents: Sequence[Node | None], what: str, *, keep_cache: bool
    ) -> tuple[torch.Tensor, Batch | None]:
        """Run `tails`, row i after the KV of `parents[i]` (which all have theirs)."""
        import torch

        ids, mask, positions = self.left_pad(tails)
        self.computed_prompt_tokens += sum(len(t) for t in tails)
        if any(p is not None for p in parents):
            cache, head_mask, offsets = self._parent_cache(parents)
            mask = torch.cat([head_mask, mask], dim=1)
            positions = positions + offsets.unsqueeze(1)  # each row continues right after its prefix
        else:
            cache = self.new_cache() if keep_cache else None
        logits = self.forward(what, ids, mask, positions, cache)
        return logits, (Batch(cache, mask, positions[:, -1] + 1) if keep_cache else None)

    def _parent_cache(self, parents: Sequence[Node | None]) -> tuple[Any, torch.Tensor, torch.Tensor]:
        """A cache holding each row's prefix KV (its node's path), left-padded; its mask `[B, P]`; each
        row's prefix length `[B]`."""
        import torch

        distinct: dict[int, int] = {}
        nodes: list[Node] = []
        for p in parents:
            if p is not None and id(p) not in distinct:
                distinct[id(p)] = len(nodes)
                nodes.append(p)
        width = max(n.end for n in nodes)
        chains = [n.chain() for n in nodes]
        empty = any(p is None for p in parents)
        owner = [len(nodes) if p is None else distinct[id(p)] for p in parents]
        dev = self.device.torch_device
        index = torch.tensor(owner, device=dev)
        cache = self.new_cache()
        for layer in range(len(cache.layers)):
            stacked = []
            for part in (0, 1):
                per_node = [
                    _pad_left(torch.cat([n.kv[layer][part] for n in chain], dim=2), width) for chain in chains
                ]
                if empty:
                    per_node.append(torch.zeros_like(per_node[0]))
                both = torch.cat(per_node)
                if both.shape[0] == 1:
                    # A view, not a copy: the cache's update concatenates onto it anyway.
                    stacked.append(both.expand(len(parents), -1, -1, -1))
                else:
                    stacked.append(both.index_select(0, index))
            cache.update(stacked[0], stacked[1], layer)
        ends = torch.tensor([0 if p is None else p.end for p in parents], device=dev)
        columns = torch.arange(width, device=dev).unsqueeze(0)
        mask = (columns >= (width - ends).unsqueeze(1)).long()
        return cache, mask, ends

    def decode_step(self, what: str, tokens: torch.Tensor, batch: Batch) -> torch.Tensor:
        """One token per row `[B]` after `batch`; returns the next logits `[B, V]`."""
        import torch

        batch.mask = torch.cat([batch.mask, batch.mask.new_ones((batch.mask.shape[0], 1))], dim=1)
        logits = self.forward(
            what, tokens.unsqueeze(1), batch.mask, batch.positions.unsqueeze(1), batch.cache
        )
        batch.positions = batch.positions + 1
        self.decode_row_steps += tokens.shape[0]
        return logits

    def verify_step(self, what: str, tokens: torch.Tensor, valid: torch.Tensor, batch: Batch) -> torch.Tensor:
        """Each row's last token and its draft, `tokens` `[B, W]` (right-padded; `valid` `[B, W]` is 0 on
        the padding), after `batch`; returns the logits after every column `[B, W, V]`. The caller then
        keeps each row's verified columns (`keep_verified`)."""
        import torch

        width = tokens.shape[1]
        batch.mask = torch.cat([batch.mask, valid.to(batch.mask.dtype)], dim=1)
        positions = batch.positions.unsqueeze(1) + torch.arange(width, device=tokens.device)
        logits = self.forward(what, tokens, batch.mask, positions, batch.cache, keep=width)
        self.decode_row_steps += int(valid.sum())
        return logits

    def keep_verified(self, batch: Batch, kept: torch.Tensor, width: int) -> None:
        """After a `verify_step` of `width` columns: row i keeps its first `kept[i]` of them (its last
        token and the draft tokens that matched); the rest are masked out, and its positions go on after
        the kept ones."""
        import torch

        columns = torch.arange(width, device=kept.device).unsqueeze(0)
        batch.mask[:, -width:] = (columns < kept.unsqueeze(1)).to(batch.mask.dtype)
        batch.positions = batch.positions + kept


def _split_kv(kv: Kv, n: int) -> tuple[Kv, Kv]:
    head = tuple((k[:, :, :n].clone(), v[:, :, :n].clone()) for k, v in kv)
    tail = tuple((k[:, :, n:].clone(), v[:, :, n:].clone()) for k, v in kv)
    return head, tail


def _kv_nbytes(kv: Kv) -> int:
    return sum(k.nbytes + v.nbytes for k, v in kv)
