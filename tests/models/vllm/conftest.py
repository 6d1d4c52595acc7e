"""Fixtures for the vLLM backend tests: the real SmolLM2 judge checkpoint, converted once per session.

These tests run for real where vLLM is installed (`make test` runs them in .venv-vllm, in-process:
VLLM_ENABLE_V1_MULTIPROCESSING=0) and skip elsewhere. Every engine gets a small KV cache, as the CI machine
has little memory, and runs on the CPU in float32 like the torch backends it is compared with.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

# In-process engines start in seconds instead of ~40 s, and need no `__main__` guard.
os.environ.setdefault("VLLM_ENABLE_V1_MULTIPROCESSING", "0")

ENGINE = {"device": "cpu", "dtype": "float32", "kv_cache_memory_bytes": 256 << 20, "enforce_eager": True}
"""Engine settings shared by the tests' vLLM runtimes."""


def needs_vllm() -> None:
    pytest.importorskip("vllm", reason="vLLM is not installed here; `make test` runs these in .venv-vllm")


@pytest.fixture(scope="session")
def smollm2_checkpoint(smollm2_gguf_file: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """SmolLM2-135M-Instruct converted from the shipped GGUF file by `checkpoint_from_gguf`, once."""
    needs_vllm()
    from ascend_eval.models.weights.gguf import checkpoint_from_gguf

    return checkpoint_from_gguf(smollm2_gguf_file, tmp_path_factory.mktemp("vllm-checkpoints"))


@pytest.fixture(scope="session")
def cross_encoder_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A tiny BERT cross-encoder (one label) with one attention head of width 64: vLLM's CPU attention does
    not support the 16-wide heads of the default tiny BERT."""
    import transformers

    from tests.tiny_models import save_tiny_bert

    return save_tiny_bert(
        tmp_path_factory.mktemp("tiny-cross-encoder"),
        transformers.BertForSequenceClassification,
        hidden_size=64,
        num_attention_heads=1,
        intermediate_size=128,
        num_labels=1,
        initializer_range=0.5,  # wide random weights, so that the pairs' scores spread out
    )
