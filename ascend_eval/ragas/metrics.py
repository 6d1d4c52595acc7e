"""RAGAS metric objects -> our metrics, with their parameters and the result column RAGAS names them by.

Both of RAGAS 0.4.3's families are read: the legacy classes (`ragas.metrics.Faithfulness`,
`LLMContextRecall`, `SemanticSimilarity`, ...) and the collections (`ragas.metrics.collections.*`, which
carry their own `llm` / `embeddings`). A class is matched by its exact name and family, never by
inheritance: a user's subclass changes what the metric computes, so it is refused rather than silently
replaced. The result column is the object's own `name` (what RAGAS's result uses), with RAGAS's
`(mode=...)` suffix for the legacy noise sensitivity.

RAGAS's judged metrics that the user writes in words become ours (`ascend_eval.metrics.criteria`):
`AspectCritic` a `Criterion` and `RubricsScore` (both families) a `Rubric`, reading the sample fields
RAGAS would show its judge. `SimpleCriteriaScore`, `DiscreteMetric` and the per-sample rubrics are
refused, each with the `Criterion` or `Rubric` to write instead.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from functools import partial
from typing import Any

from ascend_eval.data import Sample
from ascend_eval.errors import ConfigError
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
    Criterion,
    Faithfulness,
    Metric,
    NoiseSensitivity,
    ResponseGroundedness,
    Rubric,
    canonical_name,
    metric_names,
    resolve_metrics,
)
from ascend_eval.metrics.criteria import FIELDS, SYNONYMS

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
    to_ragas: Callable[[float], float] | None = None
    """RAGAS's scale for this column from our score (a rubric's level from our [0, 1]); None: the same."""
    binary: bool = False
    """RAGAS lists the column among its result's `binary_columns` (its `AspectCritic`)."""


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

LEGACY_JUDGED = frozenset({"AspectCritic", "RubricsScore"})
COLLECTIONS_JUDGED = frozenset(
    {"DomainSpecificRubrics", "RubricsScoreWithReference", "RubricsScoreWithoutReference"}
)
"""RAGAS's judged metrics written in words, which become our `Criterion` or `Rubric` (`_JUDGED`)."""

