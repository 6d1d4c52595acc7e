"""Two runs of the same dataset compared metric by metric: the change in each mean with a paired
bootstrap interval, how many samples moved up or down, the samples that moved most (with why, from each
run's details), and how the two runs' judges and prompts differ.

`compare_runs` does the work; `RunComparison` renders it as Markdown, self-contained HTML or a dict.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ascend_eval.errors import ConfigError
from ascend_eval.report.compare_render import comparison_html, comparison_markdown
from ascend_eval.report.explain import explain
from ascend_eval.results import EvaluationResult
from ascend_eval.results.intervals import DEFAULT_RESAMPLES, excludes_zero, paired_interval

UNCHANGED_EPS = 1e-9
"""Two scores closer than this count as unchanged: float noise, not a different verdict."""

_QUESTION_CHARS = 60


@dataclass(frozen=True)
class Mover:
    """One sample whose score changed between the runs, or that one run could not score (NaN)."""

    id: str
    question: str
    """The start of the sample's question (user_input)."""
    score_a: float
    score_b: float
    why_a: str
    """What run A's details say about its score (`ascend_eval.report.explain`)."""
    why_b: str

    @property
    def change(self) -> float:
        """score_b - score_a (NaN where either is)."""
        return self.score_b - self.score_a

    def to_dict(self) -> dict[str, Any]:
        """JSON-able; NaN scores (and their change) as None."""
        return {
            "id": self.id,
            "question": self.question,
            "score_a": _number(self.score_a),
            "score_b": _number(self.score_b),
            "change": _number(self.change),
            "why_a": self.why_a,
            "why_b": self.why_b,
        }


@dataclass(frozen=True)
class MetricComparison:
    """One metric scored in both runs, over the shared samples both runs scored."""

    name: str
    n: int
    """Shared samples scored (not NaN) in both runs: the pairs everything below is computed on."""
    left_out: int
    """Shared samples NaN in at least one run, so not in the pairs."""
    mean_a: float | None
    """Run A's mean over the `n` pairs (it differs from A's own aggregate mean where B has a NaN)."""
    mean_b: float | None
    difference: float | None
    """mean_b - mean_a, the mean of the paired differences."""
    interval: tuple[float, float] | None
    """Paired percentile-bootstrap interval for `difference`; None with fewer than 2 pairs."""
    up: int
    down: int
    unchanged: int
    movers: tuple[Mover, ...]
    """The samples with the largest changes, largest first."""
    unscored: tuple[Mover, ...] = ()
    """The first of the `left_out` samples, with each run's NaN reason."""

    @property
    def excludes_zero(self) -> bool:
        """Whether the interval lies wholly above or below 0: a change larger than the resampling of
        these samples explains at this confidence. Not a correction for comparing many metrics at once,
        nor for the judge's own randomness."""
        return excludes_zero(self.interval)

    def to_dict(self) -> dict[str, Any]:
        """JSON-able, with `excludes_zero` spelled out."""
        return {
            "name": self.name,
            "n": self.n,
            "left_out": self.left_out,
            "mean_a": self.mean_a,
            "mean_b": self.mean_b,
            "difference": self.difference,
            "interval": None if self.interval is None else list(self.interval),
            "excludes_zero": self.excludes_zero,
            "up": self.up,
            "down": self.down,
            "unchanged": self.unchanged,
            "movers": [m.to_dict() for m in self.movers],
            "unscored": [m.to_dict() for m in self.unscored],
        }


@dataclass(frozen=True)
class RunComparison:
    """Run B against run A; changes are B - A."""

    label_a: str
    label_b: str
    header: tuple[tuple[str, str, str], ...]
    """(what, run A's value, run B's value) for the judges, judge mode, decoding and dataset."""
    differences: tuple[str, ...]
    """Each setting the runs differ in, as a sentence ("judge: x -> y", "prompt statements: @1 -> @2")."""
    shared: int
    """Samples matched by id."""
    only_a: tuple[str, ...]
    """Ids of samples in run A only (left out of every comparison)."""
    only_b: tuple[str, ...]
    metrics: tuple[MetricComparison, ...]
    metrics_only_a: tuple[str, ...]
    metrics_only_b: tuple[str, ...]
    confidence: float
    resamples: int
    seed: int

    def metric(self, name: str) -> MetricComparison:
        """One metric's comparison.

        Raises:
            ConfigError: the metric is not in both runs.
        """
        for m in self.metrics:
            if m.name == name:
                return m
        raise ConfigError(f"No comparison for {name!r}; both runs have {[m.name for m in self.metrics]}.")

    def method(self) -> str:
        """How the intervals were computed, in one sentence."""
        return (
            f"{self.confidence:.0%} intervals: percentile bootstrap of the mean paired difference B - A over "
            f"the samples both runs scored ({self.resamples} resamples of whole samples, seed {self.seed})."
        )

    def to_dict(self) -> dict[str, Any]:
        """Everything, JSON-able (None where there is no value)."""
        return {
            "run_a": self.label_a,
            "run_b": self.label_b,
            "header": [{"what": w, "a": a, "b": b} for w, a, b in self.header],
            "differences": list(self.differences),
            "samples": {"shared": self.shared, "only_a": list(self.only_a), "only_b": list(self.only_b)},
            "metrics": [m.to_dict() for m in self.metrics],
            "metrics_only_a": list(self.metrics_only_a),
            "metrics_only_b": list(self.metrics_only_b),
            "confidence": self.confidence,
            "resamples": self.resamples,
            "seed": self.seed,
            "method": self.method(),
        }

    def to_markdown(self) -> str:
        """The comparison as a Markdown document (GitHub tables)."""
        return comparison_markdown(self.to_dict())

    def to_html(self) -> str:
        """The comparison as one self-contained HTML page: inline CSS, no scripts, no external links."""
        return comparison_html(self.to_dict())


