"""Opt-in OpenTelemetry spans of a run: the run, each engine stage, each backend call.

Off by default. `evaluate(trace=True)` (or `ASCEND_EVAL_TRACE=1`) records spans without any prompt or
output text; `trace="content"` (or `ASCEND_EVAL_TRACE=content`) adds them. Like any library, this one only
asks the global tracer provider for a tracer (`opentelemetry.trace.get_tracer("ascend_eval")`): the
application (or `ascend-eval evaluate --trace-exporter`, or `opentelemetry-instrument`) decides where spans
go. Only `opentelemetry-api` is imported, and only once tracing is on; with tracing off every hook is a
method of `NoTrace` that does nothing.

The tree of one run:

    ascend_eval.evaluate                      CHAIN: dataset, metrics, models; totals at the end
      judge.generate[statements@1]            CHAIN: one per stage, first request to last answer
        chat <judge model id>                 LLM: one per backend call (a batch), on the lane's thread
      embedder.document                       CHAIN
        embeddings <embedder model id>        EMBEDDING

Backend calls run on the lanes' worker threads, where no span is current: each call span is started with
its stage span as the explicit parent and made current on that thread while the backend works, so that
spans the backend makes itself (an instrumented HTTP client) nest under it. Attribute names follow two
conventions at once, the OpenInference one (Phoenix, Arize, Langfuse) and OpenTelemetry's GenAI one; the
names are the constants below, each marked with its convention, and our own live under `ascend_eval.*`.
"""

from __future__ import annotations

import json
import os
import time
from collections import Counter
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any, Literal

from ascend_eval.choices import JUDGE_MODES
from ascend_eval.engine.codecs import Codec, Result, codec_for
from ascend_eval.engine.stats import StageStats
from ascend_eval.errors import ConfigError, MissingDependencyError
from ascend_eval.models.base import Request

TRACE_ENV = "ASCEND_EVAL_TRACE"
"""The environment variable that sets `evaluate()`'s `trace` when the call leaves it None: 1 or content."""

INSTALL_HINT = "pip install 'ascend-eval[tracing]'"

CONTENT_CHARS = 4000
"""Each prompt and output recorded with `trace="content"` is cut to this many characters."""

CONTENT_ITEMS = 256
"""At most this many prompts and outputs per backend-call span; `ascend_eval.content.omitted` counts the
rest (a local judge's call can hold a thousand requests)."""

TraceArg = bool | Literal["content"] | None
TraceMode = Literal["off", "on", "content"]

