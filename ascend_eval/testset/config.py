"""The settings of one test-set generation, checked when they are built (before any file is read or model
loads), and the share of rows each query kind gets."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ascend_eval.choices import LANGUAGE_SETTINGS
from ascend_eval.data.sample import did_you_mean
from ascend_eval.errors import ConfigError

QUERY_KINDS = ("single_hop", "multi_hop", "abstract")
"""The kinds of question, in the order rows of one round are taken:

- `single_hop`: one chunk holds the whole answer.
- `multi_hop`: two or three chunks that are close in embedding space (those sharing a named entity with
  the first chunk preferred); the answer needs a fact from each.
- `abstract`: a theme over several neighbouring chunks (a comparison, a trend, a summary), not one fact.
"""

DEFAULT_KINDS: Mapping[str, float] = {"single_hop": 0.5, "multi_hop": 0.25, "abstract": 0.25}


def parse_kinds(text: str) -> dict[str, float]:
    """`--kinds` as a mapping: "single_hop=0.5,multi_hop=0.5" gives those weights; a kind left out gets 0.

    >>> parse_kinds("single_hop=0.6, abstract=0.4")
    {'single_hop': 0.6, 'abstract': 0.4}

    Raises:
        ConfigError: an item is not KIND=NUMBER.
    """
    weights: dict[str, float] = {}
    for item in text.replace(" ", "").split(","):
        if not item:
            continue
        name, sep, value = item.partition("=")
        try:
            weights[name] = float(value) if sep else float("nan")
        except ValueError:
            weights[name] = float("nan")
        if math.isnan(weights[name]):
            raise ConfigError(
                f"--kinds item {item!r} is not KIND=WEIGHT. Write e.g. "
                "--kinds single_hop=0.5,multi_hop=0.25,abstract=0.25."
            )
    return weights


def allocate(total: int, weights: Mapping[str, float]) -> dict[str, int]:
    """`total` split in proportion to `weights` (largest remainders; ties go to the kind listed first).

    >>> allocate(10, {"single_hop": 0.5, "multi_hop": 0.25, "abstract": 0.25})
    {'single_hop': 5, 'multi_hop': 3, 'abstract': 2}
    >>> allocate(3, {"a": 1.0, "b": 0.0})
    {'a': 3, 'b': 0}
    """
    whole = sum(weights.values())
    exact = {k: total * w / whole for k, w in weights.items()} if whole > 0 else dict.fromkeys(weights, 0.0)
    out = {k: math.floor(v) for k, v in exact.items()}
    order = list(weights)
    left = total - sum(out.values())
    for k in sorted(order, key=lambda k: (-(exact[k] - out[k]), order.index(k)))[:left]:
        out[k] += 1
    return out


def _weights(kinds: Mapping[str, Any]) -> dict[str, float]:
    if not isinstance(kinds, Mapping) or not kinds:
        raise ConfigError(
            f"kinds={kinds!r} must be a mapping of query kind to weight, e.g. {dict(DEFAULT_KINDS)}."
        )
    weights = dict.fromkeys(QUERY_KINDS, 0.0)
    for name, value in kinds.items():
        if name not in QUERY_KINDS:
            raise ConfigError(
                f"Unknown query kind {name!r} in kinds. Valid kinds: {list(QUERY_KINDS)}."
                f"{did_you_mean(str(name), QUERY_KINDS)}"
            )
        if isinstance(value, bool) or not isinstance(value, int | float) or not 0 <= value < math.inf:
            raise ConfigError(f"kinds[{name!r}]={value!r}; a weight must be a number >= 0.")
        weights[name] = float(value)
    whole = sum(weights.values())
    if whole <= 0:
        raise ConfigError(f"kinds={dict(kinds)!r} gives every kind weight 0; give at least one a weight > 0.")
    return {k: w / whole for k, w in weights.items()}


def _personas(personas: Sequence[str] | None) -> tuple[str, ...]:
    if personas is None:
        return ()
    if isinstance(personas, str) or not isinstance(personas, Sequence):
        raise ConfigError(
            f"personas={str(personas)[:60]!r} must be a list of short descriptions, e.g. "
            "['a new employee reading the handbook', 'a customer who wants a refund']."
        )
    out = []
    for i, persona in enumerate(personas):
        if not isinstance(persona, str) or not persona.strip():
            raise ConfigError(f"personas[{i}]={persona!r}; each persona must be a non-empty string.")
        out.append(" ".join(persona.split()))
    return tuple(out)


@dataclass(frozen=True)
class TestsetConfig:
    """What to generate and how to filter it. Validated on construction: a bad value fails before any file
    is read or model loads. `kinds` is stored normalised (weights summing to 1, every kind present)."""

    __test__ = False  # a library class, not a pytest test class

    size: int
    """Rows wanted; generation goes on in rounds until this many pass every filter or the candidates run
    out."""
    kinds: Mapping[str, float] = field(default_factory=lambda: dict(DEFAULT_KINDS))
    """Share of rows per query kind (`QUERY_KINDS`); normalised, a kind left out gets 0."""
    personas: Sequence[str] | None = None
    """Short descriptions of who asks; each candidate is asked as one of them (chosen by the seed)."""
    language: str = "auto"
    """"auto" (each question in its source document's language), "en" or "zh"."""
    seed: int = 0
    """Chooses and orders the candidates: the same seed, corpus and models give the same rows, and a
    rerun asks the judge the same requests (answered from the request cache)."""
    chunk_size: int = 512
    """Longest chunk in characters (the pipeline's chunker: ends at a sentence end where it can)."""
    chunk_overlap: int = 0
    """Characters repeated from one chunk at the start of the next."""
    duplicate_threshold: float = 0.95
    """A question whose embedding's cosine with an accepted question is above this is a near-duplicate."""
    max_tokens: int = 512
    """Upper bound on the tokens of each generated question-and-answer JSON."""

    def __post_init__(self) -> None:
        for name in ("size", "chunk_size", "max_tokens"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ConfigError(f"{name}={value!r}; it must be an integer >= 1.")
        if isinstance(self.seed, bool) or not isinstance(self.seed, int):
            raise ConfigError(f"seed={self.seed!r}; it must be an integer.")
        if not isinstance(self.chunk_overlap, int) or not 0 <= self.chunk_overlap < self.chunk_size:
            raise ConfigError(
                f"chunk_overlap={self.chunk_overlap!r} with chunk_size={self.chunk_size}; the overlap must "
                "be an integer >= 0 and smaller than the chunk size."
            )
        if self.language not in LANGUAGE_SETTINGS:
            raise ConfigError(f"language={self.language!r}; valid: {list(LANGUAGE_SETTINGS)}.")
        threshold = self.duplicate_threshold
        if isinstance(threshold, bool) or not isinstance(threshold, int | float) or not 0 < threshold <= 1:
            raise ConfigError(f"duplicate_threshold={threshold!r}; it must be a cosine in (0, 1].")
        object.__setattr__(self, "kinds", _weights(self.kinds))
        object.__setattr__(self, "personas", _personas(self.personas))

    @property
    def active_kinds(self) -> tuple[str, ...]:
        """The kinds with a weight above 0, in `QUERY_KINDS` order."""
        return tuple(k for k in QUERY_KINDS if self.kinds[k] > 0)
