"""The metric registry: names, RAGAS and NeMo Evaluator aliases, and lookup with "did you mean"."""

from __future__ import annotations

import difflib
import re
from collections.abc import Iterable
from typing import Any

from ascend_eval.errors import ConfigError
from ascend_eval.metrics.answer_correctness import AnswerCorrectness
from ascend_eval.metrics.answer_relevancy import AnswerRelevancy
from ascend_eval.metrics.answer_similarity import AnswerSimilarity
from ascend_eval.metrics.base import Metric, MetricResult, PlanContext
from ascend_eval.metrics.context_entity_recall import ContextEntityRecall
from ascend_eval.metrics.context_precision import ContextPrecision, ContextUtilization
from ascend_eval.metrics.context_recall import ContextRecall
from ascend_eval.metrics.criteria import Criterion, Rubric, UserMetric
from ascend_eval.metrics.faithfulness import Faithfulness
from ascend_eval.metrics.noise_sensitivity import NoiseSensitivity
from ascend_eval.metrics.nv_accuracy import AnswerAccuracy
from ascend_eval.metrics.nv_context_relevance import ContextRelevance
from ascend_eval.metrics.nv_response_groundedness import ResponseGroundedness

METRICS: dict[str, type[Metric]] = {
    cls.name: cls
    for cls in (
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
        NoiseSensitivity,
        ResponseGroundedness,
    )
}

ALIASES: dict[str, str] = {
    # NeMo Evaluator's RAG metric job names
    "system/rag-faithfulness": "faithfulness",
    "system/rag-answer-accuracy": "nv_accuracy",
    "system/rag-answer-correctness": "answer_correctness",
    "system/rag-answer-relevancy": "answer_relevancy",
    "system/rag-response-relevancy": "answer_relevancy",
    "system/rag-answer-similarity": "answer_similarity",
    "system/rag-context-precision": "context_precision",
    "system/rag-context-recall": "context_recall",
    "system/rag-context-entity-recall": "context_entity_recall",
    "system/rag-context-relevance": "nv_context_relevance",
    "system/rag-response-groundedness": "nv_response_groundedness",
    "system/rag-noise-sensitivity": "noise_sensitivity",
    # RAGAS's other names for the same metrics
    "semantic_similarity": "answer_similarity",
    "response_relevancy": "answer_relevancy",
    "answer_accuracy": "nv_accuracy",
    "context_relevance": "nv_context_relevance",
    "response_groundedness": "nv_response_groundedness",
    "llm_context_precision_with_reference": "context_precision",
    "llm_context_precision_without_reference": "context_utilization",
}


def metric_names() -> list[str]:
    """Every metric's name (its result column)."""
    return sorted(METRICS)


_MODE = re.compile(r"^noise_sensitivity\(mode=(relevant|irrelevant)\)$")


def canonical_name(name: str) -> str:
    """The metric's result-column name for `name` or any alias.

    Raises:
        ConfigError: the name is unknown (with the closest valid names).
    """
    key = name.strip()
    key = ALIASES.get(key, ALIASES.get(key.lower(), key.lower()))
    if key in METRICS or _MODE.match(key):
        return key
    close = difflib.get_close_matches(key, [*METRICS, *ALIASES], n=3, cutoff=0.6)
    hint = f" Did you mean {' or '.join(repr(c) for c in close)}?" if close else ""
    raise ConfigError(f"Unknown metric {name!r}.{hint} Available: {metric_names()}.")


def _not_a_metric(value: Any) -> str:
    """Why `value` cannot be a `metrics=` entry, and what to pass instead."""
    try:
        what = f"{type(value).__name__} ({repr(value)[:60]})"
    except Exception:  # a huge int, a broken __repr__: the type says enough
        what = type(value).__name__
    if type(value).__module__.split(".")[0] == "ragas":
        # ragas metric objects carry their result name; say which of our names computes it.
        name = getattr(value, "name", None)
        try:
            ours = canonical_name(name) if isinstance(name, str) else None
        except ConfigError:
            ours = None
        instead = f"metrics=[{ours!r}]" if ours else f"one of {metric_names()}"
        return (
            f"metrics= holds a RAGAS metric object, {type(value).__name__}; ascend-eval computes the "
            f"metrics itself, so pass the name instead: {instead} (or an ascend_eval.metrics instance), "
            "or call ascend_eval.ragas.evaluate, which takes RAGAS's metric, LLM and embedding objects."
        )
    return (
        f"metrics= holds {what}, which is not a metric; pass metric names (e.g. 'faithfulness' or "
        f"'system/rag-faithfulness') or ascend_eval.metrics instances. Available: {metric_names()}."
    )


def _builtin(name: str) -> bool:
    try:
        canonical_name(name)
    except ConfigError:
        return False
    return True


def resolve_metrics(metrics: Iterable[str | Metric] | str | Metric | None) -> list[Metric]:
    """Metric instances for names, aliases or instances (default: every available metric), in order,
    without duplicates (two names for one metric are one metric)."""
    if metrics is None:
        metrics = metric_names()
    if isinstance(metrics, str | Metric):
        metrics = [metrics]
    if not isinstance(metrics, Iterable) or isinstance(metrics, bytes):
        raise ConfigError(_not_a_metric(metrics))
    resolved: dict[str, Metric] = {}
    for m in metrics:
        if isinstance(m, UserMetric):
            metric = m
            if _builtin(m.name):
                raise ConfigError(
                    f"The {m.kind} {m.name!r} has the name of a built-in metric (or of one of its aliases); "
                    "give it a name of its own: it is the result's column."
                )
            if m.name in resolved and resolved[m.name] != m:
                raise ConfigError(
                    f"Two metrics are named {m.name!r} with different settings; give each its own name: "
                    "it is the result's column."
                )
        elif isinstance(m, Metric):
            metric = m
        elif not isinstance(m, str):
            raise ConfigError(_not_a_metric(m))
        else:
            key = canonical_name(m)
            mode = _MODE.match(key)  # RAGAS's result name carries the mode: noise_sensitivity(mode=...)
            metric = NoiseSensitivity(mode=mode.group(1)) if mode else METRICS[key]()
        resolved.setdefault(metric.name, metric)
    if not resolved:
        raise ConfigError(f"No metrics to compute. Choose from {metric_names()}.")
    return list(resolved.values())


__all__ = [
    "ALIASES",
    "METRICS",
    "AnswerAccuracy",
    "AnswerCorrectness",
    "AnswerRelevancy",
    "AnswerSimilarity",
    "ContextEntityRecall",
    "ContextPrecision",
    "ContextRecall",
    "ContextRelevance",
    "ContextUtilization",
    "Criterion",
    "Faithfulness",
    "Metric",
    "MetricResult",
    "NoiseSensitivity",
    "PlanContext",
    "ResponseGroundedness",
    "Rubric",
    "canonical_name",
    "metric_names",
    "resolve_metrics",
]
