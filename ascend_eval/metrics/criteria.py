"""Metrics users write themselves: a yes/no `Criterion` and a `Rubric` of scored levels.

A user who needs "does the answer cite its source", "is the tone polite" or a 1-5 completeness rubric
writes it in a sentence and scores it through the same engine as the twelve built-in metrics: batched with
every other request of the run, deduplicated, cached, resumable and sample first.

* `Criterion`: one classify request per sample, the judge's probability of "1" (meets the criterion) read
  from its next-token distribution. Expected scoring (the default in classify mode) scores that
  probability as the judge gives it (a run's "content_free" calibration moves it; "anchored", the default,
  has no anchors for a user's question and leaves it); threshold scoring scores 1 or 0. What G-Eval
  estimates by sampling a judge twenty times is here one forward pass. `strictness` k (odd) asks for a
  majority of k readings, as RAGAS's `AspectCritic` does: in classify mode that is the exact probability
  that a majority of k readings says yes, with no extra request; in generate mode k sampled JSON
  verdicts, majority vote.
* `Rubric`: one classify request per sample over the levels' digits; the score is the
  probability-weighted level, normalised to [0, 1] over the rubric's range (the most probable level under
  threshold scoring), with both levels in the details. With labelled anchors, under the run's "anchored"
  calibration, the expected level is put on the anchors' scale and the label is the level it lands in. In
  generate mode a JSON `{"reason", "rating"}`.

A judge answer that cannot be read scores NaN with its reason; settings that cannot work raise
`ConfigError` when the metric is built, before any model loads.

>>> polite = Criterion("polite", "Is the answer courteous and respectful?", reads=["answer"])
>>> polite.name, sorted(c.value for c in polite.required)
('polite', ['response'])
>>> Rubric("clarity", {1: "Confusing.", 5: "Clear and well organised."}).params["levels"]
{1: 'Confusing.', 5: 'Clear and well organised.'}
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import replace
from functools import cached_property, partial
from typing import Any

from ascend_eval.data import Column, Sample, UserColumn
from ascend_eval.errors import ConfigError
from ascend_eval.metrics.base import Metric, MetricResult, Plan, PlanContext
from ascend_eval.metrics.verdicts import Asked
from ascend_eval.prompts.base import ParseFailure
from ascend_eval.prompts.calibration import LevelCalibration, level_target
from ascend_eval.prompts.criteria import criterion_prompts, rubric_prompts

FIELDS: dict[str, Column] = {
    "question": Column.USER_INPUT,
    "contexts": Column.RETRIEVED_CONTEXTS,
    "answer": Column.RESPONSE,
    "reference": Column.REFERENCE,
    "reference_contexts": Column.REFERENCE_CONTEXTS,
}
"""The sample's own fields a user's metric may read, under the names its prompt shows them by."""

SYNONYMS: dict[str, str] = {
    "user_input": "question",
    "response": "answer",
    "retrieved_contexts": "contexts",
    "context": "contexts",
    "ground_truth": "reference",
}
"""RAGAS's and the legacy column names for the same fields."""

_NAME = re.compile(r"^[A-Za-z][A-Za-z0-9_]{0,63}$")
_COLUMN = re.compile(r"^[A-Za-z][A-Za-z0-9_]*$")
MAX_LEVEL = 9
"""Rubric levels are the digits 0-9: each label is then one token for every judge's tokenizer."""
SAMPLED_TEMPERATURE = 0.3
"""The temperature of generate mode's readings when `strictness` asks for more than one (RAGAS's choice
for several completions)."""


def _name(name: object, kind: str) -> str:
    if not isinstance(name, str) or not _NAME.match(name):
        raise ConfigError(
            f"{kind} name {name!r}: use a letter, then letters, digits or '_' (at most 64), e.g. "
            "'cites_source'; it is the result's column name."
        )
    return name


def _text(value: object, what: str, name: str) -> str:
    if not isinstance(value, str) or not value.strip():
        raise ConfigError(f"{name}: {what} must be a non-empty string, got {value!r}.")
    return value


def _reads(reads: object, name: str) -> tuple[str, ...]:
    """The fields a metric reads, named as its prompt shows them, the sample's first in their usual order."""
    if isinstance(reads, str) or not isinstance(reads, Iterable):
        raise ConfigError(
            f"{name}: reads= takes a list of fields, e.g. ['question', 'answer'], got {reads!r}."
        )
    own, user = [], []
    for field in reads:
        if not isinstance(field, str) or not _COLUMN.match(field):
            raise ConfigError(
                f"{name}: reads= names {field!r}; a field is one of {sorted(FIELDS)} or a column of your "
                "dataset (letters, digits and '_')."
            )
        field = SYNONYMS.get(field, field)
        if field in own or field in user:
            raise ConfigError(f"{name}: reads= names {field!r} twice.")
        (own if field in FIELDS else user).append(field)
    if not own and not user:
        raise ConfigError(f"{name}: reads= is empty; name the fields the judge should see, e.g. ['answer'].")
    return (*sorted(own, key=list(FIELDS).index), *user)


