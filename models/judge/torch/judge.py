"""`TorchJudge`: a judge LLM run with transformers on an Ascend NPU, a CUDA GPU or the CPU.

Requests are rendered with the tokenizer's chat template, sorted longest first, cut into batches by a
padded-token budget, left-padded and run; results come back in input order. `classify` answers from the
next-token distribution of one forward pass. `generate` runs its own decode loop over a KV cache: greedy
(or seeded sampling), stop strings, and output constrained to a JSON schema with xgrammar, the grammar
engine vLLM uses; a row that finishes leaves the batch, so later steps compute only the rows still
decoding. In both, when the rows of a batch share a long prompt prefix (a prompt's instruction and few-shot
examples), that prefix runs once and its KV cache serves every row.

torch, transformers and xgrammar are imported when a judge is built, not when this module is imported.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from ascend_eval.models.base import (
    ClassifyRequest,
    ClassifyResult,
    GenerateRequest,
    GenerateResult,
    GenerationParams,
)
from ascend_eval.models.batching import batches_by_budget, longest_first, scatter
from ascend_eval.models.device import DeviceInfo, resolve_device
from ascend_eval.models.errors import BackendError, ConfigError, MissingDependencyError
from ascend_eval.models.judge.base import LabelIds, TokenJudge
from ascend_eval.models.judge.torch.config import TorchJudgeConfig, cache_param, forward_params, import_engine
from ascend_eval.models.judge.torch.plan import (
    common_prefix_len,
    prefix_groups,
    shared_prefix_batches,
    usable_prefix,
)
from ascend_eval.models.judge.torch.processors import GrammarMask, SeededSampler, first_stop

if TYPE_CHECKING:
    import torch

__all__ = ["TorchJudge"]

log = logging.getLogger(__name__)

_PREFIX_GROUP_TOKENS = 64
"""`classify` batches together rows whose first this-many tokens agree, so that a batch's rows share one
prompt's instruction rather than only the chat template's preamble (24 tokens for SmolLM2)."""


class TorchJudge(TokenJudge):
    """A judge LLM on transformers, implementing the `Judge` protocol. The checkpoint, `model_id`,
    tokenizer, chat rendering, label tokens and length limits are `TokenJudge`'s.

    Args:
        config: what to load and how to batch.

    Attributes:
        device: where the model runs.
        max_model_len: the effective limit on prompt plus output tokens (None: unlimited).
        forward_batches: how many model forward calls have run so far: per batch, one over the prompts (two
            when its rows share a prompt prefix), then for `generate` one per decode step, that is per
            token after the first of the batch's longest answer; for logs and tests.
        decode_row_steps: rows computed by `generate`'s decode steps so far, summed over steps. A row leaves
            the batch when it finishes, so each request adds its completion tokens less one (its first
            token comes from the prompt pass), however long the other answers of its batch are.
        prefix_tokens_reused: how many prompt tokens were not recomputed because a batch's rows shared them
            (rows - 1 times the shared prefix, summed over batches).

    Raises:
        ConfigError: a setting is invalid for this model.
        MissingDependencyError: torch, transformers (or, for GGUF, gguf/accelerate) is missing.
        BackendError: the checkpoint cannot be loaded.
    """

    def __init__(self, config: TorchJudgeConfig) -> None:
        torch, transformers = import_engine()
        self.config = config
        self.device: DeviceInfo = resolve_device(config.device)
        super().__init__(config.model, trust_remote_code=config.trust_remote_code)
        path = self.checkpoint
        dtype_name = self.device.default_dtype if config.dtype == "auto" else config.dtype
        self.dtype = getattr(torch, dtype_name)
        started = time.perf_counter()
        try:
            self.model = transformers.AutoModelForCausalLM.from_pretrained(
                path,
                dtype=self.dtype,
                local_files_only=True,
                trust_remote_code=config.trust_remote_code,
            ).to(self.device.torch_device)
        except (OSError, ValueError) as e:
            raise BackendError(f"Could not load the judge checkpoint '{path}': {e}") from e
        self.model.eval()
        log.info(
            "Loaded judge %s on %s as %s in %.1f s.",
            self.model_id,
            self.device.describe(),
            dtype_name,
            time.perf_counter() - started,
        )

        tok = self.tokenizer
        self.eos_ids = self._eos_ids()
        if tok.pad_token_id is None:
            tok.pad_token = tok.convert_ids_to_tokens(self.eos_ids[0])
        tok.padding_side = "left"
        self.pad_id: int = int(tok.pad_token_id)

        limit = getattr(self.model.config, "max_position_embeddings", None)
        if config.max_model_len is not None and limit is not None and config.max_model_len > limit:
            raise ConfigError(
                f"max_model_len={config.max_model_len} exceeds the model's max_position_embeddings={limit}. "
                f"Use max_model_len <= {limit} or None."
            )
        self.max_model_len = config.max_model_len or limit
        self.forward_batches = 0
        self.decode_row_steps = 0
        self.prefix_tokens_reused = 0
        self._keeps_last_logits = "logits_to_keep" in forward_params(self.model)
        self._decode_cache_kwarg = cache_param(self.model)
        self._shares_prefix = self._can_share_prefix()
        self._grammar_compiler: Any = None

    # ------------------------------------------------------------------ shared helpers

    def _eos_ids(self) -> tuple[int, ...]:
        """Every token that ends an answer: the tokenizer's EOS plus the checkpoint's generation EOS list."""
        ids: list[int] = []
        candidates = [
            self.tokenizer.eos_token_id,
            getattr(self.model.generation_config, "eos_token_id", None),
        ]
        for c in candidates:
            for i in c if isinstance(c, (list, tuple)) else [c]:
                if i is not None and int(i) not in ids:
                    ids.append(int(i))
        if not ids:
            raise ConfigError(
                f"The judge checkpoint '{self.checkpoint}' defines no EOS token, so generation could never "
                "stop. Set eos_token in its tokenizer_config.json."
            )
        return tuple(ids)

    def _can_share_prefix(self) -> bool:
        """Whether a batch's rows may run a shared prompt prefix once and expand its KV cache to every row.

        Sharing needs every layer's cache to be transformers' plain `DynamicLayer`: full attention whose
        `update` concatenates new keys onto the cached ones. Sliding-window, chunked and recurrent layers
        keep other state, for which the prefix's cache could not simply be expanded to the batch.
        """
        if self._decode_cache_kwarg is None:
            return False
        try:
            from transformers.cache_utils import DynamicLayer

            layers = self._new_cache().layers
        except Exception:  # an older or unusual cache API: keep the plain path rather than guess
            return False
        return bool(layers) and all(type(layer) is DynamicLayer for layer in layers)

    def _left_pad(self, rows: Sequence[Sequence[int]]) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
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

    def _min_shared_prefix(self) -> int:
        """`min_shared_prefix`, or 0 (no sharing) where the model's cache cannot be shared."""
        return self.config.min_shared_prefix if self._shares_prefix else 0

    def _new_cache(self) -> Any:
        """An empty KV cache of the kind the model would build itself (so generation matches its own)."""
        from transformers.cache_utils import DynamicCache

        return DynamicCache(config=self.model.config)

    def _forward(
        self, what: str, ids: torch.Tensor, mask: torch.Tensor, positions: torch.Tensor, cache: Any
    ) -> torch.Tensor:
        """One model call over `ids` `[B, T]`, appending to `cache` (None: keep no cache).

        Returns:
            `[B, V]` logits after each row's last column (left padding puts every row's last real token
            there); only that column goes through the lm_head where the model allows it.
        """
        kwargs: dict[str, Any] = {"logits_to_keep": 1} if self._keeps_last_logits else {}
        if cache is None:
            kwargs["use_cache"] = False
        else:
            # Set wherever a cache is made: `generate` checks it first, `classify` shares only with it.
            kwargs[self._decode_cache_kwarg] = cache  # type: ignore[index]
            kwargs["use_cache"] = True
        try:
            out = self.model(input_ids=ids, attention_mask=mask, position_ids=positions, **kwargs)
        except Exception as e:
            raise self._batch_error(what, ids, e) from e
        self.forward_batches += 1
        return out.logits[:, -1, :]

    def prefix_cuts(self, rows: list[list[int]]) -> list[int] | None:
        """For `_prefill`: how many leading tokens of each row run once per distinct prefix, or None to
        run whole prompts in one pass.

        Rows are grouped by their first tokens as in `classify` (say the zh and the en prompt of one
        family); a group shares its common prefix when that reaches `min_shared_prefix`, other rows cut
        nothing. Two passes are taken only when they compute fewer padded tokens than one and hold the KV
        cache no wider than one would (a short prefix before a long suffix of another row would widen it).
        """
        min_shared = self._min_shared_prefix()
        if min_shared == 0 or len(rows) < 2:
            return None
        cuts = [0] * len(rows)
        for group in prefix_groups(range(len(rows)), rows, max(_PREFIX_GROUP_TOKENS, min_shared)):
            members = [rows[j] for j in group]
            common = min(common_prefix_len(members[0], r) for r in members)
            shared = usable_prefix(common, min(len(r) for r in members), len(members), min_shared)
            for j in group:
                cuts[j] = shared
        heads = {tuple(r[:c]) for r, c in zip(rows, cuts, strict=True) if c}
        head_width = max(cuts)
        tail_width = max(len(r) - c for r, c in zip(rows, cuts, strict=True))
        width = max(len(r) for r in rows)
        if not heads or head_width + tail_width > width:
            return None
        return cuts if len(heads) * head_width + len(rows) * tail_width < len(rows) * width else None

    def _prefill(
        self, rows: list[list[int]], cuts: list[int] | None, cache: Any, what: str
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """Run the prompts, left-padded, into `cache`; with `cuts`, each distinct prefix `row[:cut]` first
        runs once (one row per prefix), its KV cache is laid out per row, and a second pass runs the rest.

        Args:
            rows: each prompt's token ids.
            cuts: per row, how many leading tokens belong to a prefix that rows share (0: none, the row runs
                whole in the second pass), at most its length less one; then `cache` must be a cache of
                plain `DynamicLayer`s, as `_can_share_prefix` checks. None runs whole prompts in one pass.
            cache: an empty KV cache to fill, or None to keep none.
            what: names the batch in error messages.

        Returns:
            logits `[B, V]` after each whole prompt; the attention mask `[B, T]` long over what `cache`
            now holds (0 on padding); and each row's next position `[B]` long (its prompt length).
        """
        import torch

        dev = self.device.torch_device
        if cuts is None:
            ids, mask, positions = self._left_pad(rows)
            return self._forward(what, ids, mask, positions, cache), mask, positions[:, -1] + 1

        index: dict[tuple[int, ...], int] = {}
        for r, c in zip(rows, cuts, strict=True):
            if c:
                index.setdefault(tuple(r[:c]), len(index))
        heads = list(index)
        ids, head_mask, positions = self._left_pad(heads)
        self._forward(
            f"{what} (shared prefixes of up to {max(cuts)} tokens)", ids, head_mask, positions, cache
        )
        # A row without a prefix borrows the first one's keys, all masked out.
        owner = torch.tensor(
            [index.get(tuple(r[:c]), 0) for r, c in zip(rows, cuts, strict=True)], device=dev
        )
        for layer in cache.layers:
            if len(heads) == 1:
                # A view, not a copy: DynamicLayer.update concatenates the suffix's keys onto the cached ones
                # with torch.cat, which reads a stride-0 batch dimension like any other, so the prefix is
                # written out per row only inside the concatenation that happens anyway.
                layer.keys = layer.keys.expand(len(rows), -1, -1, -1)
                layer.values = layer.values.expand(len(rows), -1, -1, -1)
            else:
                layer.keys = layer.keys.index_select(0, owner)
                layer.values = layer.values.index_select(0, owner)
        cut = torch.tensor(cuts, device=dev).unsqueeze(1)
        head_mask = head_mask.index_select(0, owner) * (cut > 0)
        self.prefix_tokens_reused += sum(cuts) - sum(len(h) for h in heads)

        # The suffixes are left-padded, so the padding sits between each row's prefix and its suffix, masked
        # out, and every row's last real token is the batch's last column. Right padding would put it at a
        # different column per row, and `logits_to_keep` keeps the same columns for every row: reading them
        # would mean logits for rows x distinct suffix lengths x vocabulary, or calling the lm_head by hand
        # past model-specific logit scaling. With full attention only (see `_can_share_prefix`), masked keys
        # in the middle are as invisible as masked keys at the start.
        ids, mask, positions = self._left_pad([r[c:] for r, c in zip(rows, cuts, strict=True)])
        mask = torch.cat([head_mask, mask], dim=1)
        positions = positions + cut  # each suffix continues right after its prefix
        logits = self._forward(f"{what} (after shared prefixes)", ids, mask, positions, cache)
        return logits, mask, positions[:, -1] + 1

    # ------------------------------------------------------------------ classify

    def classify(self, requests: Sequence[ClassifyRequest]) -> list[ClassifyResult]:
        """Probabilities over each request's labels from one forward pass per batch.

        The chat is rendered with the assistant turn opened and `answer_prefix` appended; each label counts
        the next-token probability of its first token as it would follow the prompt, plus the variant with a
        leading space when that is a different token; the probabilities are normalised over the labels.

        Returns:
            One `ClassifyResult` per request, in input order; a prompt over `max_model_len` gets an error
            result of its own.

        Raises:
            ConfigError: two labels of a request start with the same token, so they cannot be told apart.
        """
        if not requests:
            return []
        prompts, label_ids = self.classify_prompts(requests)

        pieces: list[tuple[list[int], list[ClassifyResult]]] = []
        runnable: list[int] = []
        for i, (r, p) in enumerate(zip(requests, prompts, strict=True)):
            error = self.too_long(len(p), 0)
            if error is not None:
                pieces.append(([i], [ClassifyResult.failed(r.labels, error)]))
            else:
                runnable.append(i)
        lengths = [len(p) for p in prompts]
        reused_before = self.prefix_tokens_reused
        batches = self._classify_batches(runnable, prompts)
        for batch, shared in batches:
            probs = self._classify_batch([prompts[i] for i in batch], [label_ids[i] for i in batch], shared)
            results = [
                ClassifyResult(labels=requests[i].labels, probs=tuple(p), prompt_tokens=lengths[i])
                for i, p in zip(batch, probs, strict=True)
            ]
            pieces.append((batch, results))
        log.debug(
            "classify: %d requests in %d batches (%d sharing a prefix), %d prefix tokens reused.",
            len(requests),
            len(batches),
            sum(1 for _, shared in batches if shared),
            self.prefix_tokens_reused - reused_before,
        )
        return scatter(len(requests), pieces)

    def _classify_batches(self, runnable: list[int], prompts: list[list[int]]) -> list[tuple[list[int], int]]:
        """Cut the runnable requests into batches, each with the prefix length its rows share (0: none)."""
        lengths = [len(p) for p in prompts]
        budget, most = self.config.token_budget, self.config.max_batch_size
        min_shared = self._min_shared_prefix()
        if min_shared == 0:
            order = [runnable[j] for j in longest_first([lengths[i] for i in runnable])]
            return [
                (b, 0) for b in batches_by_budget(order, lengths, token_budget=budget, max_batch_size=most)
            ]
        batches: list[tuple[list[int], int]] = []
        for group in prefix_groups(runnable, prompts, max(_PREFIX_GROUP_TOKENS, min_shared)):
            batches.extend(
                shared_prefix_batches(
                    group, prompts, token_budget=budget, max_batch_size=most, min_shared=min_shared
                )
            )
        return batches

    def _classify_batch(
        self, rows: list[list[int]], label_ids: list[LabelIds], shared: int
    ) -> list[list[float]]:
        import torch

        from ascend_eval.kernels.label_softmax import label_id_matrix, label_softmax_native

        with self.device.inference_mode():
            # A cache only where a shared prefix must hand its keys to the suffix pass.
            cache = self._new_cache() if shared else None
            last, _, _ = self._prefill(rows, [shared] * len(rows) if shared else None, cache, "classify")
            probs: list[list[float]] = [[] for _ in rows]
            # Rows of one batch may ask about different label sets; run the op once per distinct set.
            groups: dict[tuple[tuple[int, ...], ...], list[int]] = {}
            for j, labels in enumerate(label_ids):
                groups.setdefault(labels, []).append(j)
            for labels, members in groups.items():
                index = torch.tensor(members, device=last.device)
                p = label_softmax_native(last.index_select(0, index), label_id_matrix(labels)).cpu()
                for j, row in zip(members, p.tolist(), strict=True):
                    probs[j] = row
        return probs

    # ------------------------------------------------------------------ generate

    def generate(self, requests: Sequence[GenerateRequest]) -> list[GenerateResult]:
        """Decode an answer for every request, batched by equal `GenerationParams`.

        Greedy when temperature is 0. With temperature > 0 each request samples from its own generator
        seeded with `params.seed`, so a request's text does not depend on which others share its batch
        (up to floating-point differences between batch shapes). Stop strings end the text and are cut
        from it; with `json_schema` the output is constrained by xgrammar to match the schema.

        Each batch runs its prompts once into a KV cache (a prefix its rows share, once), then decodes a
        token per live row per step; a row that ends leaves the batch, so a batch costs what its answers
        are long, not its rows times its longest answer.

        Returns:
            One `GenerateResult` per request, in input order. finish_reason is "length" when max_tokens (or
            max_model_len) was reached without EOS or a stop string, else "stop"; a prompt over
            `max_model_len` gets an error result of its own.

        Raises:
            ConfigError: a `json_schema` cannot be compiled, or the model takes no KV cache.
            BackendError: a batch failed in the model (e.g. out of memory: lower token_budget).
        """
        if not requests:
            return []
        if self._decode_cache_kwarg is None:
            raise ConfigError(
                f"Judge {self.model_id}: its forward() takes no KV cache (neither `cache` nor "
                "`past_key_values` with `use_cache`), which TorchJudge.generate decodes with. Use a "
                "transformers causal LM that does (transformers >= 4.56), or the vllm backend."
            )
        prompts = self.generate_prompts(requests)
        groups: dict[GenerationParams, list[int]] = {}
        for i, r in enumerate(requests):
            groups.setdefault(r.params, []).append(i)

        pieces: list[tuple[list[int], list[GenerateResult]]] = []
        for params, members in groups.items():
            grammar = self.compile_schema(params.json_schema) if params.json_schema is not None else None
            runnable: list[int] = []
            for i in members:
                error = self.too_long(len(prompts[i]), 1)
                if error is not None:
                    pieces.append(([i], [GenerateResult.failed(error)]))
                else:
                    runnable.append(i)
            caps = {i: self.new_token_cap(len(prompts[i]), params.max_tokens) for i in runnable}
            for batch in self._generate_batches(runnable, prompts, caps):
                results = self._generate_batch(
                    [prompts[i] for i in batch], [caps[i] for i in batch], params, grammar
                )
                pieces.append((batch, results))
        return scatter(len(requests), pieces)

    def compile_schema(self, schema_text: str) -> Any:
        """The xgrammar grammar `generate` constrains a `json_schema` request with: compact JSON, no free
        whitespace, over this tokenizer's vocabulary.

        Raises:
            MissingDependencyError: xgrammar is missing.
            ConfigError: xgrammar cannot compile the schema.
        """
        if self._grammar_compiler is None:
            try:
                import xgrammar
            except ImportError as e:
                raise MissingDependencyError(
                    f"Schema-constrained generation needs xgrammar ({e}). "
                    "Install it with `pip install xgrammar`."
                ) from e
            info = xgrammar.TokenizerInfo.from_huggingface(
                self.tokenizer, vocab_size=self.model.config.vocab_size, stop_token_ids=list(self.eos_ids)
            )
            # The compiler caches compiled grammars, so a schema used in every round compiles once.
            self._grammar_compiler = xgrammar.GrammarCompiler(info)
        try:
            # Compact JSON (no free whitespace): with any_whitespace a weak model can emit newlines until
            # max_tokens and never close the object.
            return self._grammar_compiler.compile_json_schema(schema_text, any_whitespace=False)
        except Exception as e:
            raise ConfigError(f"xgrammar cannot compile the json_schema {schema_text[:200]!r}: {e}") from e

    def _generate_batches(
        self, runnable: list[int], prompts: list[list[int]], caps: dict[int, int]
    ) -> list[list[int]]:
        """Cut the runnable requests longest first into batches by `token_budget`, each row counting its
        prompt plus its new-token cap (a shared prefix too: once decoding starts the cache holds it per row).

        Not grouped by prompt prefix as `classify` is: a batch decodes until its longest answer ends, so
        two batches cost two such tails, which on a CPU outweighs the prompt tokens that grouping saves.
        `_prefix_cuts` finds the prefixes a batch's rows share instead, several if need be.
        """
        # batches_by_budget indexes `lengths` by request position, so give it a dense list.
        lengths = [len(p) + caps.get(i, 0) for i, p in enumerate(prompts)]
        order = [runnable[j] for j in longest_first([lengths[i] for i in runnable])]
        return batches_by_budget(
            order, lengths, token_budget=self.config.token_budget, max_batch_size=self.config.max_batch_size
        )

    def _generate_batch(
        self, rows: list[list[int]], caps: list[int], params: GenerationParams, grammar: Any
    ) -> list[GenerateResult]:
        with self.device.inference_mode():
            decoded = self._decode(rows, caps, params, grammar)
        results = []
        for prompt, (tokens, reason) in zip(rows, decoded, strict=True):
            text = self.tokenizer.decode(tokens, skip_special_tokens=True)
            # Also where the cap came first: a stop string in the text still ends it.
            cut = first_stop(text, params.stop)
            if cut is not None:
                text, reason = text[:cut], "stop"
            results.append(
                GenerateResult(
                    text=text, finish_reason=reason, prompt_tokens=len(prompt), completion_tokens=len(tokens)
                )
            )
        return results

    def _decode(
        self, rows: list[list[int]], caps: list[int], params: GenerationParams, grammar: Any
    ) -> list[tuple[list[int], str]]:
        """Prefill the batch, then add a token per live row per step until every row has ended.

        A row ends at an EOS token (which it keeps, as transformers' `generate` does), when its grammar
        terminates, when its decoded text first shows a stop string, or at its cap ("length"). Its KV cache,
        mask, position and per-row state are then dropped from the batch, so later steps compute only the
        rows still going. Decoding reads nothing from the checkpoint's generation_config (which may carry
        sampling defaults): `params` are the only settings.

        Returns:
            Per row, its generated token ids and "stop" or "length".
        """
        import torch

        stops = [s for s in params.stop if s]
        eos = set(self.eos_ids)
        constraint = GrammarMask(grammar, len(rows)) if grammar is not None else None
        sampler = (
            None if params.greedy else SeededSampler(len(rows), params.seed, params.temperature, params.top_p)
        )
        tokens: list[list[int]] = [[] for _ in rows]
        reasons = [""] * len(rows)  # "" while the row is still decoding
        live = list(range(len(rows)))  # the row of `rows` behind each row of the running batch
        cache = self._new_cache()
        logits, mask, positions = self._prefill(rows, self.prefix_cuts(rows), cache, "generate")
        step = 0
        while True:
            # float32 as transformers' generate does before its processors: the sampler's softmax and
            # cumulative sums need it, and a bfloat16 argmax picks the same token.
            scores = logits.float()
            if constraint is not None:
                scores = constraint.mask(scores)
            chosen = sampler(scores) if sampler is not None else scores.argmax(dim=-1)
            picked = chosen.tolist()
            ended = constraint.accept(picked) if constraint is not None else [False] * len(live)
            for r, token, grammar_end in zip(live, picked, ended, strict=True):
                tokens[r].append(token)
                if token in eos or grammar_end:
                    reasons[r] = "stop"
                elif len(tokens[r]) >= caps[r]:
                    reasons[r] = "length"
            if stops:
                going = [r for r in live if not reasons[r]]
                # The whole text each time: a stop string may span tokens, and a token may end inside a
                # character that only the next one completes.
                texts = self.tokenizer.batch_decode([tokens[r] for r in going], skip_special_tokens=True)
                for r, text in zip(going, texts, strict=True):
                    if first_stop(text, stops) is not None:
                        reasons[r] = "stop"
            keep = [j for j, r in enumerate(live) if not reasons[r]]
            if not keep:
                break
            if len(keep) < len(live):
                index = torch.tensor(keep, device=mask.device)
                cache.batch_select_indices(index)
                mask, positions = mask.index_select(0, index), positions.index_select(0, index)
                chosen = chosen.index_select(0, index)
                live = [live[j] for j in keep]
                if constraint is not None:
                    constraint.keep(keep)
                if sampler is not None:
                    sampler.keep(keep)
            step += 1
            mask = torch.cat([mask, mask.new_ones((len(live), 1))], dim=1)
            logits = self._forward(
                f"generate (decode step {step})",
                chosen.unsqueeze(1),
                mask,
                positions.unsqueeze(1),
                cache,
            )
            positions = positions + 1
            self.decode_row_steps += len(live)
        return list(zip(tokens, reasons, strict=True))

    def _batch_error(self, what: str, ids: torch.Tensor, e: Exception) -> BackendError:
        rows, width = ids.shape
        return BackendError(
            f"Judge {self.model_id} failed on a {what} batch of {rows} rows x {width} tokens on "
            f"{self.device.describe()}: {type(e).__name__}: {e}. If it ran out of memory, lower token_budget "
            f"(now {self.config.token_budget}) or max_batch_size (now {self.config.max_batch_size})."
        )
