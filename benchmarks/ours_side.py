"""ascend-eval's side of the benchmark: the judge wrappers that cap and record, the runs and the replay.

`RecordingJudge` and `RecordingEmbedder` sit between the engine and a backend. They cap generation at the
benchmark's max_tokens (so both tools decode at most the same number of tokens), count requests and
tokens, and write every backend call, grouped exactly as the engine batched it, to a JSONL trace.
`replay` then sends that trace straight into the backend: the time the backend alone needs for our
engine's work, the limit our end-to-end time can approach.
"""

from __future__ import annotations

import dataclasses
import json
import math
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from ascend_eval.models.base import (
    ClassifyRequest,
    ClassifyResult,
    GenerateRequest,
    GenerateResult,
    GenerationParams,
    Message,
    to_jsonable,
)


@dataclasses.dataclass
class Counts:
    """Judge work as the backend saw it."""

    requests: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    embedded_texts: int = 0
    backend_seconds: float = 0.0
    """Wall time spent inside backend calls (judge and embedder)."""


class Trace:
    """Backend calls in order, one JSON line each: {"kind", "requests" | "texts", "seconds"}."""

    def __init__(self, path: Path | None) -> None:
        self.path = path
        self._file = path.open("w", encoding="utf-8") if path is not None else None
        self._lock = threading.Lock()

    def write(self, kind: str, payload: dict[str, Any], seconds: float) -> None:
        if self._file is None:
            return
        with self._lock:
            self._file.write(json.dumps({"kind": kind, **payload, "seconds": seconds}, ensure_ascii=False))
            self._file.write("\n")

    def close(self) -> None:
        if self._file is not None:
            self._file.close()


def _request_json(request: GenerateRequest | ClassifyRequest) -> dict[str, Any]:
    data = to_jsonable(request)
    data.pop("role", None)
    return data


def _messages(items: list[dict[str, str]]) -> tuple[Message, ...]:
    return tuple(Message(**m) for m in items)  # type: ignore[arg-type]


def request_from_json(kind: str, data: dict[str, Any]) -> GenerateRequest | ClassifyRequest:
    """Rebuild a request written by `Trace` (the inverse of `_request_json`)."""
    if kind == "generate":
        params = dict(data["params"])
        params["stop"] = tuple(params.get("stop") or ())
        return GenerateRequest(
            _messages(data["messages"]), GenerationParams(**params), tag=data.get("tag", "")
        )
    return ClassifyRequest(
        _messages(data["messages"]),
        tuple(data["labels"]),
        answer_prefix=data.get("answer_prefix", ""),
        tag=data.get("tag", ""),
    )


class RecordingJudge:
    """A `Judge` that caps max_tokens, counts, traces, and forwards to `inner`."""

    def __init__(self, inner: Any, max_tokens: int, counts: Counts, trace: Trace) -> None:
        self.inner = inner
        self.model_id = inner.model_id
        self.max_tokens = max_tokens
        self.counts = counts
        self.trace = trace

    def _cap(self, request: GenerateRequest) -> GenerateRequest:
        if request.params.max_tokens <= self.max_tokens:
            return request
        params = dataclasses.replace(request.params, max_tokens=self.max_tokens)
        return dataclasses.replace(request, params=params)

    def generate(self, requests: Sequence[GenerateRequest]) -> list[GenerateResult]:
        return self._timed("generate", self.inner.generate, [self._cap(r) for r in requests])

    def classify(self, requests: Sequence[ClassifyRequest]) -> list[ClassifyResult]:
        return self._timed("classify", self.inner.classify, list(requests))

    def _timed(self, kind: str, call: Callable[[list[Any]], list[Any]], requests: list[Any]) -> list[Any]:
        """Run one backend call, count its requests and tokens, and write it to the trace."""
        started = time.perf_counter()
        out = call(requests)
        seconds = time.perf_counter() - started
        self._count(len(requests), out, seconds)
        self.trace.write(kind, {"requests": [_request_json(r) for r in requests]}, seconds)
        return out

    def _count(self, n: int, results: Sequence[Any], seconds: float) -> None:
        self.counts.requests += n
        self.counts.backend_seconds += seconds
        for r in results:
            self.counts.prompt_tokens += r.prompt_tokens
            # A classify answer is read from one forward pass: no generated token (a server row's
            # /metrics counts the one token the server decodes).
            self.counts.completion_tokens += getattr(r, "completion_tokens", 0)

    def close(self) -> None:
        close = getattr(self.inner, "close", None)
        if close is not None:
            close()


