"""Datasets that ship with the package, usable by name wherever a dataset is accepted."""

from __future__ import annotations

from importlib.resources import files
from pathlib import Path

BUILTIN_DATASETS: dict[str, str] = {
    "bilingual-example": "bilingual_rag.json",
}
"""name -> file under `ascend_eval/data/examples/`. `bilingual-example`: 16 questions (8 English, 8 Chinese)
written for this project, each with retrieved contexts, an answer (some faithful, some with planted
errors) and a reference answer, in the ragas columnar format."""


def builtin_dataset(name: str) -> Path | None:
    """The file of a built-in dataset, or None if `name` is not one."""
    if name not in BUILTIN_DATASETS:
        return None
    return Path(str(files("ascend_eval") / "data" / "examples" / BUILTIN_DATASETS[name]))
