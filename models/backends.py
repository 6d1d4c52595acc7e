"""Every model backend, imported: each module registers its builders next to its runtime class
(`ascend_eval.models.registry.register`), so `BUILDERS` holds them all.

Importing this module imports no engine: the backend modules import torch, transformers,
sentence-transformers and vLLM only when one of their runtimes loads its weights.

>>> sorted(backend for role, backend in BUILDERS if role == "reranker")
['openai', 'tei', 'torch', 'vllm']
"""

from __future__ import annotations

from ascend_eval.models.embedder import openai as embedder_openai
from ascend_eval.models.embedder import sentence_transformers as embedder_torch
from ascend_eval.models.embedder import tei as embedder_tei
from ascend_eval.models.embedder import vllm as embedder_vllm
from ascend_eval.models.judge import openai as judge_openai
from ascend_eval.models.judge import vllm as judge_vllm
from ascend_eval.models.judge.torch import judge as judge_torch
from ascend_eval.models.registry import registered
from ascend_eval.models.reranker import cross_encoder as reranker_torch
from ascend_eval.models.reranker import openai as reranker_openai
from ascend_eval.models.reranker import tei as reranker_tei
from ascend_eval.models.reranker import vllm as reranker_vllm

__all__ = ["BACKEND_MODULES", "BUILDERS"]

BACKEND_MODULES = (
    judge_openai,
    judge_torch,
    judge_vllm,
    embedder_openai,
    embedder_tei,
    embedder_torch,
    embedder_vllm,
    reranker_openai,
    reranker_tei,
    reranker_torch,
    reranker_vllm,
)
"""The modules whose builders `BUILDERS` holds: adding a backend is adding its module here."""

BUILDERS = registered()
"""Every runtime `build` makes, by (role, backend)."""
