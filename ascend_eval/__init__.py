"""ascend-eval: the RAGAS metrics with local judge LLMs, embedders and cross-encoders, batched on device.

`import ascend_eval` stays light: torch, transformers and vllm load only when a model runtime is built.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

__all__ = ["EvaluationResult", "Sample", "__version__", "evaluate", "load_dataset", "metric_names"]

if TYPE_CHECKING:
    from ascend_eval.api import evaluate
    from ascend_eval.data import Sample, load_dataset
    from ascend_eval.metrics import metric_names
    from ascend_eval.results import EvaluationResult

_LAZY = {
    "evaluate": "ascend_eval.api",
    "Sample": "ascend_eval.data",
    "load_dataset": "ascend_eval.data",
    "metric_names": "ascend_eval.metrics",
    "EvaluationResult": "ascend_eval.results",
}


def _find_beside_in_a_checkout() -> None:
    """`models/` and `kernels/` are `ascend_eval.models` and `ascend_eval.kernels` (the installed package
    lays them out inside `ascend_eval/`). In a plain checkout they sit beside it: let the package find them
    there, so that the library runs from a clone with its requirements installed and the clone on the path
    (an installed package has them inside it and needs no finder). The finder goes first: where the
    environment holds an editable install of another clone, whose finder maps these names to that clone's
    folders, the package imported from this clone still takes its models and kernels from this clone."""
    import importlib.util
    import sys
    from importlib.abc import MetaPathFinder
    from pathlib import Path

    here = Path(__file__).resolve().parent
    root = here.parent
    names = ("models", "kernels")
    if (here / "models").is_dir() or not all((root / n / "__init__.py").is_file() for n in names):
        return

    class CheckoutFinder(MetaPathFinder):
        def find_spec(self, fullname: str, path: Any = None, target: Any = None) -> Any:
            package, _, name = fullname.rpartition(".")
            if package != __name__ or name not in names:
                return None
            folder = root / name
            return importlib.util.spec_from_file_location(
                fullname, folder / "__init__.py", submodule_search_locations=[str(folder)]
            )

    sys.meta_path.insert(0, CheckoutFinder())


_find_beside_in_a_checkout()


def __getattr__(name: str) -> Any:
    # Lazy so that `import ascend_eval` costs nothing until something is used.
    if name in _LAZY:
        import importlib

        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'ascend_eval' has no attribute {name!r}")
