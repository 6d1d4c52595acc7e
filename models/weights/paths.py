"""Where converted model checkpoints are cached, and how local models are named in cache keys.

The cache folder itself is the bottom layer's (`ascend_eval.base.paths`); `cache_root` and `CACHE_ENV` are
re-exported here for the code that imported them from this module.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

from ascend_eval.base.paths import CACHE_ENV, cache_root
from ascend_eval.models.errors import ConfigError

__all__ = ["CACHE_ENV", "cache_root", "checkpoints_root", "local_model_id"]

_WEIGHT_SUFFIXES = (".safetensors", ".bin", ".pt", ".pth", ".onnx", ".gguf", ".xml")
_GENERIC_DIR_NAMES = frozenset({"model", "models", "checkpoint", "weights"})


def checkpoints_root() -> Path:
    """Where converted checkpoints go by default: `checkpoints/` in the library's cache folder
    (`cache_root()`, under `$ASCEND_EVAL_HOME` when it is set). Not created here."""
    return cache_root() / "checkpoints"


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
