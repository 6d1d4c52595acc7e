"""One codec per request kind: everything the engine and the cache need to know about that kind.

A codec owns, for its kind of request: the batch it joins (and that batch's label in the stats), the
backend call for a batch, how a failed result says so, the token counts it reports, how its result is
stored in and read back from the cache, and how request and result read in a trace. `codec_for` is the
only place that looks at a request's type; the scheduler, the cache and the tracing hooks ask it and never
switch on the kind themselves. A new kind of request is one new codec here plus its entry in `_CODECS`.
"""

from __future__ import annotations

import json
from abc import ABC, abstractmethod
from collections.abc import Hashable, Sequence
from dataclasses import asdict
from typing import Any, ClassVar, Generic, TypeVar

import numpy as np
from numpy.typing import NDArray

from ascend_eval.models.base import (
    ClassifyRequest,
    ClassifyResult,
    CrossScoreRequest,
    Embedder,
    EmbedRequest,
    GenerateRequest,
    GenerateResult,
    Judge,
    Message,
    Request,
    Reranker,
)

Result = GenerateResult | ClassifyResult | NDArray[np.float32] | float
"""What a backend answers for one request, by kind: text, label probabilities, a vector or a score."""

RequestT = TypeVar("RequestT", GenerateRequest, ClassifyRequest, EmbedRequest, CrossScoreRequest)
ResultT = TypeVar("ResultT")


class Codec(ABC, Generic[RequestT, ResultT]):
    """How the engine batches, calls, checks and accounts one kind of request, and how the cache
    stores its result. Codecs hold no state; one instance per kind serves every request of it."""

    kind: ClassVar[str]
    """The request kind's short name, first in every group key so two kinds never share a batch."""

    @abstractmethod
    def group(self, request: RequestT) -> tuple[Hashable, str]:
        """The batch `request` joins (requests with equal keys go to the backend together), and the
        readable label its sent count is reported under in `RoundStats.batches`."""

    @abstractmethod
    def call(self, backend: Any, requests: Sequence[RequestT]) -> list[ResultT]:
        """One backend call for a batch of requests that share a group key.

        Returns:
            One result per request, in input order. The engine checks the count and turns an exception
            into a failure of this batch alone.
        """

    def error(self, result: ResultT) -> str | None:
        """Why `result` is a failure the backend reported for this one request, or None if it is an
        answer. Failures are neither cached nor scored."""
        return None

    def tokens(self, result: ResultT) -> tuple[int, int]:
        """(prompt tokens, completion tokens) the backend reported for `result`."""
        return 0, 0

    def finish_reason(self, result: ResultT) -> str | None:
        """Why the backend stopped generating `result` ("stop", "length", ...), None for kinds that do
        not generate."""
        return None

    @abstractmethod
    def shown_input(self, request: RequestT) -> str:
        """`request`'s content as readable text, for traces that record prompts (`trace="content"`)."""

    @abstractmethod
    def shown_output(self, result: ResultT) -> str:
        """`result` as readable text, for traces that record outputs (`trace="content"`)."""

    @abstractmethod
    def encode(self, result: ResultT) -> tuple[str, bytes | None]:
        """The result as stored in the cache: JSON text (the `body` column) and optional raw bytes."""

    @abstractmethod
    def decode(self, request: RequestT, body: str | None, blob: bytes | None) -> ResultT:
        """The result `encode` stored, read back for `request`.

        Raises:
            ValueError: the row is not a well-formed answer to `request` (wrong keys or types, labels
                that are not the request's, a vector of the wrong length); the cache counts it as a miss.
        """