def field_text(sample: Sample, field: str) -> str:
    """The text of `field` shown to the judge: the contexts one per line (as every prompt joins them), a
    user column as written, or as JSON when it is not a string.

    >>> s = Sample(retrieved_contexts=["a", "b"], metadata={"tags": ["x"], "source": "S"})
    >>> field_text(s, "contexts"), field_text(s, "tags"), field_text(s, "source")
    ('a\\nb', '["x"]', 'S')
    """
    if field in FIELDS:
        value = sample.get(FIELDS[field])
        return "\n".join(value) if isinstance(value, tuple) else (value or "")
    value = sample.metadata.get(field)
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)


class UserMetric(Metric):
    """What a criterion and a rubric share: a name of the user's, the fields it reads, its examples."""

    kind: str = ""
    anchors: tuple[tuple[dict[str, str], Any, str], ...] = ()
    """Labelled samples the judge is never shown: (the read fields' texts, the verdict or level, reason)."""

    def __init__(self, name: str, reads: Sequence[str]) -> None:
        self.name = _name(name, self.kind)  # type: ignore[misc]
        self.reads = _reads(reads, self.name)
        self.required = frozenset(FIELDS[f] for f in self.reads if f in FIELDS)  # type: ignore[misc]

    @property
    def needs(self) -> frozenset[Column | UserColumn]:
        return frozenset({*self.required, *(UserColumn(f) for f in self.reads if f not in FIELDS)})

    def _example(
        self, example: object, answer_key: str, read: Callable[[Any], Any], what: str = "example"
    ) -> tuple[dict[str, str], Any, str]:
        """One example (or anchor) as (the read fields' texts, its answer as `read` checks it, its reason
        or "")."""
        if not isinstance(example, Mapping):
            raise ConfigError(
                f"{self.name}: an {what} is a mapping of its fields and {answer_key!r}, got "
                f"{type(example).__name__}."
            )
        data = {SYNONYMS.get(k, k): v for k, v in example.items()}
        missing = [f for f in self.reads if not isinstance(data.get(f), str)]
        if missing or answer_key not in data:
            need = [*missing, *([answer_key] if answer_key not in data else [])]
            raise ConfigError(
                f"{self.name}: an {what} lacks {need} (each {what} gives the text of every "
                f"field the metric reads, {list(self.reads)}, and its {answer_key!r})."
            )
        reason = data.get("reason", "")
        return (
            {f: data[f] for f in self.reads},
            read(data[answer_key]),
            reason if isinstance(reason, str) else "",
        )

    def _inputs(self, sample: Sample, spec: Any) -> Any:
        return spec.input.model_validate({f: field_text(sample, f) for f in self.reads})

    def __repr__(self) -> str:
        args = ", ".join(f"{k}={v!r}" for k, v in self.params.items() if v or k == "reads")
        return f"{type(self).__name__}(name={self.name!r}, {args})"

    def __reduce__(self) -> tuple[Any, ...]:  # its prompts hold classes built at run time: rebuild them
        return (_rebuild, (type(self), self.params | {"name": self.name}))

    def __eq__(self, other: object) -> bool:
        return type(other) is type(self) and (self.name, self.params) == (other.name, other.params)  # type: ignore[attr-defined]

    def __hash__(self) -> int:
        return hash((type(self), self.name))


def _rebuild(cls: type[UserMetric], params: dict[str, Any]) -> UserMetric:
    return cls(**params)


def _verdict(value: object, name: str) -> bool:
    if isinstance(value, bool):
        return value
    if value in (0, 1):
        return bool(value)
    if isinstance(value, str) and value.strip().lower() in (
        "yes",
        "no",
        "1",
        "0",
        "true",
        "false",
        "是",
        "否",
    ):
        return value.strip().lower() in ("yes", "1", "true", "是")
    raise ConfigError(f"{name}: an example's verdict is yes or no (true/false, 1/0), got {value!r}.")


