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


def __getattr__(name: str) -> Any:
    # Lazy so that `import ascend_eval` costs nothing until something is used.
    if name in _LAZY:
        import importlib

        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'ascend_eval' has no attribute {name!r}")
