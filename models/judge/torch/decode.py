"""The decode loop of `TorchJudge.generate`, with continuous batching.

Rows wait in a queue (longest first). Each step decodes one token for every live row; a row that ends
(EOS, its grammar terminates, a stop string shows, its cap) leaves the batch at once, its KV rows dropped,
and waiting rows take its place: their prompts run (served from the prefix tree's KV where they share a
prefix) and their KV rows join the batch, so the batch stays full while there is work. The logits pass
through per-row processors: the JSON-schema grammar mask, then greedy argmax or the seeded sampler; each
row's processors' state follows it in and out of the batch, so a row's answer does not depend on the rows
beside it.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Sequence
from typing import Any

from ascend_eval.models.base import GenerationParams, repeats
from ascend_eval.models.judge.torch.plan import Node, widens
from ascend_eval.models.judge.torch.processors import GrammarMask, SeededSampler, first_stop
from ascend_eval.models.judge.torch.runner import Batch, Runner
from ascend_eval.models.judge.torch.speculate import Drafter, draft_width

__all__ = ["decode"]


def decode(
    runner: Runner,
    tokenizer: Any,
    eos: set[int],
    rows: Sequence[Sequence[int]],
    served: Sequence[Node | None],
    caps: Sequence[int],
    params: GenerationParams,
    grammar: Any,
    seeds: Sequence[int] | None = None,
) -> list[tuple[list[int], str]]:
    """Generate for every row, admitting rows in the given order as the batch has room.

    A row joins the batch while the batch's rows, each counting its prompt plus its cap, stay within
    `token_budget` and `max_batch_size` (a row joins an empty batch whatever its size). A row ends at an
    EOS token (which it keeps, as transformers' `generate` does), when its grammar terminates, when its
    decoded text first shows a stop string, at its cap ("length"), or when it loops ("repetition", see
    `TorchJudgeConfig.loop_guard`). Decoding reads nothing from the
    checkpoint's generation_config: `params` are the only settings.

    Args:
        rows: each prompt's token ids, in the order to admit them.
        served: per row, the prefix tree node whose KV its prompt runs after (None: runs whole); its pin is
            released once the row's prompt has run.
        caps: per row, the most tokens it may generate.

    Returns:
        Per row, its generated token ids and "stop", "length" or "repetition".
    """
    return _DecodeLoop(runner, tokenizer, eos, rows, served, caps, params, grammar, seeds).run()


class _DecodeLoop:
    """One `decode` call: each row's tokens and end reason, the queue of rows waiting, and the running batch
    with the row of `rows` behind each of its rows. `__init__` sets up, `run` is the loop; a step is
    `_decode_live` (the running rows' logits, or their verified drafts), `_admit` (waiting rows' prompt
    pass), `_pick` (each row's next token) and, when rows ended, `_retire`.

    The state lives in slots: the loop reads it at every step and for every row, and a slot reads about as
    fast as the closure cell it replaces.
    """

    __slots__ = (
        "batch",
        "caps",
        "config",
        "constraint",
        "drafters",
        "eos",
        "held",
        "live",
        "queue",
        "reasons",
        "rows",
        "runner",
        "sampler",
        "seeds",
        "served",
        "speculate",
        "step",
        "stops",
        "tokenizer",
        "tokens",
        "torch",
    )

    def __init__(
        self,
        runner: Runner,
        tokenizer: Any,
        eos: set[int],
        rows: Sequence[Sequence[int]],
        served: Sequence[Node | None],
        caps: Sequence[int],
        params: GenerationParams,
        grammar: Any,
        seeds: Sequence[int] | None,
    ) -> None:
        import torch

        self.torch = torch  # imported when a judge decodes, not when this module is imported
        self.runner, self.tokenizer, self.eos = runner, tokenizer, eos
        self.rows, self.served, self.caps = rows, served, caps
        self.config = config = runner.config
        self.stops = [s for s in params.stop if s]
        self.constraint = GrammarMask(grammar) if grammar is not None else None
        self.sampler = None if params.greedy else SeededSampler(params.temperature, params.top_p)
        self.seeds = [params.seed] * len(rows) if seeds is None else seeds
        self.speculate = config.speculative_tokens > 0 and runner.shares_prefix
        self.drafters: list[Drafter | None] = [None] * len(rows)
        self.tokens: list[list[int]] = [[] for _ in rows]
        self.reasons = [""] * len(rows)  # "" while the row is still decoding
        self.queue = deque(range(len(rows)))
        self.live: list[int] = []  # the row of `rows` behind each row of the running batch
        self.batch: Batch | None = None
        self.held = 0  # prompt plus cap tokens of the live rows
        self.step = 0

    def run(self) -> list[tuple[list[int], str]]:
        """Step until no row is live or waiting; per row, its tokens and why it ended."""
        while True:
            parts: list[Any] = []
            scored = 0  # live rows whose next token this step's verification already chose
            if self.live:
                scored = self._decode_live(parts)
            if self.queue:  # once every row has joined, a step makes no call for admissions
                self._admit(parts)
            live, reasons = self.live, self.reasons
            if not live:
                break
            if parts:
                self._pick(parts, scored)
            keep = [j for j, r in enumerate(live) if not reasons[r]]
            if len(keep) < len(live):
                self._retire(keep)
            if self.speculate and self.batch is not None:
                self.batch.compact_if_sparse()
        return list(zip(self.tokens, self.reasons, strict=True))

    def take(self, r: int, token: int, grammar_end: bool) -> str:
        """Append row r's next token; why the row ends there, or ""."""
        tokens, reasons, stops = self.tokens[r], self.reasons, self.stops
        config = self.config
        tokens.append(token)
        if token in self.eos or grammar_end:
            reasons[r] = "stop"
        elif len(tokens) >= self.caps[r]:
            reasons[r] = "length"
        elif config.loop_guard and repeats(tokens, config.loop_guard):
            reasons[r] = "repetition"
        # The whole text each time: a stop string may span tokens, and a token may end inside a character
        # that only the next one completes.
        elif stops and first_stop(self.tokenizer.decode(tokens, skip_special_tokens=True), stops) is not None:
            reasons[r] = "stop"
        return reasons[r]

    def _decode_live(self, parts: list[Any]) -> int:
        """The live rows' step: where any has a draft, one verifying pass that takes each row's tokens
        (returns how many rows it scored: all); else one decode step, its logits added to `parts` (0)."""
        runner, live, tokens = self.runner, self.live, self.tokens
        drafters, caps = self.drafters, self.caps
        assert self.batch is not None
        self.step += 1
        last = self.torch.tensor([tokens[r][-1] for r in live], device=runner.device.torch_device)
        width = draft_width(len(live), self.config.speculative_tokens) if self.speculate else 0
        drafts = [drafters[r].draft(min(width, caps[r] - len(tokens[r]) - 1)) for r in live] if width else []  # type: ignore[union-attr]
        if any(drafts):
            what = f"generate (decode step {self.step})"
            _verify(runner, what, live, last, drafts, self.batch, self.constraint, self.sampler, self.take)
            for r in live:
                drafters[r].extend(tokens[r][len(drafters[r].text) - len(self.rows[r]) :])  # type: ignore[union-attr]
            return len(live)
        parts.append(runner.decode_step(f"generate (decode step {self.step})", last, self.batch))
        return 0

    def _admit(self, parts: list[Any]) -> None:
        """Waiting rows join the batch while it has room: their prompts run in one pass (after the prefix
        tree's KV where served), its logits added to `parts`, and their KV rows join the batch's."""
        runner, config, queue = self.runner, self.config, self.queue
        rows, served, caps = self.rows, self.served, self.caps
        live = self.live
        joining: list[int] = []
        head = tail = width = 0  # of the joining rows' prompt pass
        # Rows join a running batch only where its cache can be laid out per row (plain full attention);
        # other caches (sliding windows, recurrent state) decode in static batches.
        while (
            queue and len(live) + len(joining) < config.max_batch_size and (runner.shares_prefix or not live)
        ):
            i = queue[0]
            need, cut = len(rows[i]) + caps[i], 0 if served[i] is None else served[i].end
            h, t, w = max(head, cut), max(tail, len(rows[i]) - cut), max(width, len(rows[i]))
            if (live or joining) and self.held + need > config.token_budget:
                break
            if joining and widens(h, t, w):
                break  # it joins at the next step, with a prompt pass of its own
            joining.append(queue.popleft())
            self.held += need
            head, tail, width = h, t, w
        if not joining:
            return
        logits, joined = runner.prefill(
            [rows[i] for i in joining], [served[i] for i in joining], "generate", keep_cache=True
        )
        assert joined is not None
        for i in joining:
            runner.tree.pin(served[i], -1)
            if self.speculate:
                self.drafters[i] = Drafter(rows[i])
        runner.tree.evict()
        if self.batch is None:
            self.batch = joined
        else:
            self.batch.extend(joined)
        parts.append(logits)
        live.extend(joining)
        if self.constraint is not None:
            self.constraint.add(len(joining))
        if self.sampler is not None:
            self.sampler.add([self.seeds[i] for i in joining])

    def _pick(self, parts: list[Any], scored: int) -> None:
        """Each live row from the `scored`-th on takes its next token from this step's logits (`parts`),
        through the grammar mask, then greedy argmax or the seeded sampler."""
        constraint, sampler = self.constraint, self.sampler
        live, drafters = self.live, self.drafters
        # float32 as transformers' generate does before its processors: the sampler's softmax and
        # cumulative sums need it, and a bfloat16 argmax picks the same token.
        scores = self.torch.cat(parts).float()
        which = list(range(scored, len(live)))
        if constraint is not None:
            scores = constraint.mask(scores, rows=which)
        picked = (sampler(scores, rows=which) if sampler is not None else scores.argmax(dim=-1)).tolist()
        ended = constraint.accept(picked, rows=which) if constraint is not None else [False] * len(which)
        for j, token, grammar_end in zip(which, picked, ended, strict=True):
            self.take(live[j], token, grammar_end)
            if drafters[live[j]] is not None:
                drafters[live[j]].extend([token])  # type: ignore[union-attr]

    def _retire(self, keep: list[int]) -> None:
        """The rows that ended leave the batch: their KV rows, grammar and sampler state go, and their
        prompt plus cap tokens go back to the token budget; `keep` are the batch rows that go on."""
        live, reasons = self.live, self.reasons
        rows, caps = self.rows, self.caps
        self.held -= sum(len(rows[r]) + caps[r] for r in live if reasons[r])
        if self.constraint is not None:
            self.constraint.keep(keep)
        if self.sampler is not None:
            self.sampler.keep(keep)
        self.live = [live[j] for j in keep]
        if not keep:
            self.batch = None
            return
        assert self.batch is not None
        self.batch.select(self.torch.tensor(keep, device=self.runner.device.torch_device))


def _verify(
    runner: Runner,
    what: str,
    live: list[int],
    last: Any,
    drafts: list[list[int]],
    batch: Batch,
    constraint: GrammarMask | None,
    sampler: SeededSampler | None,
    take: Callable[[int, int, bool], str],
) -> None:
    """One step over every live row's last token and its draft: each row takes its token at each column
    (greedy, or sampled with its next random number), in order, while it equals the draft's next one
    (see `speculate`)."""
    import torch

    width = 1 + max(len(d) for d in drafts)
    inputs = torch.full((len(live), width), runner.pad_id, dtype=torch.long)
    valid = torch.zeros((len(live), width), dtype=torch.long)
    for j, d in enumerate(drafts):
        inputs[j, 0] = last[j]
        inputs[j, 1 : 1 + len(d)] = torch.tensor(d, dtype=torch.long)
        valid[j, : 1 + len(d)] = 1
    dev = runner.device.torch_device
    logits = runner.verify_step(what, inputs.to(dev), valid.to(dev), batch).float()
    kept = []
    for j, (r, d) in enumerate(zip(live, drafts, strict=True)):
        k = 0
        while True:
            scores = logits[j, k : k + 1]
            if constraint is not None:
                scores = constraint.mask(scores, rows=[j])
            token = int(sampler(scores, rows=[j])[0] if sampler is not None else scores.argmax(dim=-1))
            grammar_end = constraint.accept([token], rows=[j])[0] if constraint is not None else False
            ended = take(r, token, grammar_end)
            k += 1
            if ended or k > len(d) or token != d[k - 1]:
                break
        kept.append(k)
    runner.keep_verified(batch, torch.tensor(kept, device=dev), width)
