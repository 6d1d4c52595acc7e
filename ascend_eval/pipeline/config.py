"""How the RAG pipeline builds contexts and answers for rows that lack them."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, get_args

from ascend_eval.choices import LANGUAGE_SETTINGS
from ascend_eval.errors import ConfigError
from ascend_eval.text.truncate import NIM_CHARACTER_LIMIT

ChunkUnit = Literal["chars", "tokens"]
_UNITS: tuple[ChunkUnit, ...] = get_args(ChunkUnit)
_TRUNCATE = (None, "start", "end")


@dataclass(frozen=True)
class PipelineConfig:
    """Chunking, retrieval, reranking and answer generation settings (one experiment point).

    Validated on construction, so a bad value fails before any model loads.
    """

    chunk_size: int = 512
    """Longest chunk, in `chunk_unit`. Chunks end at a sentence end where one falls in the chunk's second
    half, else at a word boundary (jieba words for Chinese), else exactly at the limit."""
    chunk_overlap: int = 64
    """Text repeated from the end of one chunk at the start of the next, in `chunk_unit` (at most this
    much, starting on a word boundary); 0 for none. Must be smaller than `chunk_size`."""
    chunk_unit: ChunkUnit = "chars"
    """"chars" (code points) or "tokens" (of the embedder's tokenizer, or one passed explicitly)."""
    top_k: int = 10
    """Contexts kept per question (after reranking when a reranker is set)."""
    rerank_candidates: int | None = None
    """How many retrieved chunks go to the reranker; None means max(2 * top_k, 20)."""
    truncate_long_documents: Literal["start", "end"] | None = None
    """NeMo Evaluator's metric_params: documents longer than `max_document_chars` are cut before chunking.
    "end" cuts the end (keeps the first characters), "start" cuts the start (keeps the last); None keeps
    documents whole."""
    max_document_chars: int = NIM_CHARACTER_LIMIT
    """The document length `truncate_long_documents` cuts to: the NIMs' 65,535 characters, as NeMo's."""
    answer_max_tokens: int = 256
    """Upper bound on generated answer tokens."""
    answer_temperature: float = 0.0
    """0 is greedy decoding: the same contexts give the same answer (and share the request cache)."""
    language: str = "auto"
    """Answer prompt language: "auto" (per question, by its share of Chinese characters), "en" or "zh"."""

    def __post_init__(self) -> None:
        for name in ("chunk_size", "top_k", "max_document_chars", "answer_max_tokens"):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                raise ConfigError(f"PipelineConfig.{name}={value!r}; it must be an integer >= 1.")
        if not isinstance(self.chunk_overlap, int) or not 0 <= self.chunk_overlap < self.chunk_size:
            raise ConfigError(
                f"PipelineConfig.chunk_overlap={self.chunk_overlap!r} with chunk_size={self.chunk_size}; "
                "the overlap must be an integer >= 0 and smaller than the chunk size. Lower chunk_overlap."
            )
        if self.chunk_unit not in _UNITS:
            raise ConfigError(f"PipelineConfig.chunk_unit={self.chunk_unit!r}; valid: {list(_UNITS)}.")
        if self.rerank_candidates is not None and (
            not isinstance(self.rerank_candidates, int) or self.rerank_candidates < self.top_k
        ):
            raise ConfigError(
                f"PipelineConfig.rerank_candidates={self.rerank_candidates!r} with top_k={self.top_k}; the "
                "reranker must see at least top_k chunks. Raise rerank_candidates or leave it unset."
            )
        if self.truncate_long_documents not in _TRUNCATE:
            raise ConfigError(
                f"PipelineConfig.truncate_long_documents={self.truncate_long_documents!r}; valid: "
                "'end' (keep the beginning), 'start' (keep the end) or None."
            )
        if self.answer_temperature < 0:
            raise ConfigError(
                f"PipelineConfig.answer_temperature={self.answer_temperature}; it must be >= 0."
            )
        if self.language not in LANGUAGE_SETTINGS:
            raise ConfigError(f"PipelineConfig.language={self.language!r}; valid: {list(LANGUAGE_SETTINGS)}.")

    @property
    def candidates(self) -> int:
        """How many retrieved chunks the reranker scores.

        >>> PipelineConfig(top_k=4).candidates, PipelineConfig(top_k=16).candidates
        (20, 32)
        """
        return self.rerank_candidates if self.rerank_candidates is not None else max(2 * self.top_k, 20)