class GenerateCodec(Codec[GenerateRequest, GenerateResult]):
    kind = "generate"

    def group(self, request: GenerateRequest) -> tuple[Hashable, str]:
        return (self.kind, request.params), f"judge.generate[{request.tag or 'untagged'}]"

    def call(self, backend: Judge, requests: Sequence[GenerateRequest]) -> list[GenerateResult]:
        return list(backend.generate(requests))

    def error(self, result: GenerateResult) -> str | None:
        return result.error

    def tokens(self, result: GenerateResult) -> tuple[int, int]:
        return result.prompt_tokens, result.completion_tokens

    def finish_reason(self, result: GenerateResult) -> str | None:
        return result.finish_reason

    def shown_input(self, request: GenerateRequest) -> str:
        return _chat_text(request.messages)

    def shown_output(self, result: GenerateResult) -> str:
        return result.text

    def encode(self, result: GenerateResult) -> tuple[str, bytes | None]:
        return _dumps(asdict(result)), None

    def decode(self, request: GenerateRequest, body: str | None, blob: bytes | None) -> GenerateResult:
        data = _object(body, ("text", "finish_reason", "prompt_tokens", "completion_tokens", "error"))
        if data["finish_reason"] not in ("stop", "length", "repetition") or data["error"] is not None:
            raise ValueError(
                f"finish_reason {data['finish_reason']!r} / error {data['error']!r}: not an answer"
            )
        return GenerateResult(
            text=_typed(data, "text", str),
            finish_reason=data["finish_reason"],
            prompt_tokens=_count(data, "prompt_tokens"),
            completion_tokens=_count(data, "completion_tokens"),
        )


class ClassifyCodec(Codec[ClassifyRequest, ClassifyResult]):
    kind = "classify"

    def group(self, request: ClassifyRequest) -> tuple[Hashable, str]:
        return (self.kind, request.labels), f"judge.classify[{request.tag or 'untagged'}]"

    def call(self, backend: Judge, requests: Sequence[ClassifyRequest]) -> list[ClassifyResult]:
        return list(backend.classify(requests))

    def error(self, result: ClassifyResult) -> str | None:
        return result.error

    def tokens(self, result: ClassifyResult) -> tuple[int, int]:
        return result.prompt_tokens, 0

    def shown_input(self, request: ClassifyRequest) -> str:
        return _chat_text(request.messages) + request.answer_prefix

    def shown_output(self, result: ClassifyResult) -> str:
        return _dumps(dict(zip(result.labels, result.probs, strict=False)))

    def encode(self, result: ClassifyResult) -> tuple[str, bytes | None]:
        return _dumps(asdict(result)), None

    def decode(self, request: ClassifyRequest, body: str | None, blob: bytes | None) -> ClassifyResult:
        data = _object(body, ("labels", "probs", "prompt_tokens", "error"))
        if data["labels"] != list(request.labels) or data["error"] is not None:
            raise ValueError(
                f"labels {data['labels']!r} / error {data['error']!r} do not answer {request.labels}"
            )
        probs = _typed(data, "probs", list)
        if len(probs) != len(request.labels) or not all(_is_number(p) and 0.0 <= p <= 1.0 for p in probs):
            raise ValueError(f"probs {probs!r} are not {len(request.labels)} probabilities")
        return ClassifyResult(
            labels=request.labels,
            probs=tuple(float(p) for p in probs),
            prompt_tokens=_count(data, "prompt_tokens"),
        )


class EmbedCodec(Codec[EmbedRequest, NDArray[np.float32]]):
    kind = "embed"

    def group(self, request: EmbedRequest) -> tuple[Hashable, str]:
        # Query and document texts may be embedded differently (e5's "query: " prefix): one call per kind.
        return (self.kind, request.kind), f"embedder.{request.kind}"

    def call(self, backend: Embedder, requests: Sequence[EmbedRequest]) -> list[NDArray[np.float32]]:
        matrix = backend.embed([r.text for r in requests], kind=requests[0].kind)
        return [np.asarray(row, dtype=np.float32) for row in matrix]

    def shown_input(self, request: EmbedRequest) -> str:
        return request.text

    def shown_output(self, result: NDArray[np.float32]) -> str:
        return f"<{int(result.shape[0])}-d vector>"  # the numbers themselves tell a reader nothing

    def encode(self, result: NDArray[np.float32]) -> tuple[str, bytes | None]:
        # The vector as raw float32 bytes: exact, and a quarter of the size of JSON numbers.
        return json.dumps({"dim": int(result.shape[0])}), np.asarray(result, dtype=np.float32).tobytes()

    def decode(self, request: EmbedRequest, body: str | None, blob: bytes | None) -> NDArray[np.float32]:
        dim = _count(_object(body, ("dim",)), "dim")
        if blob is None or len(blob) != 4 * dim or dim == 0:
            raise ValueError(f"{0 if blob is None else len(blob)} bytes for a vector of {dim} float32")
        return np.frombuffer(blob, dtype=np.float32).copy()


