"""`TorchJudge`: a judge LLM run with transformers on an Ascend NPU, a CUDA GPU or the CPU.

Requests are rendered with the tokenizer's chat template, sorted longest first, cut into batches by a
padded-token budget, left-padded and run; results come back in input order. `classify` answers from the
next-token distribution of one forward pass; when the rows of a batch share a long prompt prefix (a prompt's
instruction and few-shot examples), that prefix runs once and its KV cache serves every row. `generate`
decodes greedily (or with seeded sampling), honours stop strings, and constrains output to a JSON schema with
xgrammar, the grammar engine vLLM uses.

torch, transformers and xgrammar are imported when a judge is built, not when this module is imported.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
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
from ascend_eval.models.judge.chat import ChatRenderer
from ascend_eval.models.paths import local_model_id

if TYPE_CHECKING:
    import torch

__all__ = ["TorchJudge", "TorchJudgeConfig"]

log = logging.getLogger(__name__)

_DTYPES = ("auto", "float32", "bfloat16", "float16")
_LABEL_CONTEXT_CHARS = 32
"""How much of the prompt's end is re-tokenised to see how a label's first token joins the prompt."""
_PREFIX_GROUP_TOKENS = 64
"""`classify` batches together rows whose first this-many tokens agree, so that a batch's rows share one
prompt's instruction rather than only the chat template's preamble (24 tokens for SmolLM2)."""


@dataclass(frozen=True)
class TorchJudgeConfig:
    """How to build a `TorchJudge`."""

    model: str | Path
    """A local Hugging Face checkpoint directory, or a `.gguf` file (converted once to a cached checkpoint
    by `checkpoint_from_gguf`). Nothing is downloaded."""
    device: str | None = None
    """"auto", "cpu", "cuda[:N]" or "npu[:N]"; None defers to `ASCEND_EVAL_DEVICE`, then auto-detection."""
    dtype: str = "auto"
    """"auto" (bfloat16 on NPU and CUDA, float32 on the CPU), "float32", "bfloat16" or "float16"."""
    token_budget: int = 16384
    """Padded tokens per forward batch (rows x longest row). For `generate` a row counts its prompt plus
    its `max_tokens`, which bounds the batch's KV cache. A `classify` batch that shares a prompt prefix
    counts it once (prefix + rows x longest suffix), though its KV cache still holds rows x full length.
    Lower it if a batch runs out of memory."""
    max_batch_size: int = 64
    """Most rows in one batch, whatever the budget."""
    max_model_len: int | None = None
    """Longest prompt plus output, in tokens; None means the model's `max_position_embeddings`. A prompt
    that does not fit fails alone (with an error in its result); generation stops there with "length"."""
    trust_remote_code: bool = False
    """Allow a checkpoint's own Python code to run (transformers' `trust_remote_code`)."""
    min_shared_prefix: int = 32
    """Fewest prompt tokens the rows of a `classify` batch must share for that prefix to run once, its KV
    cache expanded to every row; 0 turns prefix sharing off. Below it the extra forward call costs more than
    the rows save."""

    def __post_init__(self) -> None:
        path = Path(self.model).expanduser()
        if path.suffix.lower() == ".gguf":
            if not path.is_file():
                raise ConfigError(f"TorchJudgeConfig.model='{self.model}': no such GGUF file.")
        elif not (path / "config.json").is_file():
            raise ConfigError(
                f"TorchJudgeConfig.model='{self.model}' is neither a .gguf file nor a checkpoint directory "
                "with a config.json. Pass a local directory (nothing is downloaded) or a .gguf file."
            )
        if self.dtype not in _DTYPES:
            raise ConfigError(f"TorchJudgeConfig.dtype={self.dtype!r} is not one of {list(_DTYPES)}.")
        if self.token_budget < 1:
            raise ConfigError(f"TorchJudgeConfig.token_budget must be >= 1, got {self.token_budget}.")
        if self.max_batch_size < 1:
            raise ConfigError(f"TorchJudgeConfig.max_batch_size must be >= 1, got {self.max_batch_size}.")
        if self.min_shared_prefix < 0:
            raise ConfigError(
                f"TorchJudgeConfig.min_shared_prefix must be >= 0 (0 turns prefix sharing off), "
                f"got {self.min_shared_prefix}."
            )
        if self.max_model_len is not None and self.max_model_len < 2:
            raise ConfigError(
                f"TorchJudgeConfig.max_model_len must be >= 2 or None, got {self.max_model_len}."
            )


def _import_engine() -> tuple[Any, Any]:
    try:
        import torch
        import transformers
    except ImportError as e:
        raise MissingDependencyError(
            f"TorchJudge needs torch and transformers ({e}). Install them with "
            "`pip install 'ascend-eval[torch]'` and the torch build for your accelerator."
        ) from e
    return torch, transformers


class TorchJudge:
    """A judge LLM on transformers, implementing the `Judge` protocol.

    Args:
        config: what to load and how to batch.

    Attributes:
        model_id: the checkpoint's directory name plus a short content hash (see `paths.local_model_id`).
        device: where the model runs.
        max_model_len: the effective limit on prompt plus output tokens (None: unlimited).
        forward_batches: how many model calls have run so far (one forward pass per `classify` batch, two
            when its rows share a prompt prefix; one `model.generate` call per `generate` batch); for logs
            and tests.
        prefix_tokens_reused: how many prompt tokens `classify` did not recompute because a batch's rows
            shared them (rows - 1 times the shared prefix, summed over batches).

    Raises:
        ConfigError: a setting is invalid for this model.
        MissingDependencyError: torch, transformers (or, for GGUF, gguf/accelerate) is missing.
        BackendError: the checkpoint cannot be loaded.
    """

    def __init__(self, config: TorchJudgeConfig) -> None:
        torch, transformers = _import_engine()
        from ascend_eval.kernels.label_softmax import LabelSoftmax

        self.config = config
        self.device: DeviceInfo = resolve_device(config.device)
        path = Path(config.model).expanduser()
        if path.suffix.lower() == ".gguf":
            from ascend_eval.models.judge.gguf import checkpoint_from_gguf

            path = checkpoint_from_gguf(path)
        self.checkpoint = path
        self.model_id = local_model_id(path)
        dtype_name = self.device.default_dtype if config.dtype == "auto" else config.dtype
        self.dtype = getattr(torch, dtype_name)

        started = time.perf_counter()
        try:
            self.tokenizer = transformers.AutoTokenizer.from_pretrained(
                path, local_files_only=True, trust_remote_code=config.trust_remote_code
            )
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
        # Start from a clean generation config: a checkpoint's generation_config.json may carry sampling
        # defaults (temperature, top_p, repetition_penalty) that transformers would silently merge into every
        # call, and our GenerationParams must be the only source of decoding settings.
        self.model.generation_config = transformers.GenerationConfig(
            bos_token_id=tok.bos_token_id, eos_token_id=list(self.eos_ids), pad_token_id=self.pad_id
        )

        limit = getattr(self.model.config, "max_position_embeddings", None)
        if config.max_model_len is not None and limit is not None and config.max_model_len > limit:
            raise ConfigError(
                f"max_model_len={config.max_model_len} exceeds the model's max_position_embeddings={limit}. "
                f"Use max_model_len <= {limit} or None."
            )
        self.max_model_len: int | None = config.max_model_len or limit
        self.chat = ChatRenderer(tok)
        self.label_softmax = LabelSoftmax(self.device.type)
        self.forward_batches = 0
        self.prefix_tokens_reused = 0
        self._keeps_last_logits = "logits_to_keep" in _forward_params(self.model)
        self._cache_kwarg = self._prefix_cache_kwarg()
        self._label_cache: dict[tuple[str, str], tuple[int, ...]] = {}
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

    def _prefix_cache_kwarg(self) -> str | None:
        """The forward argument that takes a KV cache, or None where `classify` cannot share prefixes.

        Sharing needs every layer's cache to be transformers' plain `DynamicLayer`: full attention whose
        `update` concatenates new keys onto the cached ones. Sliding-window, chunked and recurrent layers
        keep other state, for which the prefix's cache could not simply be expanded to the batch.
        """
        params = _forward_params(self.model)
        # transformers 5 renamed `past_key_values` to `cache`; older releases (>= 4.56) take the old name.
        name = next((n for n in ("cache", "past_key_values") if n in params), None)
        if name is None or "use_cache" not in params:
            return None
        try:
            from transformers.cache_utils import DynamicCache, DynamicLayer

            layers = DynamicCache(config=self.model.config).layers
        except Exception:  # an older or unusual cache API: keep the plain path rather than guess
            return None
        if not layers or any(type(layer) is not DynamicLayer for layer in layers):
            return None
        return name

    def _encode_prompts(self, texts: Sequence[str]) -> list[list[int]]:
        enc = self.tokenizer(list(texts), add_special_tokens=self.chat.add_special_tokens)
        return [list(ids) for ids in enc["input_ids"]]

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

    def _too_long(self, n_tokens: int, room: int) -> str | None:
        if self.max_model_len is not None and n_tokens + room > self.max_model_len:
            need = "" if room == 0 else f" plus at least {room} generated token"
            return (
                f"The prompt has {n_tokens} tokens{need}, over max_model_len={self.max_model_len} of judge "
                f"{self.model_id}. Shorten the inputs (e.g. fewer or shorter contexts) or raise "
                "max_model_len."
            )
        return None

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
        texts = [self.chat.render(r.messages) + r.answer_prefix for r in requests]
        prompts = self._encode_prompts(texts)
        label_ids = [self._label_matrix(t, r.labels) for t, r in zip(texts, requests, strict=True)]

        pieces: list[tuple[list[int], list[ClassifyResult]]] = []
        runnable: list[int] = []
        for i, (r, p) in enumerate(zip(requests, prompts, strict=True)):
            error = self._too_long(len(p), 0)
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
        min_shared = self.config.min_shared_prefix if self._cache_kwarg is not None else 0
        if min_shared == 0:
            order = [runnable[j] for j in longest_first([lengths[i] for i in runnable])]
            return [
                (b, 0) for b in batches_by_budget(order, lengths, token_budget=budget, max_batch_size=most)
            ]
        batches: list[tuple[list[int], int]] = []
        for group in _prefix_groups(runnable, prompts, max(_PREFIX_GROUP_TOKENS, min_shared)):
            batches.extend(
                _shared_prefix_batches(
                    group, prompts, token_budget=budget, max_batch_size=most, min_shared=min_shared
                )
            )
        return batches

    def _classify_batch(
        self, rows: list[list[int]], label_ids: list[tuple[tuple[int, ...], ...]], shared: int
    ) -> list[list[float]]:
        import torch

        with self.device.inference_mode():
            last = self._shared_last_logits(rows, shared) if shared else self._last_logits(rows)
            probs: list[list[float]] = [[] for _ in rows]
            # Rows of one batch may ask about different label sets; run the op once per distinct set.
            groups: dict[tuple[tuple[int, ...], ...], list[int]] = {}
            for j, labels in enumerate(label_ids):
                groups.setdefault(labels, []).append(j)
            for labels, members in groups.items():
                width = max(len(t) for t in labels)
                matrix = torch.tensor([[*t, *([-1] * (width - len(t)))] for t in labels], dtype=torch.long)
                index = torch.tensor(members, device=last.device)
                p = self.label_softmax(last.index_select(0, index), matrix.to(last.device)).cpu()
                for j, row in zip(members, p.tolist(), strict=True):
                    probs[j] = row
        return probs

    def _last_logits(self, rows: list[list[int]]) -> torch.Tensor:
        """`[B, V]` next-token logits after each whole prompt, from one left-padded forward pass."""
        ids, mask, positions = self._left_pad(rows)
        extra = {"logits_to_keep": 1} if self._keeps_last_logits else {}
        try:
            out = self.model(
                input_ids=ids, attention_mask=mask, position_ids=positions, use_cache=False, **extra
            )
        except Exception as e:
            raise self._batch_error("classify", ids, e) from e
        self.forward_batches += 1
        return out.logits[:, -1, :]  # left padding puts every row's last real token at -1

    def _shared_last_logits(self, rows: list[list[int]], shared: int) -> torch.Tensor:
        """`[B, V]` next-token logits after each prompt, whose first `shared` tokens are the same in every
        row: that prefix runs once (batch 1) into a KV cache, which is expanded to the batch for a second
        pass over the suffixes."""
        import torch
        from transformers.cache_utils import DynamicCache

        dev = self.device.torch_device
        cache = DynamicCache(config=self.model.config)
        # Set: `_classify_batches` shares a prefix only where the model takes a cache.
        with_cache: dict[str, Any] = {self._cache_kwarg: cache, "use_cache": True}  # type: ignore[dict-item]
        if self._keeps_last_logits:
            with_cache["logits_to_keep"] = 1  # only the suffixes' last column is read, never the prefix's
        prefix = torch.tensor([rows[0][:shared]], dtype=torch.long, device=dev)
        try:
            self.model(
                input_ids=prefix,
                attention_mask=torch.ones_like(prefix),
                position_ids=torch.arange(shared, device=dev).unsqueeze(0),
                **with_cache,
            )
        except Exception as e:
            raise self._batch_error(f"classify (shared prefix of {shared} tokens)", prefix, e) from e
        self.forward_batches += 1
        # A view, not a copy: DynamicLayer.update concatenates the suffix's keys onto the cached ones with
        # torch.cat, which reads a stride-0 batch dimension like any other, so the prefix is written out per
        # row only inside the concatenation that happens anyway (`_prefix_cache_kwarg` checked the layers).
        for layer in cache.layers:
            layer.keys = layer.keys.expand(len(rows), -1, -1, -1)
            layer.values = layer.values.expand(len(rows), -1, -1, -1)

        # The suffixes are left-padded, so the padding sits between the shared prefix and each row's suffix,
        # masked out, and every row's last real token is the batch's last column. Right padding would put it
        # at a different column per row, and `logits_to_keep` keeps the same columns for every row: reading
        # them would mean logits for rows x distinct suffix lengths x vocabulary, or calling the lm_head by
        # hand past model-specific logit scaling. With full attention only (see `_prefix_cache_kwarg`),
        # masked keys in the middle are as invisible as masked keys at the start.
        ids, suffix_mask, positions = self._left_pad([r[shared:] for r in rows])
        mask = torch.cat([torch.ones((len(rows), shared), dtype=torch.long, device=dev), suffix_mask], dim=1)
        try:
            out = self.model(
                input_ids=ids,
                attention_mask=mask,
                position_ids=positions + shared,  # each suffix continues right after the prefix
                **with_cache,
            )
        except Exception as e:
            raise self._batch_error(f"classify (after a shared prefix of {shared} tokens)", ids, e) from e
        self.forward_batches += 1
        self.prefix_tokens_reused += (len(rows) - 1) * shared
        return out.logits[:, -1, :]

    def _label_matrix(self, prompt_text: str, labels: Sequence[str]) -> tuple[tuple[int, ...], ...]:
        tail = prompt_text[-_LABEL_CONTEXT_CHARS:]
        ids = tuple(self._label_token_ids(tail, label) for label in labels)
        owner: dict[int, str] = {}
        for label, toks in zip(labels, ids, strict=True):
            for t in toks:
                if t in owner and owner[t] != label:
                    raise ConfigError(
                        f"Labels {owner[t]!r} and {label!r} both start with token {t} "
                        f"({self.tokenizer.decode([t])!r}), so their probabilities cannot be told apart. "
                        "Use labels whose first tokens differ (e.g. 'Yes'/'No', or single digits)."
                    )
                owner[t] = label
        return ids

    def _label_token_ids(self, tail: str, label: str) -> tuple[int, ...]:
        """The first token of `label` as the tokenizer writes it right after the prompt's `tail`, plus the
        first token of " " + label when that differs and is not bare whitespace."""
        key = (tail, label)
        cached = self._label_cache.get(key)
        if cached is not None:
            return cached

        def encode(text: str) -> list[int]:
            return list(self.tokenizer(text, add_special_tokens=False)["input_ids"])

        base, joined = encode(tail), encode(tail + label)
        if len(joined) > len(base) and joined[: len(base)] == base:
            first = joined[len(base)]
        else:
            # The label merged with the prompt's last characters into one token; the prompt the model reads
            # ends before the label, so take the label's own first token instead.
            own = encode(label)
            if not own:
                raise ConfigError(f"Label {label!r} encodes to no tokens; use a non-empty label.")
            first = own[0]
        ids = [first]
        spaced = encode(" " + label)
        if spaced and spaced[0] != first and self.tokenizer.decode([spaced[0]]).strip():
            ids.append(spaced[0])
        result = tuple(ids)
        self._label_cache[key] = result
        return result

    # ------------------------------------------------------------------ generate

    def generate(self, requests: Sequence[GenerateRequest]) -> list[GenerateResult]:
        """Decode an answer for every request, batched by equal `GenerationParams`.

        Greedy when temperature is 0. With temperature > 0 each request samples from its own generator
        seeded with `params.seed`, so a request's text does not depend on which others share its batch
        (up to floating-point differences between batch shapes). Stop strings end the text and are cut
        from it; with `json_schema` the output is constrained by xgrammar to match the schema.

        Returns:
            One `GenerateResult` per request, in input order. finish_reason is "length" when max_tokens (or
            max_model_len) was reached without EOS or a stop string, else "stop"; a prompt over
            `max_model_len` gets an error result of its own.

        Raises:
            ConfigError: a `json_schema` cannot be compiled.
            BackendError: a batch failed in the model (e.g. out of memory: lower token_budget).
        """
        if not requests:
            return []
        prompts = self._encode_prompts([self.chat.render(r.messages) for r in requests])
        groups: dict[GenerationParams, list[int]] = {}
        for i, r in enumerate(requests):
            groups.setdefault(r.params, []).append(i)

        pieces: list[tuple[list[int], list[GenerateResult]]] = []
        for params, members in groups.items():
            grammar = self._compile_schema(params.json_schema) if params.json_schema is not None else None
            runnable: list[int] = []
            for i in members:
                error = self._too_long(len(prompts[i]), 1)
                if error is not None:
                    pieces.append(([i], [GenerateResult.failed(error)]))
                else:
                    runnable.append(i)
            new_tokens = {i: self._new_token_cap(len(prompts[i]), params.max_tokens) for i in runnable}
            lengths = {i: len(prompts[i]) + new_tokens[i] for i in runnable}
            order = [runnable[j] for j in longest_first([lengths[i] for i in runnable])]
            # batches_by_budget indexes `lengths` by request position, so give it a dense list.
            dense = [lengths.get(i, 0) for i in range(len(requests))]
            for batch in batches_by_budget(
                order, dense, token_budget=self.config.token_budget, max_batch_size=self.config.max_batch_size
            ):
                results = self._generate_batch(
                    [prompts[i] for i in batch], [new_tokens[i] for i in batch], params, grammar
                )
                pieces.append((batch, results))
        return scatter(len(requests), pieces)

    def _new_token_cap(self, prompt_len: int, max_tokens: int) -> int:
        if self.max_model_len is None:
            return max_tokens
        return max(1, min(max_tokens, self.max_model_len - prompt_len))

    def _compile_schema(self, schema_text: str) -> Any:
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

    def _generate_batch(
        self, rows: list[list[int]], caps: list[int], params: GenerationParams, grammar: Any
    ) -> list[GenerateResult]:
        import transformers

        ids, mask, _ = self._left_pad(rows)
        width = ids.shape[1]
        max_new = max(caps)
        processors: list[Any] = []
        if grammar is not None:
            processors.append(_GrammarMask(grammar, len(rows)))
        if not params.greedy:
            processors.append(_SeededSampler(len(rows), params.seed, params.temperature, params.top_p))
        limits = None
        if params.stop or min(caps) < max_new:
            limits = _RowLimits(width, caps, params.stop, self.tokenizer)
        gen_config = transformers.GenerationConfig(
            max_new_tokens=max_new,
            # Sampling, when asked for, happens in _SeededSampler; argmax then picks the sampled token.
            do_sample=False,
            num_beams=1,
            bos_token_id=self.tokenizer.bos_token_id,
            eos_token_id=list(self.eos_ids),
            pad_token_id=self.pad_id,
        )
        with self.device.inference_mode():
            try:
                out = self.model.generate(
                    input_ids=ids,
                    attention_mask=mask,
                    generation_config=gen_config,
                    logits_processor=transformers.LogitsProcessorList(processors),
                    stopping_criteria=transformers.StoppingCriteriaList([limits] if limits else []),
                )
            except Exception as e:
                raise self._batch_error("generate", ids, e) from e
        self.forward_batches += 1
        generated = out[:, width:].cpu().tolist()

        results = []
        eos = set(self.eos_ids)
        for i, (row, cap) in enumerate(zip(generated, caps, strict=True)):
            end, reason = min(len(row), cap), "length"
            first_eos = next((k for k, t in enumerate(row) if t in eos), None)
            if first_eos is not None and first_eos + 1 <= end:
                end, reason = first_eos + 1, "stop"
            if limits is not None and limits.stop_at[i] is not None and limits.stop_at[i] < end:
                end, reason = limits.stop_at[i], "stop"
            text = self.tokenizer.decode(row[:end], skip_special_tokens=True)
            cut = _first_stop(text, params.stop)
            if cut is not None:
                text, reason = text[:cut], "stop"
            results.append(
                GenerateResult(
                    text=text, finish_reason=reason, prompt_tokens=len(rows[i]), completion_tokens=end
                )
            )
        return results

    def _batch_error(self, what: str, ids: torch.Tensor, e: Exception) -> BackendError:
        rows, width = ids.shape
        return BackendError(
            f"Judge {self.model_id} failed on a {what} batch of {rows} rows x {width} tokens on "
            f"{self.device.describe()}: {type(e).__name__}: {e}. If it ran out of memory, lower token_budget "
            f"(now {self.config.token_budget}) or max_batch_size (now {self.config.max_batch_size})."
        )


def _forward_params(model: Any) -> set[str]:
    import inspect

    return set(inspect.signature(model.forward).parameters)


def _common_prefix_len(a: Sequence[int], b: Sequence[int]) -> int:
    """How many leading tokens `a` and `b` share.

    >>> _common_prefix_len([1, 2, 3, 4], [1, 2, 5])
    2
    """
    n = 0
    for x, y in zip(a, b, strict=False):  # stops at the shorter, by design
        if x != y:
            break
        n += 1
    return n


def _prefix_groups(
    runnable: Sequence[int], prompts: Sequence[Sequence[int]], key_tokens: int
) -> list[list[int]]:
    """Requests grouped by their first `key_tokens` tokens, each group longest first, groups in order of
    their longest prompt (so that a batch that runs out of memory still does so first).

    A prompt no longer than `key_tokens`, or the only one with its first tokens, goes to one remaining
    group, whose batches share a prefix only by chance.

    >>> _prefix_groups([0, 1, 2, 3, 4], [[1, 2, 3], [7, 8, 9, 9], [1, 2, 4, 4, 4], [5], [1, 2, 9]], 2)
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