# --- Attribute names -------------------------------------------------------------------------------------
# OpenInference semantic conventions (Arize; read by Phoenix, Arize and Langfuse).
OI_SPAN_KIND = "openinference.span.kind"
OI_CHAIN, OI_LLM, OI_EMBEDDING, OI_RERANKER = "CHAIN", "LLM", "EMBEDDING", "RERANKER"
LLM_MODEL_NAME = "llm.model_name"
EMBEDDING_MODEL_NAME = "embedding.model_name"
RERANKER_MODEL_NAME = "reranker.model_name"
LLM_TOKEN_COUNT_PROMPT = "llm.token_count.prompt"
LLM_TOKEN_COUNT_COMPLETION = "llm.token_count.completion"
LLM_TOKEN_COUNT_TOTAL = "llm.token_count.total"
INPUT_VALUE = "input.value"
INPUT_MIME_TYPE = "input.mime_type"
OUTPUT_VALUE = "output.value"
OUTPUT_MIME_TYPE = "output.mime_type"
LLM_INPUT_MESSAGES = "llm.input_messages"
"""Prefix of `llm.input_messages.<i>.message.role` / `.content` (set for a call of one request)."""
LLM_OUTPUT_MESSAGES = "llm.output_messages"
# OpenTelemetry GenAI semantic conventions (gen_ai.*, status Development).
GEN_AI_OPERATION_NAME = "gen_ai.operation.name"
GEN_AI_SYSTEM = "gen_ai.system"
GEN_AI_PROVIDER_NAME = "gen_ai.provider.name"
"""The newer name of `gen_ai.system`; both are set."""
GEN_AI_REQUEST_MODEL = "gen_ai.request.model"
GEN_AI_USAGE_INPUT_TOKENS = "gen_ai.usage.input_tokens"
GEN_AI_USAGE_OUTPUT_TOKENS = "gen_ai.usage.output_tokens"
GEN_AI_RESPONSE_FINISH_REASONS = "gen_ai.response.finish_reasons"
# Ours.
STAGE = "ascend_eval.stage"
STAGES = "ascend_eval.stages"
"""On a call span whose batch held requests of several stages (equal decoding settings): all their labels."""
ROLE = "ascend_eval.role"
KIND = "ascend_eval.kind"
PROMPT = "ascend_eval.prompt"
BACKEND = "ascend_eval.backend"
REQUESTS = "ascend_eval.requests"
UNIQUE = "ascend_eval.unique"
CACHE_HITS = "ascend_eval.cache_hits"
SENT = "ascend_eval.sent"
FAILED = "ascend_eval.failed"
TOKENS_PROMPT = "ascend_eval.tokens.prompt"
TOKENS_COMPLETION = "ascend_eval.tokens.completion"
TOKENS_COMPUTED_PROMPT = "ascend_eval.tokens.computed_prompt"
BACKEND_SECONDS = "ascend_eval.backend_seconds"
FINISH_REASON = "ascend_eval.finish_reason"
"""Prefix of one count per finish reason of a call: `ascend_eval.finish_reason.stop` = 12."""
CONTENT_OMITTED = "ascend_eval.content.omitted"
SAMPLES = "ascend_eval.dataset.samples"
SOURCE = "ascend_eval.dataset.source"
METRICS = "ascend_eval.metrics"
MODEL = "ascend_eval.model"
"""Prefix of the run's models by role: `ascend_eval.model.judge`, `.embedder`, `.reranker`."""
JUDGE_MODE = "ascend_eval.judge_mode"
LANGUAGE = "ascend_eval.language"
SCORE = "ascend_eval.score"
"""Prefix of each metric's mean score on the run span: `ascend_eval.score.faithfulness`."""
NAN = "ascend_eval.nan"
"""Prefix of each metric's NaN count on the run span; `ascend_eval.nan_count` is their sum."""
NAN_COUNT = "ascend_eval.nan_count"
SCORES = "ascend_eval.scores"

RUN_SPAN = "ascend_eval.evaluate"

# Per request kind (`Codec.kind`): OpenInference span kind, GenAI operation, the model's attribute.
_KINDS: dict[str, tuple[str, str, str]] = {
    "generate": (OI_LLM, "chat", LLM_MODEL_NAME),
    "classify": (OI_LLM, "chat", LLM_MODEL_NAME),
    "embed": (OI_EMBEDDING, "embeddings", EMBEDDING_MODEL_NAME),
    "score": (OI_RERANKER, "rerank", RERANKER_MODEL_NAME),
}


def trace_mode(trace: TraceArg | str = None) -> TraceMode:
    """What `evaluate(trace=...)` asks for; None reads `ASCEND_EVAL_TRACE` (unset: off).

    >>> trace_mode(False), trace_mode(True), trace_mode("content")
    ('off', 'on', 'content')
    >>> trace_mode("yes")
    'on'

    Raises:
        ConfigError: a value that is none of False, True, "content" (or 0/1, on/off, true/false).
    """
    if trace is None:
        return _parse(os.environ.get(TRACE_ENV, ""), f"{TRACE_ENV}=")
    if trace is True or trace is False:
        return "on" if trace else "off"
    if isinstance(trace, str):
        return _parse(trace, "trace=")
    raise ConfigError(f"trace={trace!r}; valid: False, True, 'content'.")


