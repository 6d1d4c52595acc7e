"""Where the library keeps its files: one cache folder, under which each user of it has its own
subfolder (the request cache's `requests/`, the jobs' `jobs/` and `secrets/`, jieba's dictionary in
`jieba/`, converted model checkpoints in `checkpoints/`)."""

from __future__ import annotations

import os
from pathlib import Path

CACHE_ENV = "ASCEND_EVAL_HOME"


def cache_root() -> Path:
    """The library's cache folder: `$ASCEND_EVAL_HOME`, else `$XDG_CACHE_HOME/ascend-eval`,
    else `~/.cache/ascend-eval`. Created on first use."""
    if os.environ.get(CACHE_ENV):
        root = Path(os.environ[CACHE_ENV])
    else:
        base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
        root = Path(base) / "ascend-eval"
    root.mkdir(parents=True, exist_ok=True)
    return root
