"""`OpenAIJudge`: a judge LLM behind an OpenAI-compatible `/v1/chat/completions` endpoint.

Works with a vLLM server, NVIDIA NIM, MindIE or OpenAI itself. Requests run concurrently (up to the
config's `parallelism`), longest first so that the slowest ones do not start last, and every request
succeeds or fails on its own.

`classify` reads the next-token distribution from `top_logprobs`. A request with an `answer_prefix`
uses vLLM's chat extension (`continue_final_message`) to continue an opened assistant turn; servers
without it (OpenAI, and others) reject the request or ignore those fields, so send such requests there
with `classify_mode="text"`.
"""

from __future__ import annotations

import math
import threading
from collections.abc import Sequence
from typing import Any, Literal

from ascend_eval.models.base import (
    LOOP_GUARD,
    ClassifyRequest,
    ClassifyResult,
    GenerateRequest,
    GenerateResult,
    GenerationParams,
    Message,
    repetition_detection,
)
from ascend_eval.models.endpoint_model import EndpointModel
from ascend_eval.models.errors import ConfigError
from ascend_eval.models.http import EndpointConfig, EndpointError
from ascend_eval.models.registry import endpoint_config, register
from ascend_eval.models.spec import ModelSpec

ClassifyMode = Literal["logprobs", "text"]

# Enough for any label to be written out in full (labels are short words or digits).
_TEXT_MODE_PARAMS = GenerationParams(max_tokens=8, temperature=0.0)


class OpenAIJudge(EndpointModel, route="/chat/completions"):
    """A `Judge` that calls an OpenAI-compatible chat completions endpoint.

    Args:
        config: The server, the model name and the retry policy.
        classify_mode: "logprobs" reads label probabilities from the next-token distribution (one
            token per request; the server must return `top_logprobs`). "text" lets the model write up to
            8 tokens and gives probability 1 to the label the reply starts with.
        top_logprobs: How many next-token candidates to ask for in "logprobs" mode (OpenAI allows at
            most 20; vLLM at most its `--max-logprobs`).
        loop_guard: As `TorchJudgeConfig.loop_guard`, sent as vLLM's `repetition_detection` request field
            (`models.base.repetition_detection`), so that the server ends a looping reply with
            finish_reason "repetition" instead of decoding it to max_tokens. 0 (the default here) sends
            nothing: other servers may refuse a field they do not know. None: on where the server is
            vLLM (its `GET /v1/models` lists a model owned by "vllm"; asked once, before the first
            generation), off elsewhere; a judge built from a URL (`models.factory`) is built so.

    Raises:
        ConfigError: An invalid mode, or the API key named by `config` cannot be read.
    """

    shown = ("model_id", "classify_mode")

    def __init__(
        self,
        config: EndpointConfig,
        *,
        classify_mode: ClassifyMode = "logprobs",
        top_logprobs: int = 20,
        loop_guard: int | None = 0,
    ) -> None:
        if classify_mode not in ("logprobs", "text"):
            raise ConfigError(f"classify_mode must be 'logprobs' or 'text', got {classify_mode!r}.")
        if top_logprobs < 1:
            raise ConfigError(f"top_logprobs must be >= 1, got {top_logprobs}.")
        if loop_guard is not None and loop_guard < 0:
            raise ConfigError(f"loop_guard must be >= 0 (0 turns it off) or None, got {loop_guard}.")
        self.classify_mode = classify_mode
        self.top_logprobs = top_logprobs
        self.loop_guard = loop_guard
        super().__init__(config)
        self._repetition: dict[str, int] | None = None
        self._asked = threading.Lock()
        self._server_known = False

    def _repetition_field(self) -> dict[str, int] | None:
        """The `repetition_detection` field to send, or None; asks the server what it is once."""
        with self._asked:
            if not self._server_known:
                guard = self.loop_guard
                if guard is None:
                    guard = LOOP_GUARD if self._server_is_vllm() else 0
                self._repetition = repetition_detection(guard)
                self._server_known = True
            return self._repetition

    def _server_is_vllm(self) -> bool:
        try:
            listed = self._client.get("/models")
        except EndpointError:
            return False
        models = listed.get("data") if isinstance(listed, dict) else None
        return isinstance(models, list) and any(
            isinstance(m, dict) and m.get("owned_by") == "vllm" for m in models
        )

    @property
    def max_concurrency(self) -> int:
        """Calls the engine may make at once: one per request in flight (`config.parallelism`)."""
        return self.config.parallelism

    max_batch = 1
    """Requests per engine call: one, so that every answer reaches the engine the moment it is back and
    a slow request holds up only its own plan (the server batches what is in flight)."""

    def generate(self, requests: Sequence[GenerateRequest]) -> list[GenerateResult]:
        """Generate one reply per request.

        Returns:
            One result per request, in input order; a request that failed after its retries has
            finish_reason "error" and the reason in `error`.
        """
        bodies = [self._chat_body(r.messages, r.params) for r in requests]
        if requests and (repetition := self._repetition_field()) is not None:
            for body in bodies:
                body["repetition_detection"] = repetition
        outcomes = self._map(bodies, _parse_generation, lengths=[_chat_chars(r.messages) for r in requests])
        return [o if isinstance(o, GenerateResult) else GenerateResult.failed(str(o)) for o in outcomes]

    def classify(self, requests: Sequence[ClassifyRequest]) -> list[ClassifyResult]:
        """Probabilities over each request's labels, in input order; failures carry the reason in `error`."""
        lengths = [_chat_chars(r.messages) + len(r.answer_prefix) for r in requests]
        if self.classify_mode == "text":
            bodies = [self._chat_body(r.messages, _TEXT_MODE_PARAMS) for r in requests]
            outcomes = self._map(bodies, _parse_generation, lengths=lengths)
            return [
                _label_from_text(r, o)
                if isinstance(o, GenerateResult)
                else ClassifyResult.failed(r.labels, str(o))
                for r, o in zip(requests, outcomes, strict=True)
            ]
        bodies = [self._logprobs_body(r) for r in requests]
        outcomes = self._map(bodies, _parse_top_logprobs, lengths=lengths)
        return [
            self._label_from_logprobs(r, o)
            if isinstance(o, _TopLogprobs)
            else ClassifyResult.failed(r.labels, str(o))
            for r, o in zip(requests, outcomes, strict=True)
        ]

    def _chat_body(self, messages: Sequence[Message], params: GenerationParams) -> dict[str, Any]:
        body: dict[str, Any] = {
            "model": self.config.model,
            "messages": [{"role": m.role, "content": m.content} for m in messages],
            "max_tokens": params.max_tokens,
            "temperature": params.temperature,
            "top_p": params.top_p,
            "seed": params.seed,
        }
        if params.stop:
            body["stop"] = list(params.stop)
        if params.json_schema is not None:
            body["response_format"] = {
                "type": "json_schema",
                "json_schema": {"name": "output", "schema": params.schema, "strict": True},
            }
        return body

    def _logprobs_body(self, request: ClassifyRequest) -> dict[str, Any]:
        messages = [{"role": m.role, "content": m.content} for m in request.messages]
        body: dict[str, Any] = {
            "model": self.config.model,
            "messages": messages,
            "max_tokens": 1,
            "temperature": 0.0,
            "logprobs": True,
            "top_logprobs": self.top_logprobs,
        }
        if request.answer_prefix:
            # vLLM's extension: render the chat with the assistant turn left open after the prefix.
            messages.append({"role": "assistant", "content": request.answer_prefix})
            body["continue_final_message"] = True
            body["add_generation_prompt"] = False
        return body

    def _label_from_logprobs(self, request: ClassifyRequest, top: _TopLogprobs) -> ClassifyResult:
        if top.candidates is None:
            return ClassifyResult.failed(
                request.labels,
                f"{self.model_id} returned no logprobs, so labels cannot be read from the next-token "
                "distribution. Start the server with logprobs enabled, or build "
                "OpenAIJudge(..., classify_mode='text').",
            )
        probs = label_probs(top.candidates, request.labels)
        if probs is None:
            tokens = [t for t, _ in top.candidates]
            return ClassifyResult.failed(
                request.labels,
                f"no label among the top-{len(tokens)} next tokens: {tokens!r} "
                f"(labels {list(request.labels)!r}). "
                "Check that the prompt asks for exactly one of the labels.",
            )
        return ClassifyResult(labels=request.labels, probs=tuple(probs), prompt_tokens=top.prompt_tokens)