LEGACY_CLASSES = (frozenset(_BUILD) | LEGACY_JUDGED) - {
    "ContextPrecisionWithReference",
    "ContextPrecisionWithoutReference",
}
COLLECTIONS_CLASSES = (frozenset(_BUILD) | COLLECTIONS_JUDGED) - {
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
    "NumericMetric": (
        "ascend_eval.metrics.Rubric(name, levels={1: '...', 5: '...'}, reads=[...]) with each level "
        "described (the judge answers a level, a digit 0-9, not a free number)"
    ),
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


def _edited(obj: Any, attr: str, what: str) -> ConfigError:
    return ConfigError(
        f"{type(obj).__name__}.{attr} has {what}; ascend-eval judges with its own English and Chinese "
        "prompts, so edited or adapted RAGAS prompts cannot be used. Use the metric with its default "
        "prompts; for Chinese data pass language='zh' (or leave language='auto', which picks per sample)."
    )


def _check_prompts(obj: Any, fresh: Any = None) -> None:
    """Refuse a metric whose prompts were edited or adapted: ours would silently replace them.

    A prompt is an attribute of RAGAS's prompt classes (with an `instruction`); it counts as edited when
    its instruction or language differs from a fresh prompt of its class. A judged metric writes its
    definition (or rubrics) into its prompts' instruction, over whichever prompt it was given: `fresh` is
    then a new metric with the same settings, and each of its prompts is compared with the object's, class
    and examples included.
    """
    if fresh is not None:
        for attr, reference in vars(fresh).items():
            if not type(reference).__module__.startswith("ragas.") or not hasattr(reference, "instruction"):
                continue
            prompt = getattr(obj, attr, None)
            if type(prompt) is not type(reference):
                raise _edited(obj, attr, f"a prompt of its own ({type(prompt).__name__})")
            for part in ("instruction", "language", "examples"):
                if getattr(prompt, part, None) != getattr(reference, part, None):
                    raise _edited(obj, attr, f"a changed {part} ({str(getattr(prompt, part))[:60]!r})")
        return
    for attr, prompt in vars(obj).items():
        if not type(prompt).__module__.startswith("ragas.") or not hasattr(prompt, "instruction"):
            continue
        try:
            fresh_prompt = type(prompt)()
        except Exception:  # a prompt class that needs arguments cannot be compared; it cannot be edited
            continue  # through RAGAS's API either (adapt_prompts returns the same class with defaults)
        for part in ("instruction", "language"):
            if getattr(prompt, part, None) != getattr(fresh_prompt, part, None):
                raise _edited(obj, attr, f"a changed {part} ({str(getattr(prompt, part))[:60]!r})")


def _column(obj: Any, family: str) -> str:
    name = str(obj.name)
    if family == LEGACY and isinstance(getattr(obj, "mode", None), str):
        return f"{name}(mode={obj.mode})"  # RAGAS's result key for a metric with a mode
    return name


RAGAS_FIELDS = tuple(column.value for column in FIELDS.values())
"""The sample fields RAGAS's judged metrics may show their judge, by RAGAS's names."""


@dataclass(frozen=True)
class SampleFields:
    """Which of `RAGAS_FIELDS` a dataset has: in every sample, and in only some of them.

    RAGAS's `AspectCritic` and `RubricsScore` show the judge whichever of these fields each sample has;
    our `Criterion` and `Rubric` read one set of fields in every sample, chosen from these. The default
    (no dataset known) has them all.

    >>> SampleFields.of([Sample(user_input="q", response="a"), Sample(user_input="q")])
    SampleFields(every=frozenset({'user_input'}), some=frozenset({'response'}))
    """

    every: frozenset[str] = frozenset(RAGAS_FIELDS)
    some: frozenset[str] = frozenset()

    @classmethod
    def of(cls, samples: Iterable[Sample]) -> SampleFields:
        counts = dict.fromkeys(RAGAS_FIELDS, 0)
        total = 0
        for sample in samples:
            total += 1
            for name in RAGAS_FIELDS:
                counts[name] += sample.get(name) is not None
        return cls(
            frozenset(f for f, n in counts.items() if n == total > 0),
            frozenset(f for f, n in counts.items() if 0 < n < total),
        )


def _reads(obj: Any, fields: SampleFields, source: str) -> list[str]:
    """The fields a RAGAS judged metric shows its judge, as our metric's `reads`: those its required
    columns name outright, and those it shows when a sample has them (RAGAS's ":optional"; all five by
    default, and always for the collections' rubrics) that every sample has.

    Raises:
        ConfigError: a field it would show that only some samples have (RAGAS shows it to those; ours read
            one set of fields in all), or no field at all.
    """
    if hasattr(obj, "get_required_columns"):
        shown = obj.get_required_columns(with_optional=True).get("SINGLE_TURN", set())
        required = obj.required_columns.get("SINGLE_TURN", set())
    else:
        shown, required = set(RAGAS_FIELDS), set()
    uneven = [f for f in RAGAS_FIELDS if f in shown and f not in required and f in fields.some]
    if uneven:
        narrow = (
            ", or name the fields to read in required_columns={MetricType.SINGLE_TURN: {'user_input', "
            "'response'}}"
            if hasattr(obj, "get_required_columns")
            else ""
        )
        raise ConfigError(
            f"{source} shows the judge each sample's {', '.join(uneven)} where the sample has it, and some "
            "samples lack it; ascend-eval's criteria and rubrics read the same fields in every sample. Fill "
            f"it in every sample or leave it out of the dataset{narrow}."
        )
    reads = [f for f in RAGAS_FIELDS if f in required or (f in shown and f in fields.every)]
    if not reads:
        raise ConfigError(
            f"{source}: the dataset has none of the fields it shows the judge ({sorted(shown)})."
        )
    return reads


def _aspect_critic(obj: Any, fields: SampleFields, source: str) -> tuple[Metric, None]:
    """A `Criterion` with its name, definition and strictness (made odd, as RAGAS's constructor does)."""
    _check_prompts(obj, type(obj)(name=obj.name, definition=obj.definition))
    strictness = obj.strictness if obj.strictness % 2 else obj.strictness + 1
    reads = _reads(obj, fields, source)
    return Criterion(obj.name, obj.definition, reads=reads, strictness=strictness), None


_LEVEL_KEY = re.compile(r"^score(\d+)_description$")


def _level(low: int, high: int, score: float) -> float:
    """A rubric's level, RAGAS's score, from ours normalised to [0, 1] (NaN stays NaN).

    >>> _level(1, 5, 0.75), _level(1, 5, 0.3)
    (4.0, 2.2)
    """
    return round(low + score * (high - low), 9)


def _rubrics_score(obj: Any, fields: SampleFields, source: str) -> tuple[Metric, Callable[[float], float]]:
    """A `Rubric` whose levels are the rubrics' "score<N>_description" entries, with the conversion of its
    column to RAGAS's scale: RAGAS returns the level itself (1 to 5), ours a score in [0, 1]."""
    if ragas_family(obj) == COLLECTIONS:
        fresh = type(obj)(llm=obj.llm, rubrics=obj.rubrics, name=obj.name)
    else:
        fresh = type(obj)(name=obj.name, rubrics=obj.rubrics)
    _check_prompts(obj, fresh)
    levels: dict[int, str] = {}
    for key, text in dict(obj.rubrics).items():
        match = _LEVEL_KEY.match(str(key))
        if match is None:
            raise ConfigError(
                f"{source}: rubrics key {key!r} is not 'score<N>_description'; ascend-eval reads the judge's "
                "level over the levels N these keys name (digits 0-9), e.g. 'score1_description' ... "
                "'score5_description'."
            )
        levels[int(match.group(1))] = text
    rubric = Rubric(obj.name, levels, reads=_reads(obj, fields, source))
    return rubric, partial(_level, min(rubric.levels), max(rubric.levels))


_JUDGED: dict[str, Callable[[Any, SampleFields, str], tuple[Metric, Callable[[float], float] | None]]] = {
    "AspectCritic": _aspect_critic,
    "RubricsScore": _rubrics_score,
    "DomainSpecificRubrics": _rubrics_score,
    "RubricsScoreWithReference": _rubrics_score,
    "RubricsScoreWithoutReference": _rubrics_score,
}
"""RAGAS class name -> our `Criterion` or `Rubric` for the object, the dataset's fields and its source,
and the conversion of its column to RAGAS's scale (None: the same)."""

_YES_NO = {"yes": "no", "pass": "fail", "true": "false", "1": "0", "correct": "incorrect", "是": "否"}
"""Pairs of a DiscreteMetric's values whose first means yes."""


def _simple_criteria(obj: Any) -> str:
    return (
        "it asks the judge for an integer score on a scale that only its definition describes, and RAGAS "
        "returns that integer as written (no fixed range, no levels), so there are no levels to read the "
        "judge's answer over. Write the scale out: ascend_eval.metrics.Rubric(name="
        f"{obj.name!r}, levels={{1: '...', 5: '...'}}, definition={obj.definition[:80]!r}, reads=[the fields "
        "to show, e.g. 'question', 'answer']) with one description per level (digits 0-9), or, for a "
        f"yes/no question, Criterion(name={obj.name!r}, definition=..., reads=[...])"
    )


def _discrete(obj: Any) -> str:
    values = [str(v) for v in obj.allowed_values]
    reads = [SYNONYMS.get(v, v) for v in obj.get_variables()]
    by_name = {v.strip().lower(): v for v in values}
    yes_no = [
        (by_name[y], by_name[n]) for y, n in _YES_NO.items() if len(values) == 2 and {y, n} == set(by_name)
    ]
    why = (
        f"its value is a label, one of {', '.join(map(repr, values))}, that metric.score() returns; RAGAS's "
        "evaluate() does not take it (only ragas.metrics.base.Metric objects), and ascend-eval's result "
        "columns hold numbers, so there is no RAGAS column to reproduce"
    )
    if yes_no:
        ((yes, no),) = yes_no
        return (
            f"{why}. To score the same yes/no question, pass ascend_eval.metrics.Criterion("
            f"name={obj.name!r}, definition='<the question your prompt asks, without its placeholders>', "
            f"reads={reads}): its column is 1 where yours says {yes!r}, 0 where it says {no!r}"
        )
    if len(values) == 2:
        return (
            f"{why}; which of {values} means yes cannot be told from their names. Pass "
            f"ascend_eval.metrics.Criterion(name={obj.name!r}, definition='<a yes/no question whose yes is "
            f"the value you count>', reads={reads})"
        )
    return (
        f"{why}; {len(values)} values are not a yes/no pair. Pass ascend_eval.metrics.Rubric(name="
        f"{obj.name!r}, levels={{1: '...', 2: '...', ...}}, reads={reads}), one level (a digit) per value, "
        "each described"
    )


def _instance_rubrics(obj: Any) -> str:
    return (
        "it rates each sample against that sample's own rubrics (the dataset's `rubrics` column), and "
        "ascend-eval's rubric has one set of levels for the whole run. Evaluate the samples that share a "
        "rubric together, each group with RubricsScore(rubrics=THAT_RUBRIC) or ascend_eval.metrics.Rubric("
        "name, levels={1: '...', 5: '...'}, reads=[...])"
    )


_REFUSED: dict[str, Callable[[Any], str]] = {
    "SimpleCriteriaScore": _simple_criteria,
    "DiscreteMetric": _discrete,
    "InstanceRubrics": _instance_rubrics,
    "InstanceSpecificRubrics": _instance_rubrics,
}
"""RAGAS's judged metrics that cannot be mapped -> why, and the `Criterion` or `Rubric` to write."""


def map_metric(entry: Any, fields: SampleFields = SampleFields()) -> MappedMetric:
    """Our metric for one `metrics=` entry: a RAGAS metric object, one of our names, or our instance.

    `fields` are the dataset's (`SampleFields.of`): RAGAS's `AspectCritic` and `RubricsScore` show the
    judge the fields a sample has, so our criterion or rubric reads those.

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
    ragas_class = type(entry).__module__.startswith("ragas.metrics")
    if name in _REFUSED and ragas_class:
        where = "ragas.metrics" if family == LEGACY else "ragas.metrics.collections"
        why = _REFUSED[name](entry)
        raise ConfigError(
            f"metrics= holds {where}.{name} ({getattr(entry, 'name', '?')!r}), not mapped: {why}."
        )
    known = LEGACY_CLASSES if family == LEGACY else COLLECTIONS_CLASSES
    if name not in known or not ragas_class:
        raise _unmappable(entry, family)
    to_ragas = None
    if name in _JUDGED:
        source = f"{name}(name={entry.name!r})"
        try:
            metric, to_ragas = _JUDGED[name](entry, fields, source)
        except ConfigError as e:
            message = str(e)
            raise ConfigError(message if message.startswith(source) else f"{source}: {message}") from None
    else:
        source = f"{name}()"
        _check_prompts(entry)
        metric = _BUILD[name](entry)
    return MappedMetric(
        _column(entry, family),
        metric,
        source,
        llm=getattr(entry, "llm", None),
        embeddings=getattr(entry, "embeddings", None),
        to_ragas=to_ragas,
        binary=name == "AspectCritic",
    )


def map_metrics(metrics: Any, fields: SampleFields = SampleFields()) -> list[MappedMetric]:
    """`map_metric` for each entry (RAGAS's default four for None) over the dataset's `fields`, result
    columns unique.

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
    mapped = [map_metric(m, fields) for m in metrics]
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


__all__ = [
    "RAGAS_DEFAULT_METRICS",
    "MappedMetric",
    "SampleFields",
    "canonical_name",
    "map_metric",
    "map_metrics",
]