def _number(value: float) -> float | None:
    return None if math.isnan(value) else value


def _load(run: EvaluationResult | str | Path, side: str) -> tuple[EvaluationResult, str]:
    if isinstance(run, EvaluationResult):
        return run, f"run {side}"
    if isinstance(run, (str, Path)):
        return EvaluationResult.load(run), str(run)
    raise ConfigError(
        f"Run {side} is a {type(run).__name__}; pass an EvaluationResult or the folder "
        "`ascend-eval evaluate --out` wrote."
    )


def _called(side: str, label: str) -> str:
    return f"Run {side}" if label == f"run {side}" else f"Run {side} ({label})"


def _index(result: EvaluationResult, label: str) -> dict[str, int]:
    counts = Counter(s.id for s in result.samples)
    duplicated = sorted(i for i, n in counts.items() if n > 1)
    if duplicated:
        shown = ", ".join(repr(i) for i in duplicated[:5]) + (" ..." if len(duplicated) > 5 else "")
        raise ConfigError(
            f"{label} has {len(duplicated)} duplicated sample ids ({shown}); samples are matched between "
            "runs by id. Give every row of the dataset a unique `id` column and run it again."
        )
    return {s.id: i for i, s in enumerate(result.samples)}


def _excerpt(text: str | None) -> str:
    flat = " ".join((text or "").split())
    return flat if len(flat) <= _QUESTION_CHARS else flat[: _QUESTION_CHARS - 1] + "…"


def _mean(values: Sequence[float]) -> float | None:
    return math.fsum(values) / len(values) if values else None


def _compare_metric(
    name: str,
    a: EvaluationResult,
    b: EvaluationResult,
    pairs: Sequence[tuple[str, int, int]],
    *,
    confidence: float,
    resamples: int,
    seed: int,
    top: int,
) -> MetricComparison:
    def mover(sid: str, i: int, j: int) -> Mover:
        return Mover(
            id=sid,
            question=_excerpt(a.samples[i].user_input),
            score_a=a.results[name][i].score,
            score_b=b.results[name][j].score,
            why_a=explain(a.results[name][i]),
            why_b=explain(b.results[name][j]),
        )

    scored, unscored = [], []
    for sid, i, j in pairs:
        both = not math.isnan(a.results[name][i].score) and not math.isnan(b.results[name][j].score)
        (scored if both else unscored).append((sid, i, j))
    xs = [a.results[name][i].score for _, i, _ in scored]
    ys = [b.results[name][j].score for _, _, j in scored]
    changes = [y - x for x, y in zip(xs, ys, strict=True)]
    mean_a, mean_b = _mean(xs), _mean(ys)
    order = sorted(
        (k for k, d in enumerate(changes) if abs(d) > UNCHANGED_EPS), key=lambda k: (-abs(changes[k]), k)
    )
    movers = tuple(mover(*scored[k]) for k in order[:top])
    return MetricComparison(
        name=name,
        n=len(scored),
        left_out=len(pairs) - len(scored),
        mean_a=mean_a,
        mean_b=mean_b,
        difference=None if mean_a is None or mean_b is None else _mean(changes),
        interval=paired_interval(xs, ys, confidence=confidence, resamples=resamples, seed=seed),
        up=sum(d > UNCHANGED_EPS for d in changes),
        down=sum(d < -UNCHANGED_EPS for d in changes),
        unchanged=sum(abs(d) <= UNCHANGED_EPS for d in changes),
        movers=movers,
        unscored=tuple(mover(*pair) for pair in unscored[:top]),
    )


def _text(value: Any) -> str:
    if value is None:
        return "-"
    if isinstance(value, dict):
        return ", ".join(f"{k}={_text(v)}" for k, v in value.items()) or "-"
    if isinstance(value, (list, tuple)):
        return ", ".join(_text(v) for v in value) or "-"
    return str(value)


def _prompt_versions(prompts: Any) -> dict[str, str]:
    out = {}
    for entry in prompts if isinstance(prompts, list) else []:
        name, _, version = str(entry).partition("@")
        out[name] = version
    return out