class _TopLogprobs:
    """The next-token candidates of one classify response (None when the server sent no logprobs)."""

    __slots__ = ("candidates", "prompt_tokens")

    def __init__(self, candidates: list[tuple[str, float]] | None, prompt_tokens: int) -> None:
        self.candidates = candidates
        self.prompt_tokens = prompt_tokens


def label_probs(candidates: Sequence[tuple[str, float]], labels: Sequence[str]) -> list[float] | None:
    """Probabilities over `labels` from next-token candidates `(token, logprob)`, renormalised over labels.

    A token counts for a label when, stripped of whitespace, it equals the label, or it is a non-empty
    prefix of that label and of no other (a label's first token may be only part of it). The mass of
    all tokens that count for a label is summed. Returns None when no candidate counts for any label.

    >>> top = [(" Yes", -0.1), ("No", -2.5), (" N", -4.0), ("Maybe", -1.0)]
    >>> [round(p, 3) for p in label_probs(top, ("Yes", "No"))]
    [0.9, 0.1]
    >>> label_probs([("Hello", -0.1)], ("0", "1")) is None
    True
    """
    stripped = [label.strip() for label in labels]
    mass = [0.0] * len(labels)
    for token, logprob in candidates:
        index = _token_label(token.strip(), stripped)
        if index is not None and not math.isnan(logprob):
            mass[index] += math.exp(logprob)
    total = sum(mass)
    if total <= 0.0:
        return None
    return [m / total for m in mass]


