"""`VllmEmbedder` and `VllmReranker` against the torch backends on the same directories: MiniLM embeddings
(cosine >= 0.999 per text, per kind) and a tiny seeded BERT cross-encoder's scores."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from ascend_eval.models.errors import ConfigError
from ascend_eval.models.factory import resolve
from ascend_eval.models.lazy import LazyEmbedder
from ascend_eval.models.weights.paths import local_model_id
from tests.models.vllm.conftest import ENGINE, needs_vllm
from tests.tiny_models import minilm_dir

needs_vllm()

from ascend_eval.models.embedder.sentence_transformers import TorchEmbedder, TorchEmbedderConfig  # noqa: E402
from ascend_eval.models.embedder.vllm import VllmEmbedder, VllmEmbedderConfig  # noqa: E402
from ascend_eval.models.reranker.cross_encoder import TorchReranker, TorchRerankerConfig  # noqa: E402
from ascend_eval.models.reranker.vllm import VllmReranker, VllmRerankerConfig  # noqa: E402

pytestmark = pytest.mark.slow

TEXTS = [
    "Paris is the capital of France.",
    "The Nile is the longest river in Africa.",
    "长江是中国最长的河流。",
    "",
    "word " * 400,  # beyond MiniLM's 256 tokens: truncated by both backends alike
]
PAIRS = [
    ("Where is Paris?", "Paris is the capital of France."),
    ("Where is Paris?", "Bananas are yellow."),
    ("Which river is longest?", "The Nile is the longest river in Africa, flowing north."),
    ("长江在哪里？", "长江是中国最长的河流。"),
]
SCORE_TOL = 1e-4
"""Largest absolute difference allowed between the backends' sigmoid scores."""


@pytest.fixture(scope="module")
def minilm() -> Path:
    return minilm_dir()


@pytest.fixture(scope="module")
def vllm_embedder(minilm: Path) -> Iterator[VllmEmbedder]:
    embedder = VllmEmbedder(VllmEmbedderConfig(minilm, query_prompt="query: ", **ENGINE))
    yield embedder
    embedder.close()


def test_embeddings_match_sentence_transformers(vllm_embedder: VllmEmbedder, minilm: Path) -> None:
    torch_embedder = TorchEmbedder(TorchEmbedderConfig(minilm, device="cpu", query_prompt="query: "))
    assert vllm_embedder.model_id == torch_embedder.model_id == local_model_id(minilm)
    assert vllm_embedder.max_seq_length == torch_embedder.max_seq_length == 256
    for kind in ("document", "query"):
        ours = vllm_embedder.embed(TEXTS, kind=kind)
        theirs = torch_embedder.embed(TEXTS, kind=kind)
        assert ours.dtype == np.float32 and ours.shape == theirs.shape == (len(TEXTS), 384)
        np.testing.assert_allclose(np.linalg.norm(ours, axis=1), 1.0, atol=1e-5)
        cosine = np.sum(ours * theirs, axis=1)
        print(f"\n{kind}: lowest cosine vLLM vs sentence-transformers {cosine.min():.7f}")
        assert cosine.min() >= 0.999
    # The prompt is applied: a query differs from the same text as a document.
    assert not np.allclose(vllm_embedder.embed(TEXTS[:1], kind="query"), vllm_embedder.embed(TEXTS[:1]))
    assert vllm_embedder.embed([]).shape == (0, 384)


def test_an_embedder_spec_selects_vllm(minilm: Path) -> None:
    lazy = resolve(str(minilm), "embedder", device="cpu", backend="vllm")
    assert isinstance(lazy, LazyEmbedder) and not lazy.loaded
    assert lazy.model_id == local_model_id(minilm)


def test_cross_encoder_scores_match_sentence_transformers(cross_encoder_dir: Path) -> None:
    theirs = TorchReranker(TorchRerankerConfig(cross_encoder_dir, device="cpu")).score(PAIRS)
    reranker = VllmReranker(VllmRerankerConfig(cross_encoder_dir, **ENGINE))
    try:
        assert reranker.model_id == local_model_id(cross_encoder_dir)
        ours = reranker.score(PAIRS)
        assert reranker.score([]).shape == (0,)
    finally:
        reranker.close()
    assert ours.dtype == np.float32 and ours.shape == (len(PAIRS),)
    print(f"\nlargest cross-encoder score difference vLLM vs torch: {np.abs(ours - theirs).max():.2e}")
    np.testing.assert_allclose(ours, theirs, atol=SCORE_TOL)
    assert np.ptp(ours) > 1e-3  # the pairs score differently: the comparison is not between constants


def test_reranker_refuses_a_model_without_a_scoring_head(minilm: Path) -> None:
    with pytest.raises(ConfigError, match="not a cross-encoder"):
        VllmReranker(VllmRerankerConfig(minilm, **ENGINE))
    assert resolve(str(minilm), "reranker", device="cpu", backend="vllm").model_id == local_model_id(minilm)