def _setup(a: dict[str, Any], b: dict[str, Any]) -> tuple[tuple[tuple[str, str, str], ...], tuple[str, ...]]:
    """The header rows and the differences between two runs' provenance."""
    header: list[tuple[str, str, str]] = []
    differences: list[str] = []
    models_a, models_b = a.get("models") or {}, b.get("models") or {}
    for role in sorted(set(models_a) | set(models_b)):
        header.append((role, _text(models_a.get(role)), _text(models_b.get(role))))
    for key in ("judge_mode", "language", "ragas_compat", "decoding"):
        if key in a or key in b:
            header.append((key, _text(a.get(key)), _text(b.get(key))))
    dataset_a, dataset_b = a.get("dataset") or {}, b.get("dataset") or {}
    header.append(("dataset", _text(dataset_a.get("source")), _text(dataset_b.get("source"))))
    header.append(("created", _text(a.get("created")), _text(b.get("created"))))
    for what, left, right in header:
        if what not in ("created", "dataset") and left != right:
            differences.append(f"{what}: {left} -> {right}")
    prompts_a, prompts_b = _prompt_versions(a.get("prompts")), _prompt_versions(b.get("prompts"))
    for name in sorted(set(prompts_a) | set(prompts_b)):
        left, right = prompts_a.get(name), prompts_b.get(name)
        if left != right:
            shown = [f"@{v}" if v is not None else "(not used)" for v in (left, right)]
            differences.append(f"prompt {name}: {shown[0]} -> {shown[1]}")
    params_a, params_b = a.get("metrics") or {}, b.get("metrics") or {}
    for name in sorted(set(params_a) & set(params_b)):
        if params_a[name] != params_b[name]:
            differences.append(f"{name} settings: {_text(params_a[name])} -> {_text(params_b[name])}")
    return tuple(header), tuple(differences)


def compare_runs(
    a: EvaluationResult | str | Path,
    b: EvaluationResult | str | Path,
    *,
    seed: int = 0,
    resamples: int = DEFAULT_RESAMPLES,
    top: int = 5,
    confidence: float = 0.95,
) -> RunComparison:
    """Compare run B with run A on the samples they share, metric by metric.

    Samples are matched by id. For each metric in both runs, the pairs are the shared samples both runs
    scored (a NaN on either side leaves the pair out, and is counted). Each metric gets both runs' means
    over those pairs, the mean change B - A with a paired percentile-bootstrap interval
    (`ascend_eval.results.intervals.paired_interval`), how many samples went up, down or stayed (within
    `UNCHANGED_EPS`), and the `top` samples that moved most with what each run's details say about them.

    Args:
        a, b: `EvaluationResult`s, or the folders (or results.json files) `save` wrote.
        seed: the bootstrap's seed; the same seed gives the same intervals.
        resamples: bootstrap resamples per metric.
        top: how many of the largest movers to keep per metric (0 for none).
        confidence: the intervals' nominal coverage, in (0, 1).

    Returns:
        A `RunComparison`; `.to_markdown()`, `.to_html()` and `.to_dict()` render it.

    Raises:
        ConfigError: a run cannot be loaded, has duplicated sample ids, the runs share no sample id or
            no metric, or `top`, `resamples` or `confidence` is out of range.
    """
    if top < 0:
        raise ConfigError(f"top must be 0 or more, got {top!r}.")
    if resamples < 1:
        raise ConfigError(f"resamples must be positive (e.g. {DEFAULT_RESAMPLES}), got {resamples!r}.")
    if not 0.0 < confidence < 1.0:
        raise ConfigError(f"confidence must be in (0, 1), e.g. 0.95; got {confidence!r}.")
    run_a, label_a = _load(a, "A")
    run_b, label_b = _load(b, "B")
    index_a, index_b = _index(run_a, _called("A", label_a)), _index(run_b, _called("B", label_b))
    pairs = [(sid, i, index_b[sid]) for sid, i in index_a.items() if sid in index_b]
    only_a = tuple(sid for sid in index_a if sid not in index_b)
    only_b = tuple(sid for sid in index_b if sid not in index_a)
    if not pairs:
        raise ConfigError(
            f"{_called('A', label_a)} ({len(index_a)} samples) and {_called('B', label_b)} "
            f"({len(index_b)} samples) share no sample id (A starts {list(index_a)[:3]}, B starts "
            f"{list(index_b)[:3]}); samples are matched by id. Compare two runs of the same dataset, with "
            "the same `id` column."
        )
    common = [m for m in run_a.metrics if m in run_b.results]
    if not common:
        raise ConfigError(
            f"Runs A and B have no metric in common (A: {run_a.metrics}, B: {run_b.metrics}). Compare runs "
            "that scored at least one metric both."
        )
    header, differences = _setup(run_a.provenance, run_b.provenance)
    return RunComparison(
        label_a=label_a,
        label_b=label_b,
        header=header,
        differences=differences,
        shared=len(pairs),
        only_a=only_a,
        only_b=only_b,
        metrics=tuple(
            _compare_metric(
                m, run_a, run_b, pairs, confidence=confidence, resamples=resamples, seed=seed, top=top
            )
            for m in common
        ),
        metrics_only_a=tuple(m for m in run_a.metrics if m not in run_b.results),
        metrics_only_b=tuple(m for m in run_b.metrics if m not in run_a.results),
        confidence=confidence,
        resamples=resamples,
        seed=seed,
    )