class RecordingEmbedder:
    """An `Embedder` that counts, traces and forwards to `inner`."""

    def __init__(self, inner: Any, counts: Counts, trace: Trace) -> None:
        self.inner = inner
        self.model_id = inner.model_id
        self.counts = counts
        self.trace = trace

    def embed(self, texts: Sequence[str], *, kind: str = "document") -> np.ndarray:
        started = time.perf_counter()
        out = self.inner.embed(texts, kind=kind)
        seconds = time.perf_counter() - started
        self.counts.embedded_texts += len(texts)
        self.counts.backend_seconds += seconds
        self.trace.write("embed", {"texts": list(texts), "embed_kind": kind}, seconds)
        return out


def replay(trace_path: Path, judge: Any, embedder: Any) -> dict[str, float]:
    """Send every recorded backend call again, in order and batched as recorded; the backend's time alone.

    Returns:
        {"seconds": total wall time, "calls": backend calls replayed, "recorded_seconds": what the same
        calls took inside the end-to-end run}.
    """
    calls: list[tuple[str, list[Any], str]] = []
    recorded = 0.0
    with trace_path.open(encoding="utf-8") as f:
        for line in f:
            entry = json.loads(line)
            recorded += entry["seconds"]
            if entry["kind"] == "embed":
                calls.append(("embed", entry["texts"], entry["embed_kind"]))
            else:
                kind = entry["kind"]
                calls.append((kind, [request_from_json(kind, r) for r in entry["requests"]], ""))
    started = time.perf_counter()
    for kind, items, embed_kind in calls:
        if kind == "generate":
            judge.generate(items)
        elif kind == "classify":
            judge.classify(items)
        else:
            embedder.embed(items, kind=embed_kind)
    return {"seconds": time.perf_counter() - started, "calls": len(calls), "recorded_seconds": recorded}


def run_ours(
    data: Any,
    metrics: list[str],
    judge: Any,
    embedder: Any,
    *,
    max_tokens: int,
    trace_path: Path | None,
    chunk_size: int,
    dedupe: bool,
    judge_mode: str,
    prompt_layout: str = "auto",
) -> dict[str, Any]:
    """One timed `evaluate()` with caches off; the models are loaded and warm before this is called."""
    import ascend_eval

    counts = Counts()
    trace = Trace(trace_path)
    recording_judge = RecordingJudge(judge, max_tokens, counts, trace)
    recording_embedder = RecordingEmbedder(embedder, counts, trace)
    started = time.perf_counter()
    try:
        result = ascend_eval.evaluate(
            data,
            metrics,
            judge=recording_judge,
            embedder=recording_embedder,
            cache_dir=False,
            progress=False,
            chunk_size=chunk_size,
            dedupe=dedupe,
            judge_mode=judge_mode,
            prompt_layout=prompt_layout,
        )
    finally:
        trace.close()
    wall = time.perf_counter() - started
    nan: dict[str, dict[str, int]] = {}
    nan_mask: dict[str, list[bool]] = {}
    means: dict[str, float | None] = {}
    for name in metrics:
        key = result_key(result.metrics, name)
        nan[name] = {_short_reason(k): v for k, v in result.nan_reasons(key).items()}
        scores = result[key]
        nan_mask[name] = [math.isnan(v) for v in scores]
        scored = [v for v in scores if not math.isnan(v)]
        means[name] = sum(scored) / len(scored) if scored else None
    return {
        "wall_seconds": wall,
        "judge_requests": counts.requests,
        "prompt_tokens": counts.prompt_tokens,
        "completion_tokens": counts.completion_tokens,
        "embedded_texts": counts.embedded_texts,
        "backend_seconds": counts.backend_seconds,
        "engine_rounds": len(result.rounds),
        "requests_asked": sum(r.requests for r in result.rounds),
        "requests_sent": sum(r.sent for r in result.rounds),
        "nan": nan,
        "nan_mask": nan_mask,
        "means": means,
    }


def result_key(keys: Sequence[str], name: str) -> str:
    """The result column of metric `name` (noise_sensitivity's column carries its mode)."""
    return next(k for k in keys if k == name or k.startswith(name + "("))


def _short_reason(reason: str) -> str:
    """A NaN reason without the sample-specific detail, so that equal causes count together."""
    head = reason.split(":", 1)[0] if not reason.startswith("backend_error") else reason[:80]
    return head.strip() or reason[:80]


def warm_up(judge: Any, embedder: Any) -> None:
    """Load the weights and run one small call of each kind, outside the timed run."""
    chat = (Message("user", "Is the sky blue? Answer 1 for yes, 0 for no."),)
    judge.generate([GenerateRequest(chat, GenerationParams(max_tokens=4))])
    judge.classify([ClassifyRequest(chat, ("0", "1"))])
    embedder.embed(["warm-up"], kind="document")
