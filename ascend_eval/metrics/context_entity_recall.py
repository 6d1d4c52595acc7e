"""context_entity_recall: the share of the reference's entities that the retrieved contexts mention."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any, Literal

from ascend_eval.data import Column, Sample
from ascend_eval.errors import ConfigError
from ascend_eval.metrics.base import Metric, MetricResult, Plan, PlanContext, RoleName
from ascend_eval.models.base import GenerateResult
from ascend_eval.prompts.base import ParseFailure, first_items
from ascend_eval.prompts.entities import ENTITIES, EntitiesInput
from ascend_eval.text.entities import entity_key, extract_entities

Extractor = Literal["judge", "jieba"]


def entity_recall(
    reference_entities: Sequence[str],
    context_entities: Sequence[str],
    key: Callable[[str], str] = entity_key,
) -> float:
    """Distinct reference entities found among the context entities, over distinct reference entities.

    Entities are compared by `key` (default `entity_key`: NFKC, case-folded, punctuation removed), so
    "Eiffel Tower" matches "eiffel tower" and "埃菲尔铁塔。" matches "埃菲尔铁塔"; an entity whose key is
    empty is ignored.

    Returns:
        A share in [0, 1]; NaN when the reference has no entities (recall is undefined).

    >>> entity_recall(["Eiffel Tower", "1889", "Paris"], ["eiffel tower", "Paris", "Gustave Eiffel"])
    0.6666666666666666
    >>> entity_recall(["故宫", "故宫", "北京"], ["北京"])
    0.5
    >>> entity_recall(["Ｐａｒｉｓ"], ["paris"])
    1.0
    >>> entity_recall([], ["Paris"])
    nan
    """
    reference = {key(e) for e in reference_entities} - {""}
    if not reference:
        return math.nan
    context = {key(e) for e in context_entities}
    return len(reference & context) / len(reference)


def ragas_entity_recall(reference_entities: Sequence[str], context_entities: Sequence[str]) -> float:
    """RAGAS legacy: exact, case-sensitive matches over the length of the reference list plus 1e-8.

    Duplicates in the reference list count in the denominator, and no reference entities give 0.0.

    >>> ragas_entity_recall(["Paris", "1889"], ["Paris", "1889"])
    0.999999995
    >>> ragas_entity_recall(["Paris", "Paris"], ["Paris"])
    0.4999999975
    >>> ragas_entity_recall(["Paris"], ["paris"]), ragas_entity_recall([], ["Paris"])
    (0.0, 0.0)
    """
    return len(set(context_entities) & set(reference_entities)) / (len(reference_entities) + 1e-8)


class ContextEntityRecall(Metric):
    """How many of the entities in the reference the retrieved contexts contain.

    Args:
        extractor: "judge" (RAGAS: the judge lists the entities of the reference and of the joined
            contexts, two JSON requests sent in the same round) or "jieba" (no model at all: entities
            from `ascend_eval.text.entities.extract_entities`, jieba's part-of-speech tags for Chinese).

    Score: `entity_recall` by default (matching by `entity_key`, distinct reference entities, NaN
    `no_entities` when the reference has none); `ragas_entity_recall` under `ragas_compat` (exact strings,
    list length + 1e-8, 0.0 when there are none). A blank text has no entities and costs no judge call.
    """

    name = "context_entity_recall"
    required = frozenset({Column.REFERENCE, Column.RETRIEVED_CONTEXTS})

    def __init__(self, extractor: Extractor = "judge") -> None:
        if extractor not in ("judge", "jieba"):
            raise ConfigError(f"context_entity_recall extractor={extractor!r}; valid: 'judge', 'jieba'.")
        self.extractor: Extractor = extractor

    @property
    def roles(self) -> frozenset[RoleName]:
        return frozenset({"judge"}) if self.extractor == "judge" else frozenset()

    @property
    def params(self) -> dict[str, Any]:
        return {"extractor": self.extractor}

    def plan(self, sample: Sample, ctx: PlanContext) -> Plan:
        texts = [sample.reference or "", sample.joined_contexts or ""]
        if not texts[0].strip():  # no reference entities, whatever the contexts hold
            if ctx.ragas_compat:
                return MetricResult(0.0, details={"reference_entities": []})
            return MetricResult.nan("no_entities", note="the reference is blank")
        if self.extractor == "jieba":
            lists = [extract_entities(t) if t.strip() else [] for t in texts]
        else:
            asked = [t for t in texts if t.strip()]
            results: list[GenerateResult] = yield [
                ENTITIES.request(EntitiesInput(text=t), ctx.language, ctx.block) for t in asked
            ]
            by_text: dict[str, list[str]] = {}
            for text, result in zip(asked, results, strict=True):
                parsed = ENTITIES.parse(result)
                if isinstance(parsed, ParseFailure):
                    return MetricResult.nan(parsed.reason, raw=parsed.raw)
                # RAGAS compares the strings exactly as the judge wrote them.
                entities = parsed.entities if ctx.ragas_compat else [e.strip() for e in parsed.entities]
                by_text[text] = first_items(entities if ctx.ragas_compat else [e for e in entities if e])
            lists = [by_text.get(t, []) for t in texts]
        reference_entities, context_entities = lists
        details = {"reference_entities": reference_entities, "context_entities": context_entities}
        if ctx.ragas_compat:
            return MetricResult(ragas_entity_recall(reference_entities, context_entities), details=details)
        score = entity_recall(reference_entities, context_entities)
        if math.isnan(score):
            return MetricResult.nan("no_entities", **details)
        found = {entity_key(e) for e in context_entities}
        details["matched"] = [e for e in reference_entities if entity_key(e) in found]
        return MetricResult(score, details=details)