def _parse(text: str, where: str) -> TraceMode:
    value = text.strip().lower()
    if value in ("", "0", "false", "no", "off"):
        return "off"
    if value in ("1", "true", "yes", "on"):
        return "on"
    if value == "content":
        return "content"
    raise ConfigError(f"{where}{text!r}; valid: 0 or 1 (spans without text), or content (with prompts).")


def tracer_for(trace: TraceArg | str = None) -> NoTrace:
    """The tracing hooks of one run: `NO_TRACE` when tracing is off, else live ones on the global tracer
    provider. Called before any model loads, so that a missing package is found first.

    >>> tracer_for(False).enabled
    False

    Raises:
        MissingDependencyError: tracing is on and opentelemetry is not installed.
        ConfigError: `trace` is not a valid setting.
    """
    mode = trace_mode(trace)
    if mode == "off":
        return NO_TRACE
    try:
        from opentelemetry import trace as otel_trace
    except ImportError as e:
        raise MissingDependencyError(
            f"Tracing is on (trace={trace!r}) but opentelemetry is not installed: {INSTALL_HINT}"
        ) from e
    return OtelTrace(otel_trace.get_tracer("ascend_eval"), content=mode == "content")


class NullSpan:
    """The run and call spans when tracing is off: every method does nothing."""

    def __enter__(self) -> NullSpan:
        return self

    def __exit__(self, *exc: object) -> None:
        return None

    def set_models(self, models: Mapping[str, str | None]) -> None:
        """The run's model ids by role (known once the backends are built, before they load)."""

    def finished(self, scores: Mapping[str, Sequence[float]], stages: Mapping[str, StageStats]) -> None:
        """The run's totals: mean and NaN count per metric, and the engine's counts over every stage."""

    def failed(self, error: BaseException | str) -> None:
        """The backend call failed as a whole (it raised, or answered the wrong number of results)."""

    def answered(self, results: Sequence[Result | str]) -> None:
        """The backend call's results, in request order (a string is that request's failure)."""


NULL_SPAN = NullSpan()


class NoTrace:
    """The engine's tracing hooks with tracing off: each one returns at once. `OtelTrace` records spans."""

    enabled = False

    def run(self, attributes: Mapping[str, Any]) -> NullSpan:
        """A context manager around one run; `attributes` are `run_attributes(...)`."""
        return NULL_SPAN

    def stage_started(self, label: str, request: Request) -> None:
        """A request of stage `label` was asked for (the stage's span starts with the first one)."""

    def stage_answered(self, label: str) -> None:
        """A request of stage `label` was answered or failed (the stage's span ends at the last one)."""

    def end_stages(self, stages: Mapping[str, StageStats]) -> None:
        """The engine's run is over: every stage span gets its stats and ends."""

    def call(self, backend: Any, codec: Codec[Any, Any], requests: Sequence[Request]) -> NullSpan:
        """A context manager around one backend call, entered on the lane's worker thread."""
        return NULL_SPAN


NO_TRACE = NoTrace()


def run_attributes(
    *, samples: int, source: str | None, metrics: Sequence[str], judge_mode: str, language: str
) -> dict[str, Any]:
    """The run span's opening attributes.

    >>> run_attributes(samples=2, source=None, metrics=["faithfulness"], judge_mode="classify",
    ...                language="auto")[SAMPLES]
    2
    """
    settings = {"samples": samples, "metrics": list(metrics), "judge_mode": judge_mode, "language": language}
    attributes: dict[str, Any] = {
        OI_SPAN_KIND: OI_CHAIN,
        SAMPLES: samples,
        METRICS: tuple(metrics),
        JUDGE_MODE: judge_mode,
        LANGUAGE: language,
        INPUT_VALUE: json.dumps(settings),
        INPUT_MIME_TYPE: "application/json",
    }
    if source:
        attributes[SOURCE] = str(source)
    return attributes


