"""RAGAS metric objects -> our metrics, with their parameters and the result column RAGAS names them by.

Both of RAGAS 0.4.3's families are read: the legacy classes (`ragas.metrics.Faithfulness`,
`LLMContextRecall`, `SemanticSimilarity`, ...) and the collections (`ragas.metrics.collections.*`, which
carry their own `llm` / `embeddings`). A class is matched by its exact name and family, never by
inheritance: a user's subclass changes what the metric computes, so it is refused rather than silently
replaced. The result column is the object's own `name` (what RAGAS's result uses), with RAGAS's
`(mode=...)` suffix for the legacy noise sensitivity.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ascend_eval.metrics import (
    AnswerAccuracy,
    AnswerCorrectness,
    AnswerRelevancy,
    AnswerSimilarity,
    ContextEntityRecall,
    ContextPrecision,
    ContextRecall,
    ContextRelevance,
    ContextUtilization,
    Faithfulness,
    Metric,
    NoiseSensitivity,
    ResponseGroundedness,
    canonical_name,
    metric_names,
    resolve_metrics,
)
from ascend_eval.models.errors import ConfigError

LEGACY = "legacy"
COLLECTIONS = "collections"

RAGAS_DEFAULT_METRICS = ("answer_relevancy", "context_precision", "faithfulness", "context_recall")
"""What RAGAS's `evaluate(metrics=None)` computes."""


@dataclass(frozen=True)
class MappedMetric:
    """One entry of the user's `metrics=`: our metric, the column RAGAS names its scores by, and the
    models the RAGAS object carries itself (`Faithfulness(llm=...)`, collections metrics)."""

    column: str
    metric: Metric
    source: str
    """How the user wrote it, for messages: "Faithfulness()" or "'faithfulness'"."""
    llm: Any = None
    embeddings: Any = None


def _answer_correctness(obj: Any) -> Metric:
    inner = getattr(obj, "answer_similarity", None)
    if inner is not None and (getattr(inner, "threshold", None) is not None or inner.is_cross_encoder):
        raise ConfigError(
            "AnswerCorrectness(answer_similarity=...) with a threshold or a cross-encoder is not mapped: "
            "our answer_correctness uses the plain embedding similarity. Drop answer_similarity=."
        )
    return AnswerCorrectness(weights=tuple(obj.weights), beta=obj.beta)


def _similarity(obj: Any) -> Metric:
    method = "cross_encoder" if getattr(obj, "is_cross_encoder", False) else "embedding"
    return AnswerSimilarity(method=method, threshold=obj.threshold)


_BUILD: dict[str, Callable[[Any], Metric]] = {
    "Faithfulness": lambda obj: Faithfulness(),
    "AnswerCorrectness": _answer_correctness,
    "AnswerRelevancy": lambda obj: AnswerRelevancy(strictness=obj.strictness),
    "ResponseRelevancy": lambda obj: AnswerRelevancy(strictness=obj.strictness),
    "AnswerSimilarity": _similarity,
    "SemanticSimilarity": _similarity,
    "ContextEntityRecall": lambda obj: ContextEntityRecall(),
    "ContextPrecision": lambda obj: ContextPrecision(),
    "LLMContextPrecisionWithReference": lambda obj: ContextPrecision(),
    "ContextPrecisionWithReference": lambda obj: ContextPrecision(),
    "ContextUtilization": lambda obj: ContextUtilization(),
    "LLMContextPrecisionWithoutReference": lambda obj: ContextUtilization(),
    "ContextPrecisionWithoutReference": lambda obj: ContextUtilization(),
    "ContextRecall": lambda obj: ContextRecall(),
    "LLMContextRecall": lambda obj: ContextRecall(),
    "NoiseSensitivity": lambda obj: NoiseSensitivity(mode=obj.mode),
    "AnswerAccuracy": lambda obj: AnswerAccuracy(),
    "ContextRelevance": lambda obj: ContextRelevance(),
    "ResponseGroundedness": lambda obj: ResponseGroundedness(),
}
"""RAGAS class name -> our metric with the object's parameters."""

LEGACY_CLASSES = frozenset(_BUILD) - {
    "ContextPrecisionWithReference",
    "ContextPrecisionWithoutReference",
}
COLLECTIONS_CLASSES = frozenset(_BUILD) - {
    "ResponseRelevancy",
    "AnswerSimilarity",
    "LLMContextPrecisionWithReference",
    "LLMContextPrecisionWithoutReference",
    "LLMContextRecall",
}

_INSTEAD: dict[str, str] = {
    "FaithfulnesswithHHEM": "Faithfulness() (judged by the LLM; HHEM's classifier is not run here)",
    "NonLLMContextRecall": "LLMContextRecall() (judged by the LLM; string-distance recall is not computed)",
    "IDBasedContextRecall": "LLMContextRecall() (judged by the LLM; ID matching is not computed)",
    "NonLLMContextPrecisionWithReference": "LLMContextPrecisionWithReference() (judged by the LLM)",
    "IDBasedContextPrecision": "LLMContextPrecisionWithReference() (judged by the LLM)",
    "FactualCorrectness": "AnswerCorrectness() (statement-level F-beta against the reference)",
    "MultiModalFaithfulness": "Faithfulness() on the text contexts",
}


