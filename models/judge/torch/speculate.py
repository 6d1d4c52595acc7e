"""Prompt-lookup speculative decoding: drafts copied from the row's own text, verified in one forward
pass.

Much of what a judge writes is copied: statements restate the answer, entities and questions quote the
contexts, and a small judge that loops repeats its own output. For each row a decode step looks up the
row's last few tokens (its prompt and what it has generated) where they occurred before and proposes the
tokens that followed there. One forward pass runs every row's last token plus its draft; position j's
logits pass through the row's processors exactly as a plain step's would, and the row keeps its token at
j (greedy, or sampled with the row's next seeded random number), going on to j + 1 only while that token
equals the draft's. So each row's tokens are the ones plain decoding picks, whatever was drafted (up to
the floating-point differences between batch shapes that batching itself has); a step yields one to
`1 + draft` tokens per row.

The KV of draft tokens that were not kept stays in the cache, masked out (and so does the padding of rows
with shorter drafts); positions continue from the kept tokens. A forward pass costs about the same for a
few more tokens per row while decoding is bound by reading the weights (a small batch, the tail of a
call), so the drafts per step are bounded over the batch (`TorchJudgeConfig.speculative_tokens`).
"""

from __future__ import annotations

from collections.abc import Sequence

__all__ = ["MAX_DRAFT", "Drafter", "draft_width"]

MAX_DRAFT = 8
"""Most draft tokens for one row in one step."""
_NGRAMS = (3, 2)
"""Lengths of the row's tail looked up, longest first."""


def draft_width(rows: int, budget: int) -> int:
    """Draft tokens per row for a step of `rows` rows, so that the step runs at most `budget` tokens in
    all; 0 where not even one draft token fits.

    >>> draft_width(4, 64), draft_width(16, 64), draft_width(32, 64), draft_width(40, 64)
    (8, 3, 1, 0)
    """
    if rows < 1 or budget < 1:
        return 0
    return max(0, min(MAX_DRAFT, budget // rows - 1))


class Drafter:
    """One row's text (prompt, then generated tokens) and where each of its short n-grams last ended.

    >>> d = Drafter([5, 1, 2, 3, 4, 9, 1, 2])
    >>> d.draft(3)
    [3, 4, 9]
    >>> d.extend([3, 7]); d.draft(2)
    []
    """

    def __init__(self, prompt: Sequence[int]) -> None:
        self.text: list[int] = []
        self.ends: dict[int, dict[tuple[int, ...], int]] = {n: {} for n in _NGRAMS}
        self.extend(prompt)

    def extend(self, tokens: Sequence[int]) -> None:
        """Append `tokens`; the n-grams ending before the new last token become findable."""
        text = self.text
        for token in tokens:
            text.append(token)
            end = len(text) - 2  # the n-gram ending just before the new last token
            for n, ends in self.ends.items():
                if end - n + 1 >= 0:
                    ends[tuple(text[end - n + 1 : end + 1])] = end

    def draft(self, width: int) -> list[int]:
        """Up to `width` tokens that followed the latest earlier occurrence of the text's last n-gram (the
        longest n that occurred); empty when none did."""
        text = self.text
        for n, ends in self.ends.items():
            if len(text) < n:
                continue
            end = ends.get(tuple(text[-n:]))
            if end is not None:
                return text[end + 1 : end + 1 + width]
        return []