class OtelTrace(NoTrace):
    """Tracing hooks that record spans on an OpenTelemetry tracer.

    Stage spans are opened and closed on the engine's thread; call spans on the lanes' threads, which
    only read the open stage spans (a dict written by the engine's thread alone).

    Args:
        tracer: an `opentelemetry.trace.Tracer`.
        content: record prompts and outputs (each cut to `CONTENT_CHARS`).
    """

    enabled = True

    def __init__(self, tracer: Any, *, content: bool = False) -> None:
        self.tracer = tracer
        self.content = content
        self._run_span: Any = None
        self._stages: dict[str, Any] = {}
        self._last: dict[str, int] = {}

    @contextmanager
    def run(self, attributes: Mapping[str, Any]) -> Iterator[RunSpan]:  # type: ignore[override]
        with self.tracer.start_as_current_span(RUN_SPAN, attributes=dict(attributes)) as span:
            self._run_span = span
            try:
                yield RunSpan(span)
            finally:
                self._run_span = None

    def stage_started(self, label: str, request: Request) -> None:
        if label in self._stages:
            return
        from opentelemetry import trace as otel

        context = None if self._run_span is None else otel.set_span_in_context(self._run_span)
        codec = codec_for(request)
        attributes = {OI_SPAN_KIND: OI_CHAIN, STAGE: label, ROLE: request.role, KIND: codec.kind}
        tag = getattr(request, "tag", "")
        if tag:
            attributes[PROMPT] = tag
        self._stages[label] = self.tracer.start_span(label, context=context, attributes=attributes)

    def stage_answered(self, label: str) -> None:
        self._last[label] = time.time_ns()

    def end_stages(self, stages: Mapping[str, StageStats]) -> None:
        from opentelemetry.trace import Status, StatusCode

        open_stages, self._stages = self._stages, {}
        for label, span in open_stages.items():
            stats = stages.get(label)
            if stats is not None:
                span.set_attributes(stage_attributes(stats))
                if stats.failed:
                    span.set_status(
                        Status(StatusCode.ERROR, f"{stats.failed} of {stats.sent} requests failed")
                    )
            span.end(end_time=self._last.pop(label, None))

    def call(self, backend: Any, codec: Codec[Any, Any], requests: Sequence[Request]) -> CallSpan:  # type: ignore[override]
        return CallSpan(self, backend, codec, requests)

    def stage_span(self, label: str) -> Any:
        """The open span of stage `label`, or None."""
        return self._stages.get(label)


def stage_attributes(stats: StageStats) -> dict[str, Any]:
    """A stage span's closing attributes: the stage's counts over the run.

    >>> stage_attributes(StageStats(requests=3, unique=2, cache_hits=2))[CACHE_HITS]
    2
    """
    out: dict[str, Any] = {
        REQUESTS: stats.requests,
        UNIQUE: stats.unique,
        CACHE_HITS: stats.cache_hits,
        SENT: stats.sent,
        FAILED: stats.failed,
        TOKENS_PROMPT: stats.tokens_in,
        TOKENS_COMPLETION: stats.tokens_out,
        BACKEND_SECONDS: stats.backend_seconds,
    }
    if stats.computed_prompt_tokens is not None:
        out[TOKENS_COMPUTED_PROMPT] = stats.computed_prompt_tokens
    return out