def _token_label(token: str, labels: Sequence[str]) -> int | None:
    """The index of the label `token` stands for, or None (see `label_probs`)."""
    if not token:
        return None
    equal = [i for i, label in enumerate(labels) if label == token]
    if len(equal) == 1:
        return equal[0]
    prefixed = [i for i, label in enumerate(labels) if label.startswith(token)]
    return prefixed[0] if len(prefixed) == 1 else None


def _label_from_text(request: ClassifyRequest, result: GenerateResult) -> ClassifyResult:
    text = result.text.strip()
    prefix = request.answer_prefix.strip()
    # Without the chat extension the prefix is not sent, and models often write it out themselves.
    if prefix and text.startswith(prefix):
        text = text[len(prefix) :].strip()
    # The longest match wins, so that "10" is not read as "1" when both are labels.
    matches = [
        i for i, label in enumerate(request.labels) if label.strip() and text.startswith(label.strip())
    ]
    if not matches:
        return ClassifyResult.failed(
            request.labels,
            f"the reply {result.text[:80]!r} starts with none of the labels {list(request.labels)!r}. "
            "Check that the prompt asks for exactly one of the labels.",
        )
    best = max(matches, key=lambda i: len(request.labels[i].strip()))
    probs = tuple(1.0 if i == best else 0.0 for i in range(len(request.labels)))
    return ClassifyResult(labels=request.labels, probs=probs, prompt_tokens=result.prompt_tokens)


def _chat_chars(messages: Sequence[Message]) -> int:
    return sum(len(m.content) for m in messages)


def _first_choice(data: dict[str, Any]) -> dict[str, Any]:
    choices = data.get("choices")
    if choices is None:
        raise ValueError(f"no 'choices' in the response; its keys are {sorted(data)}")
    if not isinstance(choices, list):
        raise ValueError(
            f"'choices' is a {type(choices).__name__}, not a list; the response's keys are {sorted(data)}. "
            "Check that the url is an OpenAI-compatible /v1 server"
        )
    if not choices:
        # A 200 with nothing generated: e.g. a content filter (Azure adds prompt_filter_results), a proxy
        # that dropped the choices, or a server that failed the request but answered 200.
        raise ValueError(
            f"'choices' is an empty list: the server answered 200 but generated nothing for this request "
            f"(the response's keys are {sorted(data)}). Check the server's log for this request, and any "
            "content filter or gateway between here and the model"
        )
    if not isinstance(choices[0], dict):
        raise ValueError(f"the first of the 'choices' is a {type(choices[0]).__name__}, not an object")
    return choices[0]


def _usage(data: dict[str, Any]) -> tuple[int, int]:
    usage = data.get("usage")
    if not isinstance(usage, dict):
        return 0, 0
    prompt, completion = usage.get("prompt_tokens"), usage.get("completion_tokens")
    return (prompt if isinstance(prompt, int) else 0, completion if isinstance(completion, int) else 0)


def _parse_generation(data: dict[str, Any]) -> GenerateResult:
    choice = _first_choice(data)
    message = choice.get("message")
    if not isinstance(message, dict):
        raise ValueError("the first choice has no 'message'")
    reason = choice.get("finish_reason")
    finish = reason if reason in ("length", "repetition") else "stop"
    content = message.get("content")
    if content is None and finish == "length":
        content = ""  # cut short before any content (e.g. while a reasoning model was still thinking)
    if not isinstance(content, str):
        raise ValueError(
            f"the message has no text content (finish_reason={reason!r}, refusal={message.get('refusal')!r})"
        )
    prompt_tokens, completion_tokens = _usage(data)
    return GenerateResult(
        text=content, finish_reason=finish, prompt_tokens=prompt_tokens, completion_tokens=completion_tokens
    )


def _parse_top_logprobs(data: dict[str, Any]) -> _TopLogprobs:
    choice = _first_choice(data)
    prompt_tokens, _ = _usage(data)
    logprobs = choice.get("logprobs")
    content = logprobs.get("content") if isinstance(logprobs, dict) else None
    if not isinstance(content, list) or not content or not content[0].get("top_logprobs"):
        return _TopLogprobs(None, prompt_tokens)
    candidates = [(str(c["token"]), float(c["logprob"])) for c in content[0]["top_logprobs"]]
    return _TopLogprobs(candidates, prompt_tokens)


JUDGE_PARALLELISM = 128
"""Judge requests in flight at one server by default: enough to keep a GPU or NPU server's continuous
batch full (vLLM's default max_num_seqs is 256 on GPUs); the congestion gate backs off on 429/503, on
timeouts and on answers slower than half the request timeout."""


@register("judge", "openai")
def build_openai_judge(spec: ModelSpec) -> OpenAIJudge:
    """A judge on an OpenAI-compatible server, with vLLM's own loop guard where the server is vLLM (asked
    once, before the first generation)."""
    return OpenAIJudge(endpoint_config(spec, parallelism=JUDGE_PARALLELISM), loop_guard=None)


__all__ = [
    "JUDGE_PARALLELISM",
    "ClassifyMode",
    "EndpointConfig",
    "EndpointError",
    "OpenAIJudge",
    "build_openai_judge",
    "label_probs",
]
