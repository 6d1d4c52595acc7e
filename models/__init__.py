"""Model runtimes behind one batched interface per role: judge LLMs, embedders and cross-encoders.

Installed as `ascend_eval.models`. Importing this package is cheap: each backend imports its engine
(torch, transformers, vllm, httpx) only when it is built.
"""

from ascend_eval.models.base import (
    ClassifyRequest,
    ClassifyResult,
    CrossScoreRequest,
    Embedder,
    EmbedRequest,
    GenerateRequest,
    GenerateResult,
    GenerationParams,
    Judge,
    Message,
    Reranker,
)

__all__ = [
    "ClassifyRequest",
    "ClassifyResult",
    "CrossScoreRequest",
    "EmbedRequest",
    "Embedder",
    "GenerateRequest",
    "GenerateResult",
    "GenerationParams",
    "Judge",
    "Message",
    "Reranker",
]
