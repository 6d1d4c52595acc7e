"""`TorchJudge`: a judge LLM run with transformers on an Ascend NPU, a CUDA GPU or the CPU.

The facade over the planner (`plan`: a prefix tree over the prompts' token ids), the runner (`runner`:
prompt passes served from the tree's KV, decode steps) and the decode loop (`decode`: continuous batching,
with the grammar and sampler of `processors`). Requests are rendered with the tokenizer's chat template;
results come back in input order. `classify` answers from the next-token distribution after each prompt:
one prompt pass. `generate` decodes over a KV cache: greedy (or seeded sampling), stop strings, and output
constrained to a JSON schema with xgrammar, the grammar engine vLLM uses. In both, a run of prompt tokens
that several prompts share (a prompt's preamble; a sample's block) runs once and its KV cache serves every
prompt beneath it, and stays for later calls within `kv_cache_bytes`.

torch, transformers and xgrammar are imported when a judge is built, not when this module is imported.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from ascend_eval.models.base import (
    ClassifyRequest,
    ClassifyResult,
    GenerateRequest,
    GenerateResult,
    GenerationParams,
)
from ascend_eval.models.batching import longest_first, scatter
from ascend_eval.models.device import DeviceInfo, Precision, resolve_device
from ascend_eval.models.errors import BackendError, ConfigError, MissingDependencyError
from ascend_eval.models.judge.base import LabelIds, TokenJudge
from ascend_eval.models.judge.torch.config import TorchJudgeConfig, import_engine
from ascend_eval.models.judge.torch.decode import decode
from ascend_eval.models.judge.torch.plan import Node, batches_by_tails, prefix_cuts
from ascend_eval.models.judge.torch.processors import first_stop
from ascend_eval.models.judge.torch.runner import Runner
from ascend_eval.models.lazy import LazyJudge
from ascend_eval.models.registry import lazy_local, register
from ascend_eval.models.spec import ModelSpec

__all__ = ["TorchJudge", "build_torch_judge"]

log = logging.getLogger(__name__)


class TorchJudge(TokenJudge):
    """A judge LLM on transformers, implementing the `Judge` protocol. The checkpoint, `model_id`,
    tokenizer, chat rendering, label tokens and length limits are `TokenJudge`'s.

    Args:
        config: what to load and how to batch.

    Attributes:
        device: where the model runs.
        dtype: the torch dtype the model computes in (`config.dtype`, "auto" resolved by the device).
        precision: that dtype's name and why it was chosen.
        max_model_len: the effective limit on prompt plus output tokens (None: unlimited).
        runner: runs the model and holds the prefix tree.
        prefix_tokens_reused: prompt tokens not computed because their KV came from a shared or kept
            prefix: the prompt tokens of the calls so far less `computed_prompt_tokens`.

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
        chosen = Precision(config.dtype, f"dtype={config.dtype!r} was set")
        self.precision = self.device.precision() if config.dtype == "auto" else chosen
        dtype_name = self.precision.dtype
        self.dtype = getattr(torch, dtype_name)
        started = time.perf_counter()
        self.device.activate()  # the runtime's context on this device, not on device 0
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
        self.prefix_tokens_reused = 0
        self.runner = Runner(self.model, self.device, self.pad_id, config, self.model_id)
        self._grammar_compiler: Any = None
        self._lock = threading.Lock()

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

    # ------------------------------------------------------------------ statistics

    @property
    def forward_batches(self) -> int:
        """Model forward calls so far: prompt passes (one per tree level a batch needs computed, then one
        over the rows' own tokens) and decode steps; for logs and tests."""
        return self.runner.forward_batches

    @property
    def decode_row_steps(self) -> int:
        """Rows computed by `generate`'s decode steps so far, summed over steps: each request adds its
        completion tokens less one (its first token comes from its prompt pass)."""
        return self.runner.decode_row_steps

    @property
    def computed_prompt_tokens(self) -> int:
        """Prompt tokens actually run through the model so far (padding not counted): each shared prefix
        counts once, a prefix whose KV was kept from an earlier call not at all."""
        return self.runner.computed_prompt_tokens

    @property
    def kv_cache_tokens(self) -> int:
        """Prompt tokens whose KV the prefix tree holds now (kept for later calls)."""
        return self.runner.tree.kv_tokens

    def clear_prefix_cache(self) -> None:
        """Drop the KV kept between calls (e.g. at the end of a run)."""
        self.runner.tree.clear()

    def prefix_cuts(self, rows: list[list[int]]) -> list[int] | None:
        """How many leading tokens of each row a batch of `rows` alone would serve from a shared prefix's
        KV (0: none), or None where it would run them whole (see `plan.prefix_cuts`)."""
        return prefix_cuts(rows, self.runner.min_shared)

    def _plan(self, prompts: dict[int, list[int]]) -> dict[int, Node | None]:
        """Insert the call's prompts in the prefix tree; per prompt, the node whose KV serves it, pinned
        until its prompt has run."""
        tree = self.runner.tree
        if tree.min_shared == 0:
            return dict.fromkeys(prompts)
        for p in prompts.values():
            tree.insert(p[:-1])
        served = {i: tree.serving(p[:-1]) for i, p in prompts.items()}
        for node in served.values():
            tree.pin(node, 1)
        return served

    def _count_reuse(self, prompt_tokens: int, computed_before: int) -> int:
        reused = prompt_tokens - (self.runner.computed_prompt_tokens - computed_before)
        self.prefix_tokens_reused += reused
        return reused

    # ------------------------------------------------------------------ classify

    def classify(self, requests: Sequence[ClassifyRequest]) -> list[ClassifyResult]:
        """Probabilities over each request's labels from the logits after its prompt.

        The chat is rendered with the assistant turn opened and `answer_prefix` appended; each label counts
        the next-token probability of its first token as it would follow the prompt, plus the variant with a
        leading space when that is a different token; the probabilities are normalised over the labels.
        Requests served by the same shared prefix are batched together.

        Returns:
            One `ClassifyResult` per request, in input order; a prompt over `max_model_len` gets an error
            result of its own.

        Raises:
            ConfigError: two labels of a request start with the same token, so they cannot be told apart.
            BackendError: a batch failed in the model (e.g. out of memory: lower token_budget).
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
        # One call at a time: the calls share the prefix tree (and the model).
        with self._lock:
            computed = self.runner.computed_prompt_tokens
            try:
                served = self._plan({i: prompts[i] for i in runnable})
                batches = self._classify_batches(runnable, lengths, served)
                for batch in batches:
                    probs = self._classify_batch(
                        [prompts[i] for i in batch], [served[i] for i in batch], [label_ids[i] for i in batch]
                    )
                    results = [
                        ClassifyResult(labels=requests[i].labels, probs=tuple(p), prompt_tokens=lengths[i])
                        for i, p in zip(batch, probs, strict=True)
                    ]
                    pieces.append((batch, results))
            finally:
                self.runner.tree.end_call()
            reused = self._count_reuse(sum(lengths[i] for i in runnable), computed)
        log.debug(
            "classify: %d requests in %d batches, %d prompt tokens reused.",
            len(requests),
            len(batches),
            reused,
        )
        return scatter(len(requests), pieces)

    def _classify_batches(
        self, runnable: list[int], lengths: list[int], served: dict[int, Node | None]
    ) -> list[list[int]]:
        """Requests served by one node together (groups by their longest prompt, longest first; so a batch
        that runs out of memory still does so first), cut by `token_budget` counting the prefix once."""
        groups: dict[int, list[int]] = {}
        for i in runnable:
            groups.setdefault(id(served[i]), []).append(i)
        ordered = [[g[j] for j in longest_first([lengths[i] for i in g])] for g in groups.values()]
        ordered.sort(key=lambda g: -lengths[g[0]])
        order = [i for g in ordered for i in g]
        cuts = [0] * len(lengths)
        for i in runnable:
            node = served[i]
            cuts[i] = 0 if node is None else node.end
        return batches_by_tails(
            order,
            cuts,
            lengths,
            token_budget=self.config.token_budget,
            max_batch_size=self.config.max_batch_size,
        )

    def _classify_batch(
        self, rows: list[list[int]], served: list[Node | None], label_ids: list[LabelIds]
    ) -> list[list[float]]:
        import torch

        from ascend_eval.kernels.label_softmax import label_id_matrix, label_softmax_native

        with self.device.inference_mode():
            last, _ = self.runner.prefill(rows, served, "classify", keep_cache=False)
            for node in served:
                self.runner.tree.pin(node, -1)
            self.runner.tree.evict()
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

    def generate(self, requests: Sequence[GenerateRequest]) -> list[GenerateResult]:
        """Decode an answer for every request; those whose params differ only in cap or seed batch together.

        Greedy when temperature is 0. With temperature > 0 each request samples from its own generator
        seeded with `params.seed`, so a request's text does not depend on which others share its batch
        (up to floating-point differences between batch shapes). Stop strings end the text and are cut
        from it; with `json_schema` the output is constrained by xgrammar to match the schema.

        Rows decode together with continuous batching (see `decode`): a row that ends leaves the batch and
        a waiting row's prompt runs and joins it, so the batch stays full and a request costs what its own
        answer is long.

        Returns:
            One `GenerateResult` per request, in input order. finish_reason is "length" when max_tokens (or
            max_model_len) was reached without EOS or a stop string, "repetition" when the loop guard
            stopped a row that kept repeating itself (`TorchJudgeConfig.loop_guard`), else "stop"; a prompt
            over `max_model_len` gets an error result of its own.

        Raises:
            ConfigError: a `json_schema` cannot be compiled, or the model takes no KV cache.
            BackendError: a batch failed in the model (e.g. out of memory: lower token_budget).
        """
        if not requests:
            return []
        if self.runner.cache_kwarg is None:
            raise ConfigError(
                f"Judge {self.model_id}: its forward() takes no KV cache (neither `cache` nor "
                "`past_key_values` with `use_cache`), which TorchJudge.generate decodes with. Use a "
                "transformers causal LM that does (transformers >= 4.56), or the vllm backend."
            )
        prompts = self.generate_prompts(requests)
        # One decode loop per kind of decoding; each row keeps its own cap and seed.
        groups: dict[GenerationParams, list[int]] = {}
        for i, r in enumerate(requests):
            groups.setdefault(replace(r.params, max_tokens=1, seed=0), []).append(i)

        pieces: list[tuple[list[int], list[GenerateResult]]] = []
        runnable: dict[GenerationParams, list[int]] = {}
        for params, members in groups.items():
            for i in members:
                error = self.too_long(len(prompts[i]), 1)
                if error is not None:
                    pieces.append(([i], [GenerateResult.failed(error)]))
                else:
                    runnable.setdefault(params, []).append(i)
        with self._lock:  # one call at a time: the calls share the prefix tree (and the model)
            computed = self.runner.computed_prompt_tokens
            try:
                grammars = {
                    p: self.compile_schema(p.json_schema) for p in runnable if p.json_schema is not None
                }
                served = self._plan({i: prompts[i] for members in runnable.values() for i in members})
                for params, members in runnable.items():
                    caps = {
                        i: self.new_token_cap(len(prompts[i]), requests[i].params.max_tokens) for i in members
                    }
                    # Longest first (prompt plus cap), so that a row that runs out of memory does so first.
                    order = [members[j] for j in longest_first([len(prompts[i]) + caps[i] for i in members])]
                    with self.device.inference_mode():
                        decoded = decode(
                            self.runner,
                            self.tokenizer,
                            set(self.eos_ids),
                            [prompts[i] for i in order],
                            [served[i] for i in order],
                            [caps[i] for i in order],
                            params,
                            grammars.get(params),
                            [requests[i].params.seed for i in order],
                        )
                    pieces.append(
                        (
                            order,
                            [
                                self._result(prompts[i], d, params)
                                for i, d in zip(order, decoded, strict=True)
                            ],
                        )
                    )
            finally:
                self.runner.tree.end_call()
            self._count_reuse(sum(len(prompts[i]) for m in runnable.values() for i in m), computed)
        return scatter(len(requests), pieces)

    def _result(
        self, prompt: list[int], decoded: tuple[list[int], str], params: GenerationParams
    ) -> GenerateResult:
        tokens, reason = decoded
        text = self.tokenizer.decode(tokens, skip_special_tokens=True)
        # Also where the cap came first: a stop string in the text still ends it.
        cut = first_stop(text, params.stop)
        if cut is not None:
            text, reason = text[:cut], "stop"
        return GenerateResult(
            text=text,
            finish_reason=reason,
            prompt_tokens=len(prompt),
            completion_tokens=len(tokens),  # type: ignore[arg-type]
        )

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


@register("judge", "torch")
def build_torch_judge(spec: ModelSpec) -> LazyJudge:
    """A local judge on the torch runtime, loaded on its first request."""
    return lazy_local(spec, LazyJudge, TorchJudgeConfig, TorchJudge)
