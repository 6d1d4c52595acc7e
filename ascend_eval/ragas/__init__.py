"""A drop-in for RAGAS 0.4.3's top-level module: `evaluate` (and `aevaluate`) computed by ascend-eval.

A RAGAS script switches by changing the one line that imports `evaluate` from `ragas`, keeping the names
it imports there::

    from ragas import EvaluationDataset, evaluate             # before
    from ascend_eval.ragas import EvaluationDataset, evaluate  # after

Every other line stays: RAGAS's metric objects (`from ragas.metrics import Faithfulness`), LLM and
embedding wrappers, `RunConfig`, the dataset classes. `evaluate`, `aevaluate`, `EvaluationResult` (our
`RagasResult`) and `TokenUsage` are ours; the other names of `ragas`'s top level (`EvaluationDataset`,
`SingleTurnSample`, `RunConfig`, ...) are RAGAS's own, re-exported when first used, so ragas must be
installed for those. `TestsetGenerator` (RAGAS's `ragas.testset.TestsetGenerator`, also importable from
`ascend_eval.ragas.testset`) writes test sets with ascend-eval.
"""

from __future__ import annotations

import importlib
from typing import Any

from ascend_eval.errors import MissingDependencyError
from ascend_eval.ragas.evaluation import aevaluate, evaluate
from ascend_eval.ragas.result import RagasResult, TokenUsage
from ascend_eval.ragas.testset import RagasTestset, TestsetGenerator

EvaluationResult = RagasResult

_FROM_RAGAS = (
    "EvaluationDataset",
    "SingleTurnSample",
    "MultiTurnSample",
    "RunConfig",
    "Dataset",
    "DataTable",
    "cacher",
    "CacheInterface",
    "DiskCacheBackend",
    "backends",
    "Experiment",
    "experiment",
    "version_experiment",
    "BaseTokenizer",
    "TiktokenWrapper",
    "HuggingFaceTokenizer",
    "get_tokenizer",
)
"""The rest of `ragas.__all__`, so that `from ascend_eval.ragas import EvaluationDataset, evaluate`
works as the RAGAS line did."""


def __getattr__(name: str) -> Any:
    if name not in _FROM_RAGAS:
        raise AttributeError(f"module 'ascend_eval.ragas' has no attribute {name!r}")
    try:
        ragas = importlib.import_module("ragas")
    except ImportError as e:
        raise MissingDependencyError(
            f"ascend_eval.ragas.{name} is RAGAS's own class, re-exported: install ragas "
            "(pip install 'ragas==0.4.3'), or import only evaluate from ascend_eval.ragas."
        ) from e
    return getattr(ragas, name)


__all__ = [
    "EvaluationResult",
    "RagasResult",
    "RagasTestset",
    "TestsetGenerator",
    "TokenUsage",
    "aevaluate",
    "evaluate",
    *_FROM_RAGAS,
]