def _shared_prefix_batches(
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
    >>> _shared_prefix_batches([0, 1, 2, 3], prompts, token_budget=12, max_batch_size=8, min_shared=2)
    [([0, 1, 2], 3), ([3], 0)]
    """
    batches: list[tuple[list[int], int]] = []
    batch: list[int] = []
    common = shortest = longest = shared = 0
    for i in order:
        row = prompts[i]
        if batch:
            # The common prefix of a set is the least it shares with any one member, e.g. the first.
            c = min(common, _common_prefix_len(prompts[batch[0]], row))
            low, top = min(shortest, len(row)), max(longest, len(row))
            s = _usable_prefix(c, low, len(batch) + 1, min_shared)
            if len(batch) < max_batch_size and s + (len(batch) + 1) * (top - s) <= token_budget:
                batch.append(i)
                common, shortest, longest, shared = c, low, top, s
                continue
            batches.append((batch, shared))
        batch, common, shortest, longest, shared = [i], len(row), len(row), len(row), 0
    if batch:
        batches.append((batch, shared))
    return batches


def _usable_prefix(common: int, shortest: int, rows: int, min_shared: int) -> int:
    """The prefix a batch runs once: its rows' common prefix, less a token if that is a whole prompt;
    0 when one row or fewer than `min_shared` tokens would be shared.

    >>> _usable_prefix(40, 40, 3, 32), _usable_prefix(40, 40, 1, 32), _usable_prefix(20, 50, 3, 32)
    (39, 0, 0)
    """
    shared = min(common, shortest - 1)
    return shared if rows > 1 and shared >= min_shared else 0


def _first_stop(text: str, stops: Sequence[str]) -> int | None:
    hits = [k for k in (text.find(s) for s in stops if s) if k >= 0]
    return min(hits) if hits else None


class _RowLimits:
    """Stopping criterion for what transformers' own criteria do not cover: stop strings, and a per-row
    token cap (rows of one batch may have different room left under max_model_len).

    Records, per row, how many generated tokens it had when a stop string first appeared.
    """

    def __init__(self, prompt_width: int, caps: list[int], stops: Sequence[str], tokenizer: Any) -> None:
        self.prompt_width = prompt_width
        self.caps = caps
        self.stops = [s for s in stops if s]
        self.tokenizer = tokenizer
        self.stop_at: list[int | None] = [None] * len(caps)

    def __call__(self, input_ids: torch.Tensor, scores: Any, **kwargs: Any) -> torch.Tensor:
        import torch

        n = input_ids.shape[1] - self.prompt_width
        done = [self.stop_at[i] is not None or n >= cap for i, cap in enumerate(self.caps)]
        live = [i for i, d in enumerate(done) if not d]
        if self.stops and live:
            generated = input_ids[live, self.prompt_width :].cpu().tolist()
            texts = self.tokenizer.batch_decode(generated, skip_special_tokens=True)
            for i, text in zip(live, texts, strict=True):
                if _first_stop(text, self.stops) is not None:
                    self.stop_at[i] = n
                    done[i] = True
        return torch.tensor(done, dtype=torch.bool, device=input_ids.device)


class _GrammarMask:
    """Logits processor that keeps each row inside its JSON-schema grammar, with one xgrammar matcher per row.

    Written here rather than using `xgrammar.contrib.hf.LogitsProcessor`, which asserts that every row
    accepts its token: a row that transformers already finished (by a stop string) is fed padding, which the
    grammar rejects. Such a row is simply left unmasked. The mask is unpacked with plain torch ops so it
    runs on any device.
    """

    def __init__(self, grammar: Any, batch_size: int) -> None:
        import xgrammar

        self.xgr = xgrammar
        self.matchers = [xgrammar.GrammarMatcher(grammar) for _ in range(batch_size)]
        self.active = [True] * batch_size
        self.bitmask = xgrammar.allocate_token_bitmask(batch_size, grammar.tokenizer_info.vocab_size)
        self.vocab_size = grammar.tokenizer_info.vocab_size
        self.started = False

    def __call__(self, input_ids: torch.Tensor, scores: torch.Tensor) -> torch.Tensor:
        import torch

        if self.started:
            last = input_ids[:, -1].cpu().tolist()
            for i, m in enumerate(self.matchers):
                if self.active[i] and not m.is_terminated() and not m.accept_token(last[i]):
                    self.active[i] = False
        self.started = True
        masked = [self.active[i] and not m.is_terminated() for i, m in enumerate(self.matchers)]
        if not any(masked):
            return scores
        for i, m in enumerate(self.matchers):
            if masked[i]:
                m.fill_next_token_bitmask(self.bitmask, i)
        bits = self.bitmask.to(scores.device)
        shifts = torch.arange(32, dtype=bits.dtype, device=bits.device)
        allowed = ((bits.unsqueeze(-1) >> shifts) & 1).bool().flatten(1)
        allowed = allowed[:, : scores.shape[1]]
        if allowed.shape[1] < scores.shape[1]:
            # Logits wider than the grammar's vocabulary (padded lm_head): never allow the extra ids.
            pad = torch.zeros(allowed.shape[0], scores.shape[1] - allowed.shape[1], dtype=torch.bool)
            allowed = torch.cat([allowed, pad.to(allowed.device)], dim=1)
        allowed[~torch.tensor(masked, device=allowed.device)] = True
        return scores.masked_fill(~allowed, float("-inf"))


class _SeededSampler:
    """Logits processor that samples each row from its own seeded generator and leaves only that token.

    transformers' sampling draws from the global RNG, so a row's sample would depend on the other rows of
    its batch. Here each row owns a CPU generator seeded with `params.seed` that yields one uniform number
    per step; the token is found by inverse CDF over the (temperature-scaled, top-p-truncated) distribution
    on the device. The processor returns -inf everywhere but the chosen token, and greedy selection picks it.
    """

    def __init__(self, batch_size: int, seed: int, temperature: float, top_p: float) -> None:
        import torch

        self.generators = [torch.Generator().manual_seed(seed) for _ in range(batch_size)]
        self.temperature = temperature
        self.top_p = top_p

    def __call__(self, input_ids: torch.Tensor, scores: torch.Tensor) -> torch.Tensor:
        import torch

        u = torch.cat([torch.rand(1, generator=g) for g in self.generators]).to(scores.device)
        probs = torch.softmax(scores.float() / self.temperature, dim=-1)
        sorted_p, order = probs.sort(dim=-1, descending=True)
        cdf = sorted_p.cumsum(dim=-1)
        if self.top_p < 1.0:
            # Keep the smallest prefix whose mass reaches top_p (the most likely token is always kept).
            sorted_p = sorted_p * ((cdf - sorted_p) < self.top_p)
            cdf = sorted_p.cumsum(dim=-1)
        target = (u * cdf[:, -1]).unsqueeze(1)
        pos = torch.searchsorted(cdf, target, right=True).clamp_(max=scores.shape[1] - 1)
        chosen = order.gather(1, pos)
        out = torch.full_like(scores, float("-inf"))
        return out.scatter_(1, chosen, 0.0)