class RunSpan(NullSpan):
    """The live run span, as `OtelTrace.run` yields it."""

    def __init__(self, span: Any) -> None:
        self.span = span

    def set_models(self, models: Mapping[str, str | None]) -> None:
        self.span.set_attributes({f"{MODEL}.{role}": model for role, model in models.items() if model})

    def finished(self, scores: Mapping[str, Sequence[float]], stages: Mapping[str, StageStats]) -> None:
        attributes: dict[str, Any] = {}
        means: dict[str, float | None] = {}
        nan_total = total = 0
        for metric, values in scores.items():
            valid = [v for v in values if v == v]  # NaN is the one value unequal to itself
            means[metric] = sum(valid) / len(valid) if valid else None
            if valid:
                attributes[f"{SCORE}.{metric}"] = means[metric]
            attributes[f"{NAN}.{metric}"] = len(values) - len(valid)
            nan_total += len(values) - len(valid)
            total += len(values)
        attributes[SCORES] = total
        attributes[NAN_COUNT] = nan_total
        for name, field in (
            (REQUESTS, "requests"),
            (UNIQUE, "unique"),
            (CACHE_HITS, "cache_hits"),
            (SENT, "sent"),
            (FAILED, "failed"),
            (TOKENS_PROMPT, "tokens_in"),
            (TOKENS_COMPLETION, "tokens_out"),
        ):
            attributes[name] = sum(getattr(s, field) for s in stages.values())
        attributes[OUTPUT_VALUE] = json.dumps(means)
        attributes[OUTPUT_MIME_TYPE] = "application/json"
        self.span.set_attributes(attributes)