def ragas_family(obj: Any) -> str | None:
    """LEGACY or COLLECTIONS for an object of RAGAS's metric classes (or of a subclass), else None."""
    for cls in type(obj).__mro__:
        if cls.__module__.startswith("ragas.metrics.collections"):
            return COLLECTIONS
        if cls.__module__.startswith("ragas.metrics"):
            return LEGACY
    return None


def _unmappable(obj: Any, family: str) -> ConfigError:
    name = type(obj).__name__
    known = sorted(LEGACY_CLASSES if family == LEGACY else COLLECTIONS_CLASSES)
    where = "ragas.metrics" if family == LEGACY else "ragas.metrics.collections"
    bases = [c.__name__ for c in type(obj).__mro__[1:] if c.__name__ in known]
    if bases:
        why = (
            f"it subclasses {bases[0]}, so it may compute something else than RAGAS's {bases[0]}, which "
            f"ascend-eval reimplements. Pass {bases[0]}() itself"
        )
    elif name in _INSTEAD:
        why = f"ascend-eval does not compute it. Use {_INSTEAD[name]}"
    else:
        why = (
            "it is not one of the twelve RAG metrics ascend-eval computes. Run it with ragas.evaluate on "
            f"its own, or choose from {where}: {', '.join(known)}"
        )
    return ConfigError(f"metrics= holds {where}.{name} ({getattr(obj, 'name', '?')!r}): {why}.")


def _check_prompts(obj: Any) -> None:
    """Refuse a metric whose prompts were edited or adapted: ours would silently replace them.

    A prompt is an attribute of RAGAS's prompt classes (with an `instruction`); it counts as edited when
    its instruction or language differs from a fresh prompt of its class.
    """
    for attr, prompt in vars(obj).items():
        if not type(prompt).__module__.startswith("ragas.") or not hasattr(prompt, "instruction"):
            continue
        try:
            fresh = type(prompt)()
        except Exception:  # a prompt class that needs arguments cannot be compared; it cannot be edited
            continue  # through RAGAS's API either (adapt_prompts returns the same class with defaults)
        for part in ("instruction", "language"):
            if getattr(prompt, part, None) != getattr(fresh, part, None):
                changed = str(getattr(prompt, part))[:60]
                raise ConfigError(
                    f"{type(obj).__name__}.{attr} has a changed {part} ({changed!r}); "
                    "ascend-eval judges with its own English and Chinese prompts, so edited or adapted RAGAS "
                    "prompts cannot be used. Use the metric with its default prompts; for Chinese data pass "
                    "language='zh' (or leave language='auto', which picks per sample)."
                )


def _column(obj: Any, family: str) -> str:
    name = str(obj.name)
    if family == LEGACY and isinstance(getattr(obj, "mode", None), str):
        return f"{name}(mode={obj.mode})"  # RAGAS's result key for a metric with a mode
    return name


def map_metric(entry: Any) -> MappedMetric:
    """Our metric for one `metrics=` entry: a RAGAS metric object, one of our names, or our instance.

    Raises:
        ConfigError: a RAGAS metric we do not compute, a subclass, edited prompts, an unknown name, or
            something that is not a metric; each names the object and what to pass instead.
    """
    if isinstance(entry, Metric):
        return MappedMetric(entry.name, entry, repr(entry))
    if isinstance(entry, str):
        [metric] = resolve_metrics([entry])
        return MappedMetric(metric.name, metric, repr(entry))
    family = ragas_family(entry)
    if family is None:
        raise ConfigError(
            f"metrics= holds {type(entry).__name__} ({repr(entry)[:60]}), which is not a metric. Pass RAGAS "
            f"metric objects (Faithfulness(), LLMContextRecall(), ...), metric names ({metric_names()}) or "
            "ascend_eval.metrics instances."
        )
    name = type(entry).__name__
    known = LEGACY_CLASSES if family == LEGACY else COLLECTIONS_CLASSES
    if name not in known or not type(entry).__module__.startswith("ragas.metrics"):
        raise _unmappable(entry, family)
    _check_prompts(entry)
    metric = _BUILD[name](entry)
    return MappedMetric(
        _column(entry, family),
        metric,
        f"{name}()",
        llm=getattr(entry, "llm", None),
        embeddings=getattr(entry, "embeddings", None),
    )


def map_metrics(metrics: Any) -> list[MappedMetric]:
    """`map_metric` for each entry (RAGAS's default four for None), result columns unique.

    Raises:
        ConfigError: see `map_metric`; or two entries that RAGAS would name by one column.
    """
    if metrics is None:
        metrics = list(RAGAS_DEFAULT_METRICS)
    if isinstance(metrics, str) or ragas_family(metrics) is not None or isinstance(metrics, Metric):
        raise ConfigError(
            f"metrics= must be a list, e.g. metrics=[Faithfulness()]; got {type(metrics).__name__}. "
            "Wrap it in a list."
        )
    mapped = [map_metric(m) for m in metrics]
    seen: dict[str, str] = {}
    for m in mapped:
        if m.column in seen:
            raise ConfigError(
                f"metrics= has two entries named {m.column!r} ({seen[m.column]} and {m.source}); their "
                "scores would share one column. Drop one, or give one another name=."
            )
        seen[m.column] = m.source
    if not mapped:
        raise ConfigError(f"metrics= is empty. Pass RAGAS metric objects or names from {metric_names()}.")
    return mapped


__all__ = ["RAGAS_DEFAULT_METRICS", "MappedMetric", "canonical_name", "map_metric", "map_metrics"]
