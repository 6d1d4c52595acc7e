"""TorchReranker on a tiny cross-encoder built from config (shape, order, dtype, activation), and the WARNING
for directories that are not cross-encoders."""

from __future__ import annotations

import logging
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("sentence_transformers")
torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

from ascend_eval.models.base import Reranker  # noqa: E402
from ascend_eval.models.errors import ConfigError, DataError  # noqa: E402
from ascend_eval.models.reranker.cross_encoder import TorchReranker, TorchRerankerConfig  # noqa: E402
from tests.tiny_models import minilm_dir, save_tiny_bert  # noqa: E402

PAIRS = [
    ("What is the capital of France?", "Paris is the capital and largest city of France."),
    ("What is the capital of France?", "Bananas are rich in potassium."),
    ("北京是哪个国家的首都？", "北京是中国的首都。"),
    ("short", ""),
    ("A much longer question that goes on for a while so that it is sorted first by length?", "Yes."),
]
LOGGER = "ascend_eval.models.reranker.cross_encoder"


@pytest.fixture(scope="module")
def tiny_cross_encoder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return save_tiny_bert(
        tmp_path_factory.mktemp("tiny-ce"), transformers.BertForSequenceClassification, num_labels=1
    )


@pytest.fixture(autouse=True)
def _private_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ASCEND_EVAL_HOME", str(tmp_path / "ascend-eval-home"))


def make(path: Path, **kwargs) -> TorchReranker:
    return TorchReranker(TorchRerankerConfig(path, device="cpu", **kwargs))


def test_shape_dtype_and_protocol(tiny_cross_encoder: Path, caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, logger=LOGGER):
        reranker = make(tiny_cross_encoder)
    assert not [r for r in caplog.records if r.name == LOGGER]  # a real cross-encoder: no warning
    assert isinstance(reranker, Reranker) and reranker.trained
    assert reranker.model_id.startswith("tiny-ce") and reranker.device.type == "cpu"
    scores = reranker.score(PAIRS)
    assert scores.shape == (len(PAIRS),) and scores.dtype == np.float32
    assert ((scores > 0) & (scores < 1)).all()


def test_order_preserved_across_batch_sizes(tiny_cross_encoder: Path) -> None:
    one = make(tiny_cross_encoder, batch_size=1).score(PAIRS)
    many = make(tiny_cross_encoder, batch_size=64).score(PAIRS)
    np.testing.assert_allclose(one, many, atol=1e-5)
    np.testing.assert_allclose(
        make(tiny_cross_encoder, batch_size=2).score(PAIRS[::-1])[::-1], many, atol=1e-5
    )
    alone = [make(tiny_cross_encoder).score([pair])[0] for pair in PAIRS[:2]]
    np.testing.assert_allclose(alone, many[:2], atol=1e-5)


def test_activation(tiny_cross_encoder: Path) -> None:
    probs = make(tiny_cross_encoder, activation="sigmoid").score(PAIRS)
    logits = make(tiny_cross_encoder, activation="none").score(PAIRS)
    assert logits.dtype == np.float32
    np.testing.assert_allclose(probs, 1 / (1 + np.exp(-logits)), atol=1e-6)
    assert np.ptp(logits) > 0  # pairs are told apart, even by random weights


def test_empty_and_bad_pairs(tiny_cross_encoder: Path) -> None:
    reranker = make(tiny_cross_encoder)
    empty = reranker.score([])
    assert empty.shape == (0,) and empty.dtype == np.float32
    with pytest.raises(DataError, match="pair 1"):
        reranker.score([("q", "p"), ("only one",)])  # type: ignore[list-item]
    with pytest.raises(DataError, match="pair 0"):
        reranker.score([("q", 3)])  # type: ignore[list-item]


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"activation": "softmax"}, "activation"),
        ({"batch_size": 0}, "batch_size"),
        ({"max_length": -1}, "max_length"),
    ],
)
def test_config_validation(kwargs: dict, match: str, tiny_cross_encoder: Path) -> None:
    with pytest.raises(ConfigError, match=match):
        TorchRerankerConfig(tiny_cross_encoder, **kwargs)


def test_multi_label_head_is_refused(tmp_path: Path) -> None:
    path = save_tiny_bert(tmp_path / "nli", transformers.BertForSequenceClassification, num_labels=3)
    with pytest.raises(ConfigError, match="3 output labels"):
        make(path)


def test_plain_encoder_warns_that_scores_are_meaningless(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    path = save_tiny_bert(tmp_path / "plain-bert", transformers.BertModel)
    with caplog.at_level(logging.WARNING, logger=LOGGER):
        reranker = make(path)
    warnings = [r for r in caplog.records if r.name == LOGGER and r.levelno == logging.WARNING]
    assert len(warnings) == 1 and "meaningless" in warnings[0].getMessage()
    assert not reranker.trained
    assert reranker.score(PAIRS[:2]).shape == (2,)


@pytest.mark.slow
def test_minilm_warns_that_scores_are_meaningless(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, logger=LOGGER):
        reranker = make(minilm_dir())
    warnings = [r.getMessage() for r in caplog.records if r.name == LOGGER and r.levelno == logging.WARNING]
    assert len(warnings) == 1
    assert "not a cross-encoder" in warnings[0] and "meaningless" in warnings[0] and "trained" in warnings[0]
    scores = reranker.score(PAIRS)
    assert scores.shape == (len(PAIRS),) and scores.dtype == np.float32