class CallSpan(NullSpan):
    """One backend call's span, entered on the lane's worker thread. Its parent is the stage span of the
    batch's first request, given explicitly (nothing is current on that thread); a batch that holds
    requests of other stages too links to their spans and lists them in `ascend_eval.stages`."""

    def __init__(self, owner: OtelTrace, backend: Any, codec: Codec[Any, Any], requests: Sequence[Request]):
        self.owner = owner
        self.backend = backend
        self.codec = codec
        self.requests = requests
        self.span: Any = None
        self._token: Any = None

    def __enter__(self) -> CallSpan:
        from opentelemetry import context as otel_context
        from opentelemetry import trace as otel
        from opentelemetry.trace import Link, SpanKind

        labels = list(dict.fromkeys(self.codec.group(r)[1] for r in self.requests))
        stage_spans = [s for s in (self.owner.stage_span(label) for label in labels) if s is not None]
        parent = otel.set_span_in_context(stage_spans[0]) if stage_spans else None
        model = str(getattr(self.backend, "model_id", type(self.backend).__name__))
        span_kind, operation, model_attribute = _KINDS.get(
            self.codec.kind, (OI_LLM, self.codec.kind, LLM_MODEL_NAME)
        )
        system = _system(model)
        attributes: dict[str, Any] = {
            OI_SPAN_KIND: span_kind,
            model_attribute: model,
            GEN_AI_OPERATION_NAME: operation,
            GEN_AI_REQUEST_MODEL: model,
            GEN_AI_SYSTEM: system,
            GEN_AI_PROVIDER_NAME: system,
            STAGE: labels[0] if labels else "",
            ROLE: self.requests[0].role if self.requests else "",
            KIND: self.codec.kind,
            BACKEND: type(self.backend).__name__,
            REQUESTS: len(self.requests),
        }
        tags = list(dict.fromkeys(getattr(r, "tag", "") for r in self.requests))
        if tags and tags != [""]:
            attributes[PROMPT] = tags[0] if len(tags) == 1 else tuple(tags)
        if len(labels) > 1:
            attributes[STAGES] = tuple(labels)
        if self.owner.content:
            attributes.update(self._inputs())
        links = [Link(s.get_span_context()) for s in stage_spans[1:]]
        self.span = self.owner.tracer.start_span(
            f"{operation} {model}", context=parent, kind=SpanKind.CLIENT, attributes=attributes, links=links
        )
        # Current on this thread while the backend works: spans it makes itself nest under this one.
        self._token = otel_context.attach(otel.set_span_in_context(self.span))
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None, tb: object) -> None:
        from opentelemetry import context as otel_context

        if error is not None:
            self.failed(error)
        otel_context.detach(self._token)
        self.span.end()

    def failed(self, error: BaseException | str) -> None:
        from opentelemetry.trace import Status, StatusCode

        if isinstance(error, BaseException):
            self.span.record_exception(error)
            message = f"{type(error).__name__}: {error}"
        else:
            message = error
        self.span.set_attributes({FAILED: len(self.requests)})
        self.span.set_status(Status(StatusCode.ERROR, message))

    def answered(self, results: Sequence[Result | str]) -> None:
        from opentelemetry.trace import Status, StatusCode

        codec = self.codec
        prompt = completion = 0
        errors: list[str] = []
        reasons: Counter[str] = Counter()
        for result in results:
            error = result if isinstance(result, str) else codec.error(result)
            if error is not None:
                errors.append(error)
                continue
            t_in, t_out = codec.tokens(result)
            prompt += t_in
            completion += t_out
            reason = codec.finish_reason(result)
            if reason is not None:
                reasons[reason] += 1
        attributes: dict[str, Any] = {
            LLM_TOKEN_COUNT_PROMPT: prompt,
            LLM_TOKEN_COUNT_COMPLETION: completion,
            LLM_TOKEN_COUNT_TOTAL: prompt + completion,
            GEN_AI_USAGE_INPUT_TOKENS: prompt,
            GEN_AI_USAGE_OUTPUT_TOKENS: completion,
            FAILED: len(errors),
        }
        if reasons:
            attributes[GEN_AI_RESPONSE_FINISH_REASONS] = tuple(sorted(reasons))
            attributes.update({f"{FINISH_REASON}.{r}": n for r, n in reasons.items()})
        if self.owner.content:
            attributes.update(self._outputs(results))
        self.span.set_attributes(attributes)
        if errors:
            self.span.set_status(
                Status(StatusCode.ERROR, f"{len(errors)} of {len(results)} requests failed: {errors[0]}")
            )

    def _inputs(self) -> dict[str, Any]:
        shown = [_cut(self.codec.shown_input(r)) for r in self.requests[:CONTENT_ITEMS]]
        out: dict[str, Any] = {
            INPUT_VALUE: json.dumps(shown, ensure_ascii=False),
            INPUT_MIME_TYPE: "application/json",
        }
        if len(self.requests) > CONTENT_ITEMS:
            out[CONTENT_OMITTED] = len(self.requests) - CONTENT_ITEMS
        messages = getattr(self.requests[0], "messages", None) if len(self.requests) == 1 else None
        for i, message in enumerate(messages or ()):
            out[f"{LLM_INPUT_MESSAGES}.{i}.message.role"] = message.role
            out[f"{LLM_INPUT_MESSAGES}.{i}.message.content"] = _cut(message.content)
        return out

    def _outputs(self, results: Sequence[Result | str]) -> dict[str, Any]:
        shown = [
            _cut(r if isinstance(r, str) else (self.codec.error(r) or self.codec.shown_output(r)))
            for r in results[:CONTENT_ITEMS]
        ]
        out: dict[str, Any] = {
            OUTPUT_VALUE: json.dumps(shown, ensure_ascii=False),
            OUTPUT_MIME_TYPE: "application/json",
        }
        if len(results) == 1 and self.codec.kind in JUDGE_MODES:  # a judge's request: a chat turn
            out[f"{LLM_OUTPUT_MESSAGES}.0.message.role"] = "assistant"
            out[f"{LLM_OUTPUT_MESSAGES}.0.message.content"] = shown[0]
        return out


def _cut(text: str) -> str:
    return text if len(text) <= CONTENT_CHARS else text[:CONTENT_CHARS] + "…"


def _system(model_id: str) -> str:
    """The GenAI system of a model id: the endpoint family for a served model ("openai:...", "tei:..."),
    else "ascend_eval" (an in-process runtime).

    >>> _system("openai:qwen@http://localhost:8000/v1"), _system("smollm2-135m@abc")
    ('openai', 'ascend_eval')
    """
    head, sep, _ = model_id.partition(":")
    return head if sep and head in ("openai", "tei") else "ascend_eval"