class CrossScoreCodec(Codec[CrossScoreRequest, float]):
    kind = "score"

    def group(self, request: CrossScoreRequest) -> tuple[Hashable, str]:
        return (self.kind,), "reranker.score"

    def call(self, backend: Reranker, requests: Sequence[CrossScoreRequest]) -> list[float]:
        return [float(s) for s in backend.score([(r.query, r.passage) for r in requests])]

    def shown_input(self, request: CrossScoreRequest) -> str:
        return _dumps({"query": request.query, "passage": request.passage})

    def shown_output(self, result: float) -> str:
        return repr(float(result))

    def encode(self, result: float) -> tuple[str, bytes | None]:
        return json.dumps({"score": float(result)}), None

    def decode(self, request: CrossScoreRequest, body: str | None, blob: bytes | None) -> float:
        score = _object(body, ("score",))["score"]
        if not _is_number(score):
            raise ValueError(f"score {score!r} is not a number")
        return float(score)


def _dumps(data: dict[str, Any]) -> str:
    """JSON text for the `body` column, non-ASCII kept as is (readable rows, and the format every existing
    cache has). Text with a lone surrogate (valid in Python, not in UTF-8, which is all SQLite stores)
    falls back to `\\uXXXX` escapes, which `json.loads` turns back into the same string."""
    text = json.dumps(data, ensure_ascii=False)
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return json.dumps(data)
    return text


def _chat_text(messages: Sequence[Message]) -> str:
    """A chat as plain text, one `role: content` block per message."""
    return "\n\n".join(f"{m.role}: {m.content}" for m in messages)


def _object(body: str | None, keys: tuple[str, ...]) -> dict[str, Any]:
    """The JSON object in `body`, which must have exactly `keys`."""
    data = json.loads(body) if body else None
    if not isinstance(data, dict) or set(data) != set(keys):
        found = sorted(data) if isinstance(data, dict) else type(data).__name__
        raise ValueError(f"expected a JSON object with keys {sorted(keys)}, found {found}")
    return data


def _typed(data: dict[str, Any], key: str, kind: type) -> Any:
    if not isinstance(data[key], kind):
        raise ValueError(f"{key} is {type(data[key]).__name__}, not {kind.__name__}")
    return data[key]


def _count(data: dict[str, Any], key: str) -> int:
    value = data[key]
    if type(value) is not int or value < 0:
        raise ValueError(f"{key} {value!r} is not a count")
    return value


def _is_number(value: Any) -> bool:
    return type(value) in (int, float)  # not bool, which is an int subclass


_CODECS: dict[type, Codec[Any, Any]] = {
    GenerateRequest: GenerateCodec(),
    ClassifyRequest: ClassifyCodec(),
    EmbedRequest: EmbedCodec(),
    CrossScoreRequest: CrossScoreCodec(),
}


def codec_for(request: Request) -> Codec[Any, Any]:
    """The codec of `request`'s kind: the one place the engine and the cache dispatch on it.

    Raises:
        TypeError: `request` is not one of the request types in `ascend_eval.models.base`.
    """
    try:
        return _CODECS[type(request)]
    except KeyError:
        valid = ", ".join(t.__name__ for t in _CODECS)
        raise TypeError(f"Unknown request type {type(request).__name__}; valid: {valid}.") from None