def majority(p: float, k: int) -> float:
    """The probability that more than half of k independent readings say yes, each with probability p.

    >>> majority(0.7, 1), round(majority(0.7, 3), 3), majority(0.5, 5)
    (0.7, 0.784, 0.5)
    """
    return sum(math.comb(k, j) * p**j * (1 - p) ** (k - j) for j in range(k // 2 + 1, k + 1))


class Criterion(UserMetric):
    """A yes/no criterion in the user's words: the score is how surely the sample meets it.

    Args:
        name: the result's column name (letters, digits, '_').
        definition: the question the judge answers yes or no, in English or Chinese.
        reads: the fields the judge sees: any of question, contexts, answer, reference,
            reference_contexts (RAGAS's names work too) and columns of the user's own dataset.
        examples: optional; each a mapping of the read fields' texts, "verdict" (yes/no) and optionally
            "reason". They are shown to the judge in the task-first layout.
        anchors: optional labelled samples, in the form of examples (at least one yes and one no), that
            the judge is never shown: under the run's "anchored" calibration (the classify-mode default)
            the judge is asked about each with this criterion's own prompt, and the yes/no threshold is
            put midway between what it gives the yes-anchors and the no-anchors (`prompts/calibration.py`).
            A small judge's p(yes) for a criterion sits in a narrow band on one side of 0.5 (Qwen2.5-
            Coder-1.5B: 0.5-0.75 for met and unmet alike), so without anchors a threshold-scored label says
            yes to both; anchors move the threshold into that band. Expected scores keep their order.
            Yes- and no-anchors are paired in order, the shorter list repeating.
        strictness: how many readings must agree, by majority (odd, as RAGAS's `AspectCritic`).
    """

    kind = "criterion"

    def __init__(
        self,
        name: str,
        definition: str,
        reads: Sequence[str] = ("question", "answer"),
        examples: Sequence[Mapping[str, Any]] = (),
        strictness: int = 1,
        anchors: Sequence[Mapping[str, Any]] = (),
    ) -> None:
        super().__init__(name, reads)
        self.definition = _text(definition, "definition", self.name)
        if (
            isinstance(strictness, bool)
            or not isinstance(strictness, int)
            or strictness < 1
            or strictness % 2 == 0
        ):
            raise ConfigError(
                f"{self.name}: strictness is an odd number of readings >= 1 (1, 3, 5), got "
                f"{strictness!r}: an even count can tie."
            )
        self.strictness = strictness
        verdict = partial(_verdict, name=self.name)
        self.examples = tuple(self._example(x, "verdict", verdict) for x in examples)
        self.anchors = tuple(self._example(x, "verdict", verdict, "anchor") for x in anchors)
        self._check_anchors()

    def _check_anchors(self) -> None:
        if not self.anchors:
            return
        if len({holds for _, holds, _ in self.anchors}) < 2:
            raise ConfigError(
                f"{self.name}: anchors put the yes/no threshold between what the judge gives a sample that "
                "meets the criterion and one that does not; give at least one anchor of each verdict."
            )
        _not_shown(self.name, self.examples, self.anchors)

    @cached_property
    def prompts(self) -> tuple[Any, Any]:
        return criterion_prompts(self.name, self.definition, self.reads, self.examples, self.anchors)

    @property
    def params(self) -> dict[str, Any]:
        examples = [{**x, "verdict": v, **({"reason": r} if r else {})} for x, v, r in self.examples]
        return {
            "definition": self.definition,
            "reads": list(self.reads),
            "examples": examples,
            "strictness": self.strictness,
            **({"anchors": [{**x, "verdict": v} for x, v, _ in self.anchors]} if self.anchors else {}),
        }

    def plan(self, sample: Sample, ctx: PlanContext) -> Plan:
        classify, generate = self.prompts
        x = self._inputs(sample, classify)
        if ctx.judge_mode == "generate":
            return (yield from self._readings(generate, x, ctx))
        if ctx.calibration == "anchored" and not self.anchors:
            ctx = replace(ctx, calibration=None)  # no anchors of its own: read as it comes
        asked = Asked(classify, [x], ctx)
        answers = yield asked.requests
        verdict = asked.read(answers)[0]
        if isinstance(verdict, ParseFailure):
            return MetricResult.nan(verdict.reason, raw=verdict.raw)
        p = majority(verdict.p_positive, self.strictness)
        details = {"p_yes": round(verdict.p_positive, 6), "verdict": int(p > 0.5)} | asked.details()
        if self.strictness > 1:
            details["p_majority"] = round(p, 6)
        return MetricResult(p if ctx.scoring == "expected" else float(p > 0.5), details=details)

    def _readings(self, generate: Any, x: Any, ctx: PlanContext) -> Plan:
        request = generate.request(x, ctx.language, ctx.block)
        if self.strictness > 1:
            request = [
                replace(request, params=replace(request.params, temperature=SAMPLED_TEMPERATURE, seed=i))
                for i in range(self.strictness)
            ]
        results = yield request if isinstance(request, list) else [request]
        parsed = [generate.parse(r) for r in results]
        read = [p for p in parsed if not isinstance(p, ParseFailure)]
        if not read:
            return MetricResult.nan(parsed[0].reason, raw=parsed[0].raw)
        yes = sum(p.verdict for p in read)
        details: dict[str, Any] = {"verdicts": [p.verdict for p in read], "reasons": [p.reason for p in read]}
        if len(read) < len(parsed):
            details["unread"] = [p.reason for p in parsed if isinstance(p, ParseFailure)]
        return MetricResult(float(yes > len(read) / 2), details=details)


class Rubric(UserMetric):
    """Score levels in the user's words: the score is the judge's level, normalised to [0, 1].

    Args:
        name: the result's column name.
        levels: level -> what a sample at that level is like: two or more of the digits 0-9.
        reads: the fields the judge sees (as for `Criterion`); add "reference" to rate against it.
        definition: what is rated, in a sentence (optional; the levels may say it all).
        examples: optional; each a mapping of the read fields' texts, "level" and optionally "reason".
        anchors: optional labelled samples, in the form of examples (at least two levels among them), that
            the judge is never shown: under the run's "anchored" calibration (the classify-mode default)
            the judge rates each with this rubric's own prompt, and its expected level is put on their
            scale (`prompts/calibration.py`, `LevelCalibration`): the score is the calibrated position, the
            label ("level") the level whose band holds it. A small judge's most probable level hardly
            moves between a weak and a strong sample while its expected level does; anchors turn that
            movement into labels. The order of scores within a language never changes.
    """

    kind = "rubric"

    def __init__(
        self,
        name: str,
        levels: Mapping[Any, str],
        reads: Sequence[str] = ("question", "answer"),
        definition: str = "",
        examples: Sequence[Mapping[str, Any]] = (),
        anchors: Sequence[Mapping[str, Any]] = (),
    ) -> None:
        super().__init__(name, reads)
        self.levels = _levels(levels, self.name)
        if not isinstance(definition, str):
            raise ConfigError(f"{self.name}: definition is a string, got {definition!r}.")
        self.definition = definition
        self.examples = tuple(self._example(x, "level", self._known_level) for x in examples)
        self.anchors = tuple(self._example(x, "level", self._known_level, "anchor") for x in anchors)
        self._check_anchors()

    def _check_anchors(self) -> None:
        if self.anchors and len({level for _, level, _ in self.anchors}) < 2:
            raise ConfigError(
                f"{self.name}: anchors put the judge's expected level on the rubric's scale, which takes "
                "anchors of at least two levels (e.g. the lowest and the highest)."
            )
        _not_shown(self.name, self.examples, self.anchors)

    def _known_level(self, value: object) -> int:
        level = _level(value)
        if level not in self.levels:
            raise ConfigError(f"{self.name}: an example's level {value!r} is not one of {list(self.levels)}.")
        return level

    @cached_property
    def prompts(self) -> tuple[Any, Any]:
        return rubric_prompts(self.name, self.levels, self.reads, self.definition, self.examples)

    @property
    def params(self) -> dict[str, Any]:
        examples = [{**x, "level": v, **({"reason": r} if r else {})} for x, v, r in self.examples]
        return {
            "levels": dict(self.levels),
            "reads": list(self.reads),
            "definition": self.definition,
            "examples": examples,
            **({"anchors": [{**x, "level": v} for x, v, _ in self.anchors]} if self.anchors else {}),
        }

    @property
    def _span(self) -> tuple[int, int]:
        """The lowest and the highest level (`levels` is sorted)."""
        return next(iter(self.levels)), next(reversed(self.levels))

    def _scaled(self, level: float) -> float:
        low, high = self._span
        return (level - low) / (high - low)

    def plan(self, sample: Sample, ctx: PlanContext) -> Plan:
        classify, generate = self.prompts
        x = self._inputs(sample, classify)
        if ctx.judge_mode == "generate":
            (result,) = yield [generate.request(x, ctx.language, ctx.block)]
            parsed = generate.parse(result)
            if isinstance(parsed, ParseFailure):
                return MetricResult.nan(parsed.reason, raw=parsed.raw)
            return MetricResult(
                self._scaled(parsed.rating), details={"level": parsed.rating, "reason": parsed.reason}
            )
        anchored = ctx.calibration == "anchored" and bool(self.anchors)
        anchors = self._anchor_requests(classify, ctx) if anchored else []
        answers = yield [classify.request(x, ctx.language, ctx.block), *anchors]
        verdict = classify.parse(answers[0])
        if isinstance(verdict, ParseFailure):
            return MetricResult.nan(verdict.reason, raw=verdict.raw)
        expected, best, probs = _reading(verdict)
        details: dict[str, Any] = {"level": best, "expected_level": round(expected, 6), "probs": probs}
        as_read = self._scaled(expected if ctx.scoring == "expected" else best)
        if not anchored:
            return MetricResult(as_read, details=details)
        calibration = self._calibration(classify, answers[1:])
        if isinstance(calibration, ParseFailure):
            return MetricResult.nan(calibration.reason, raw=calibration.raw)
        if calibration is None:  # the anchors did not come apart: read as it comes, and say so
            return MetricResult(
                as_read, details=details | {"calibration": {"method": "anchored", "applied": False}}
            )
        position = calibration.apply(self._scaled(expected))
        label = self._band(position)
        details |= {
            "level": label,
            "most_probable_level": best,
            "calibration": {
                "method": "anchored",
                "slope": calibration.slope,
                "intercept": calibration.intercept,
            },
        }
        return MetricResult(position if ctx.scoring == "expected" else self._scaled(label), details=details)

    def _anchor_requests(self, classify: Any, ctx: PlanContext) -> list[Any]:
        inputs = [classify.input.model_validate(fields) for fields, _, _ in self.anchors]
        return classify.anchor_requests(inputs, ctx.language, ctx.block is not None)

    def _calibration(self, classify: Any, answers: Sequence[Any]) -> LevelCalibration | ParseFailure | None:
        """The calibration the anchors' answers measure, None where they do not come apart, or the first
        anchor answer that cannot be read (which fails the sample: its scale is unknown)."""
        positions = []
        for answer in answers:
            verdict = classify.parse(answer)
            if isinstance(verdict, ParseFailure):
                return ParseFailure(verdict.raw, f"{verdict.reason} (an anchor request of {classify.tag})")
            positions.append(self._scaled(_reading(verdict)[0]))
        low, high = self._span
        return LevelCalibration.measured(positions, [level_target(v, low, high) for _, v, _ in self.anchors])

    def _band(self, position: float) -> int:
        """The level whose band (`level_target`) holds a calibrated position: the rubric's level nearest
        to it on the level scale, the lower one on a tie."""
        low, high = self._span
        value = low - 0.5 + position * (high - low + 1)
        return min(self.levels, key=lambda level: (abs(level - value), level))


def _reading(verdict: Any) -> tuple[float, int, dict[str, float]]:
    """A rubric verdict's expected level, its most probable level (the lower on a tie) and its level
    probabilities, normalised."""
    levels = [int(label) for label in verdict.labels]
    total = sum(verdict.probs)
    expected = sum(p * level for p, level in zip(verdict.probs, levels, strict=True)) / total
    best = levels[max(range(len(levels)), key=lambda i: (verdict.probs[i], -i))]
    probs = {str(level): round(p / total, 6) for level, p in zip(levels, verdict.probs, strict=True)}
    return expected, best, probs


def _not_shown(name: str, examples: Sequence[tuple[Any, ...]], anchors: Sequence[tuple[Any, ...]]) -> None:
    shown = [fields for fields, _, _ in examples]
    if any(fields in shown for fields, _, _ in anchors):
        raise ConfigError(
            f"{name}: an anchor is also an example; the judge is shown an example with its answer, "
            "so it would answer that anchor from the prompt. Use samples the prompt does not show."
        )


def _level(value: object) -> int | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, str) and value.strip().isdigit():
        return int(value.strip())
    return None


def _levels(levels: object, name: str) -> dict[int, str]:
    if not isinstance(levels, Mapping) or len(levels) < 2:
        raise ConfigError(
            f"{name}: levels= maps two or more levels to their descriptions, e.g. "
            f"{{1: 'Misses the point.', 5: 'Complete.'}}, got {levels!r}."
        )
    out: dict[int, str] = {}
    for key, text in levels.items():
        level = _level(key)
        if level is None or not 0 <= level <= MAX_LEVEL:
            raise ConfigError(
                f"{name}: level {key!r} is not a whole number from 0 to {MAX_LEVEL}; levels are "
                "single digits, so that the judge answers each in one token."
            )
        if level in out:
            raise ConfigError(f"{name}: level {level} is given twice.")
        out[level] = _text(text, f"level {level}'s description", name)
    return dict(sorted(out.items()))
