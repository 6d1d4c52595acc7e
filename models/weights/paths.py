"""Where converted model checkpoints are cached, and how local models are named in cache keys."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

from ascend_eval.models.errors import ConfigError

CACHE_ENV = "ASCEND_EVAL_HOME"
_WEIGHT_SUFFIXES = (".safetensors", ".bin", ".pt", ".pth", ".onnx", ".gguf", ".xml")
_GENERIC_DIR_NAMES = frozenset({"model", "models", "checkpoint", "weights"})


def cache_root() -> Path:
    """The root for converted checkpoints: `$ASCEND_EVAL_HOME`, else `$XDG_CACHE_HOME/ascend-eval`,
    else `~/.cache/ascend-eval`. Created on first use."""
    if os.environ.get(CACHE_ENV):
        root = Path(os.environ[CACHE_ENV])
    else:
        base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
        root = Path(base) / "ascend-eval"
    root.mkdir(parents=True, exist_ok=True)
    return root


def local_model_id(path: Path) -> str:
    """Name a local model by its directory and content: `<dir name>@<12 hex digits>`.

    A generic directory name ("model", "checkpoint", ...) is prefixed with its parent's name.

    The hash covers the text of every JSON file (configs, tokenizer) and the size of every weight file, in
    the directory and its subdirectories: cheap to compute, and it changes when the model is swapped or
    re-converted even if the directory keeps its name.

    Raises:
        ConfigError: `path` is not a directory.
    """
    path = Path(path)
    if not path.is_dir():
        raise ConfigError(f"Model path {str(path)!r} is not a directory. Pass a local model directory.")
    digest = hashlib.sha256()
    for file in sorted(p for p in path.rglob("*") if p.is_file()):
        rel = file.relative_to(path)
        if any(part.startswith(".") for part in rel.parts):
            continue  # caches and VCS metadata say nothing about the weights
        if file.suffix == ".json":
            digest.update(f"{rel.as_posix()}\0".encode() + file.read_bytes() + b"\0")
        elif file.suffix in _WEIGHT_SUFFIXES:
            digest.update(f"{rel.as_posix()}\0{file.stat().st_size}\0".encode())
    # A package that ships its model in a directory called "model" is better known by the package's name.
    name = f"{path.parent.name}/{path.name}" if path.name in _GENERIC_DIR_NAMES else path.name
    return f"{name}@{digest.hexdigest()[:12]}"
