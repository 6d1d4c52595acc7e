"""Contracts between the engine and the model runtimes: typed requests, results and one protocol per role.

Every backend accepts any number of requests, may reorder them internally (longest first, to pad less),
and returns results in input order. Requests are frozen and hashable so that the engine can drop
duplicates and key its cache on their content.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import Any, Literal, Protocol, runtime_checkable

import numpy as np
from numpy.typing import NDArray

from ascend_eval.models.errors import ConfigError

Role = Literal["judge", "embedder", "reranker"]
EmbedKind = Literal["query", "document"]
FinishReason = Literal["stop", "length", "repetition", "error"]
"""Why generation ended: a stop (EOS, grammar end, stop string), the token cap, a loop the backend cut
(`TorchJudgeConfig.loop_guard`), or a failure."""


def repeats(tokens: Sequence[Any], min_tokens: int, copies: int = 3) -> bool:
    """Whether `tokens` end in one run repeated back to back at least `copies` times, the repeats
    together at least `min_tokens` long (a degenerate loop): the tail is periodic. Token ids, or the
    characters of a text (a str is a sequence too); a tail cut inside a repeat still counts.

    >>> repeats([7, 1, 2, 3, 1, 2, 3, 1, 2, 3], min_tokens=9)
    True
    >>> repeats([7, 1, 2, 3, 1, 2, 3, 1, 2, 3], min_tokens=10)
    False
    >>> repeats([1, 2, 3, 1, 2, 4, 1, 2, 3], min_tokens=3)
    False
    >>> repeats([5, 6] * 12, min_tokens=24)
    True
    """
    n = len(tokens)
    if min_tokens < 1 or n < min_tokens:
        return False
    for period in range(1, n // copies + 1):
        if tokens[n - 1 - period] != tokens[n - 1]:  # cheap filter before comparing whole runs
            continue
        span = max(min_tokens, copies * period)
        if span > n:
            break
        # A tail of `span` tokens is `period`-periodic when shifting it by `period` changes nothing.
        if tokens[n - span : n - period] == tokens[n - span + period : n]:
            return True
    return False


LOOP_GUARD = 48
"""Default of the judges' `loop_guard`: stop a row once its output ends in the same run of tokens three
times in a row and the repeats cover at least this many tokens."""


def repetition_detection(loop_guard: int) -> dict[str, int] | None:
    """A loop guard of `loop_guard` tokens as vLLM's own repetition detection (`SamplingParams.
    repetition_detection`, also a field of its OpenAI server's requests): a run of `loop_guard` / 3 to
    `loop_guard` tokens seen three times in a row ends the request with finish_reason "repetition". A run
    shorter than `loop_guard` / 3 is caught at a multiple of it; a loop of a run longer than `loop_guard`
    goes on to max_tokens (vLLM checks every run length at every step, so the range is kept small), where
    the prompts still read it as a loop (`prompts.base.LOOP_CHARS`). None when `loop_guard` is 0 (off).

    >>> repetition_detection(48)
    {'min_pattern_size': 16, 'max_pattern_size': 48, 'min_count': 3}
    >>> repetition_detection(0) is None
    True
    """
    if loop_guard <= 0:
        return None
    return {"min_pattern_size": max(1, -(-loop_guard // 3)), "max_pattern_size": loop_guard, "min_count": 3}


@dataclass(frozen=True)
class Message:
    """One chat message."""

    role: Literal["system", "user", "assistant"]
    content: str


@dataclass(frozen=True)
class GenerationParams:
    """How to decode one `GenerateRequest`. Requests with equal params are batched together."""

    max_tokens: int = 512
    """Upper bound on generated tokens; output cut there is reported with finish_reason "length"."""
    temperature: float = 0.0
    """0 means greedy decoding (the default: the same inputs give the same scores)."""
    top_p: float = 1.0
    """Nucleus sampling mass; only read when temperature > 0."""
    seed: int = 0
    """Sampling seed; with temperature > 0 each request is sampled from its own seeded generator."""
    stop: tuple[str, ...] = ()
    """Strings that end generation (not included in the text)."""
    json_schema: str | None = None
    """A JSON Schema (as canonical JSON text) that constrains the output, or None for free text."""

    def __post_init__(self) -> None:
        if self.max_tokens < 1:
            raise ConfigError(f"max_tokens must be >= 1, got {self.max_tokens}.")
        if self.temperature < 0:
            raise ConfigError(f"temperature must be >= 0, got {self.temperature}.")
        if not 0 < self.top_p <= 1:
            raise ConfigError(f"top_p must be in (0, 1], got {self.top_p}.")

    @property
    def greedy(self) -> bool:
        return self.temperature == 0.0

    @property
    def schema(self) -> dict[str, Any] | None:
        return None if self.json_schema is None else json.loads(self.json_schema)

    @staticmethod
    def schema_text(schema: dict[str, Any]) -> str:
        """Compact JSON text of a schema. Key order is kept, not sorted: constrained decoders emit object
        fields in schema order, so a prompt that wants a reason before its verdict must get it that way.
        Schemas come from pydantic models, whose output order is stable, so equal schemas hash equally."""
        return json.dumps(schema, ensure_ascii=False, separators=(",", ":"))


@dataclass(frozen=True)
class GenerateRequest:
    """Generate free or schema-constrained text from a chat."""

    messages: tuple[Message, ...]
    params: GenerationParams = field(default_factory=GenerationParams)
    tag: str = ""
    """Which prompt produced this request (`name@version`); part of the cache key and of provenance."""

    role: Role = field(default="judge", init=False)


@dataclass(frozen=True)
class ClassifyRequest:
    """Pick one of a fixed set of labels from the next-token distribution after the chat.

    The judge renders the chat with the assistant turn opened, appends `answer_prefix`, and reads the
    probabilities of each label's first token at the next position: one forward pass, no decoding.
    """

    messages: tuple[Message, ...]
    labels: tuple[str, ...]
    answer_prefix: str = ""
    tag: str = ""

    role: Role = field(default="judge", init=False)

    def __post_init__(self) -> None:
        if len(self.labels) < 2 or len(set(self.labels)) != len(self.labels):
            raise ConfigError(f"ClassifyRequest needs at least two distinct labels, got {self.labels!r}.")


@dataclass(frozen=True)
class EmbedRequest:
    """Embed one text. The engine gathers every text of a round into one `Embedder.embed` call per kind."""

    text: str
    kind: EmbedKind = "document"

    role: Role = field(default="embedder", init=False)


@dataclass(frozen=True)
class CrossScoreRequest:
    """Score how well `passage` matches `query` with a cross-encoder."""

    query: str
    passage: str

    role: Role = field(default="reranker", init=False)


Request = GenerateRequest | ClassifyRequest | EmbedRequest | CrossScoreRequest


@dataclass(frozen=True)
class GenerateResult:
    """The judge's text for one `GenerateRequest`."""

    text: str
    finish_reason: FinishReason
    prompt_tokens: int = 0
    completion_tokens: int = 0
    error: str | None = None
    """Set (with finish_reason "error") when this one request failed after the backend's retries."""

    @classmethod
    def failed(cls, error: str) -> GenerateResult:
        return cls(text="", finish_reason="error", error=error)


@dataclass(frozen=True)
class ClassifyResult:
    """Probabilities over a `ClassifyRequest`'s labels (same order), summing to 1."""

    labels: tuple[str, ...]
    probs: tuple[float, ...]
    prompt_tokens: int = 0
    error: str | None = None

    @property
    def label(self) -> str:
        """The most probable label (the first one on a tie)."""
        return self.labels[int(np.argmax(self.probs))]

    @classmethod
    def failed(cls, labels: tuple[str, ...], error: str) -> ClassifyResult:
        return cls(labels=labels, probs=(), error=error)


def to_jsonable(obj: Any) -> Any:
    """A request or result as plain JSON data (for cache keys, the cache itself and traces)."""
    return asdict(obj)


@runtime_checkable
class Judge(Protocol):
    """A judge LLM. Both calls accept any number of requests and answer in input order."""

    model_id: str
    """Identifies the weights (name plus revision or content hash); part of every cache key."""

    def generate(self, requests: Sequence[GenerateRequest]) -> list[GenerateResult]: ...

    def classify(self, requests: Sequence[ClassifyRequest]) -> list[ClassifyResult]: ...


@runtime_checkable
class Embedder(Protocol):
    """A text embedding model."""

    model_id: str

    def embed(self, texts: Sequence[str], *, kind: EmbedKind = "document") -> NDArray[np.float32]:
        """Returns float32 `[len(texts), dim]`, each row L2-normalised, in input order."""
        ...


@runtime_checkable
class Reranker(Protocol):
    """A cross-encoder that scores (query, passage) pairs."""

    model_id: str

    def score(self, pairs: Sequence[tuple[str, str]]) -> NDArray[np.float32]:
        """Returns float32 `[len(pairs)]` in input order."""
        ...
