"""Logits processors of the decode loop: a JSON-schema grammar mask and a seeded per-row sampler."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import torch

__all__ = ["GrammarMask", "SeededSampler", "first_stop"]


def first_stop(text: str, stops: Sequence[str]) -> int | None:
    hits = [k for k in (text.find(s) for s in stops if s) if k >= 0]
    return min(hits) if hits else None


class GrammarMask:
    """Keeps each row of a decode batch inside its JSON-schema grammar, with one xgrammar matcher per row.

    Written here rather than using `xgrammar.contrib.hf.LogitsProcessor`, which is bound to a fixed batch:
    here rows leave the batch as they finish (`keep`) and waiting rows join it (`add`). The bitmask is
    unpacked on the CPU and only the boolean mask moves to the device, so the device runs nothing but
    `masked_fill`.
    """

    def __init__(self, grammar: Any) -> None:
        self.grammar = grammar
        self.matchers: list[Any] = []
        self.active: list[bool] = []
        self.bitmask: Any = None

    def add(self, rows: int) -> None:
        """Append `rows` new rows, each at the start of the grammar."""
        import xgrammar

        self.matchers.extend(xgrammar.GrammarMatcher(self.grammar) for _ in range(rows))
        self.active.extend([True] * rows)

    def mask(self, scores: torch.Tensor, rows: Sequence[int] | None = None) -> torch.Tensor:
        """`scores` `[L, V]` (row j: the batch's j-th live row, or the `rows[j]`-th where `rows` is
        given), -inf wherever the grammar forbids."""
        import torch
        import xgrammar

        which = list(range(len(self.matchers))) if rows is None else list(rows)
        active = [self.active[i] for i in which]
        if not any(active):
            return scores
        if self.bitmask is None or self.bitmask.shape[0] < len(which):
            self.bitmask = xgrammar.allocate_token_bitmask(len(which), self.grammar.tokenizer_info.vocab_size)
        for j, i in enumerate(which):
            if active[j]:
                self.matchers[i].fill_next_token_bitmask(self.bitmask, j)
        # Unpacked and completed on the CPU, where xgrammar fills the bitmask (torch_npu's operator table
        # lists no int32 right shift); only the boolean mask moves to the device, for `masked_fill`.
        bits = self.bitmask[: len(which)]
        shifts = torch.arange(32, dtype=bits.dtype)
        allowed = ((bits.unsqueeze(-1) >> shifts) & 1).bool().flatten(1)
        allowed = allowed[:, : scores.shape[1]]
        if allowed.shape[1] < scores.shape[1]:
            # Logits wider than the grammar's vocabulary (padded lm_head): never allow the extra ids.
            pad = torch.zeros(len(which), scores.shape[1] - allowed.shape[1], dtype=torch.bool)
            allowed = torch.cat([allowed, pad], dim=1)
        allowed[~torch.tensor(active)] = True
        return scores.masked_fill((~allowed).to(scores.device), float("-inf"))

    def accept(self, tokens: list[int], rows: Sequence[int] | None = None) -> list[bool]:
        """Advance each row's matcher (all rows, or `rows`) by its new token; True where the grammar has
        ended (it accepted a stop token)."""
        which = list(range(len(self.matchers))) if rows is None else list(rows)
        ended = []
        for i, token in zip(which, tokens, strict=True):
            m = self.matchers[i]
            # Only a token the mask forbade is refused (a sampler's rounding at the very end of the CDF);
            # the matcher cannot follow the text past it, so that row decodes on unconstrained.
            if self.active[i] and not m.accept_token(token):
                self.active[i] = False
            ended.append(self.active[i] and m.is_terminated())
        return ended

    def keep(self, rows: list[int]) -> None:
        """Keep only these rows, in this order (the rows still decoding)."""
        self.matchers = [self.matchers[j] for j in rows]
        self.active = [self.active[j] for j in rows]


class SeededSampler:
    """Samples each row from its own seeded generator.

    transformers' sampling draws from the global RNG, so a row's sample would depend on the other rows of
    its batch. Here each row owns a CPU generator seeded with its request's seed that yields one uniform
    number per token; the token is found by inverse CDF over the (temperature-scaled, top-p-truncated)
    distribution on the device. A row's k-th token always uses its k-th number, whichever rows run
    beside it and however many tokens a step gives it (a speculative step).
    """

    def __init__(self, temperature: float, top_p: float) -> None:
        self.generators: list[Any] = []
        self.temperature = temperature
        self.top_p = top_p

    def add(self, seeds: Sequence[int]) -> None:
        """Append one new row per seed, each with a fresh generator."""
        import torch

        self.generators.extend(torch.Generator().manual_seed(seed) for seed in seeds)

    def __call__(self, scores: torch.Tensor, rows: Sequence[int] | None = None) -> torch.Tensor:
        """The sampled token of each row `[L]` long, from `scores` `[L, V]` (-inf: never); row j is the
        j-th row, or the `rows[j]`-th where `rows` is given. Each of those rows uses its next number."""
        import torch

        generators = self.generators if rows is None else [self.generators[i] for i in rows]
        u = torch.cat([torch.rand(1, generator=g) for g in generators]).to(scores.device)
        probs = torch.softmax(scores.float() / self.temperature, dim=-1)
        sorted_p, order = probs.sort(dim=-1, descending=True)
        cdf = sorted_p.cumsum(dim=-1)
        if self.top_p < 1.0:
            # Keep the smallest prefix whose mass reaches top_p (the most likely token is always kept).
            sorted_p = sorted_p * ((cdf - sorted_p) < self.top_p)
            cdf = sorted_p.cumsum(dim=-1)
        target = (u * cdf[:, -1]).unsqueeze(1)
        pos = torch.searchsorted(cdf, target, right=True).clamp_(max=scores.shape[1] - 1)
        return order.gather(1, pos).squeeze(1)

    def keep(self, rows: list[int]) -> None:
        """Keep only these rows' generators, in this order (the rows still decoding)."""
        self.generators = [self.generators[j] for j in rows]
