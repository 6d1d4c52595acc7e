"""The outcome of one evaluation: per-sample scores (or NaN with a reason), aggregates, engine stats and
provenance, with exports to JSON, CSV, Parquet and pandas."""

from __future__ import annotations

import json
import math
import tempfile
from collections import Counter
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from ascend_eval.data import Sample
from ascend_eval.engine.stats import RoundStats, StageStats
from ascend_eval.errors import BACKEND_ERROR, ConfigError
from ascend_eval.metrics.base import MetricResult
from ascend_eval.results.files import (
    SAMPLES_FILE,
    SUMMARY_FILE,
    SUMMARY_FORMAT,
    SamplesWriter,
    iter_rows,
    sample_row,
    summary_dict,
    write_results_json,
    write_scores_csv,
    write_summary,
)
from ascend_eval.results.intervals import DEFAULT_RESAMPLES, mean_interval
from ascend_eval.results.page import write_run_report
from ascend_eval.results.stored import RowFile, StoredColumn, StoredLanguages, StoredSamples

OUTPUT_FILES = ("results.json", "samples.jsonl", "scores.csv", "summary.json", "report.html")
"""What `EvaluationResult.save` writes into its folder."""


def check_output_dir(
    out_dir: str | Path, *, inputs: Sequence[str | Path | None] = (), what: str = "out_dir"
) -> Path:
    """The folder `EvaluationResult.save` writes to, checked (and created) before a run rather than after.

    Args:
        out_dir: the folder.
        inputs: files the run reads (the dataset); none of them may be one `save` would overwrite.
        what: how the caller names the folder in messages ("--out" on the command line).

    Raises:
        ConfigError: the name is empty, names an existing file, would overwrite an input, or the folder
            cannot be created or written to.
    """
    text = str(out_dir)
    if not text.strip():
        raise ConfigError(
            f"{what} is empty. Name the folder for {', '.join(OUTPUT_FILES)}, e.g. {what} out/run1."
        )
    out = Path(text).expanduser()
    if out.exists() and not out.is_dir():
        raise ConfigError(
            f"{what} {text!r} is an existing file, not a folder. Name a folder (it is created if missing)."
        )
    targets = {(out / name).resolve(): name for name in OUTPUT_FILES}
    for given in inputs:
        if given is None or not str(given).strip():
            continue
        path = Path(given).expanduser()
        if path.is_file() and path.resolve() in targets:
            raise ConfigError(
                f"{what} {text!r} would overwrite the input {str(given)!r} with the run's "
                f"{targets[path.resolve()]}. Write the results to another folder."
            )
    try:
        out.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryFile(dir=out):
            pass
    except OSError as e:
        raise ConfigError(
            f"{what} {text!r} cannot be written to ({e.strerror or e}). Pass a folder you can write to."
        ) from None
    return out


def aggregate(name: str, scores: Sequence[float]) -> dict[str, Any]:
    """NeMo Evaluator's aggregate shape, NaN excluded; `count` is the number of scored samples.

    >>> aggregate("faithfulness", [1.0, float("nan"), 0.5])
    {'name': 'faithfulness', 'count': 2, 'mean': 0.75, 'min': 0.5, 'max': 1.0, 'nan_count': 1}
    >>> aggregate("faithfulness", [float("nan")])["mean"] is None
    True
    """
    valid = [s for s in scores if not math.isnan(s)]
    return {
        "name": name,
        "count": len(valid),
        "mean": sum(valid) / len(valid) if valid else None,
        "min": min(valid) if valid else None,
        "max": max(valid) if valid else None,
        "nan_count": len(scores) - len(valid),
    }


@dataclass
class EvaluationResult:
    """Scores of every metric on every sample, in dataset order."""

    samples: Sequence[Sample]
    results: Mapping[str, Sequence[MetricResult]]
    """metric name -> one `MetricResult` per sample."""
    languages: Sequence[str]
    rounds: list[RoundStats] = field(default_factory=list)
    stages: dict[str, StageStats] = field(default_factory=dict)
    """Engine stats per stage (a prompt of the judge, an embedder or reranker kind) over the run."""
    provenance: dict[str, Any] = field(default_factory=dict)
    wall_seconds: float = 0.0
    _intervals: dict[tuple[Any, ...], tuple[float, float] | None] = field(
        default_factory=dict, init=False, repr=False, compare=False
    )
    """Bootstrap intervals already computed, keyed by the scores and settings: `save` and `table` both
    show them, and on a large run each costs seconds per metric."""

    @property
    def metrics(self) -> list[str]:
        return list(self.results)

    def __getitem__(self, metric: str) -> list[float]:
        """Per-sample scores of one metric (NaN where it could not be scored)."""
        if metric not in self.results:
            raise ConfigError(f"No scores for {metric!r}; this result has {self.metrics}.")
        return [r.score for r in self.results[metric]]

    def aggregates(self) -> list[dict[str, Any]]:
        """`[{name, count, mean, min, max, nan_count}]`, one entry per metric."""
        return [aggregate(m, self[m]) for m in self.metrics]

    def intervals(
        self, *, confidence: float = 0.95, seed: int = 0, resamples: int = DEFAULT_RESAMPLES
    ) -> dict[str, tuple[float, float] | None]:
        """A percentile-bootstrap confidence interval for each metric's mean, NaN excluded.

        It says how far the mean could move on another dataset of the same kind and size (the samples
        resampled with replacement, `ascend_eval.results.intervals`); seeded, so it is the same on every call.

        Returns:
            metric -> (low, high), or None where fewer than 2 samples were scored.

        Raises:
            ConfigError: `confidence` is not in (0, 1).
        """
        if not 0.0 < confidence < 1.0:
            raise ConfigError(f"confidence must be in (0, 1), e.g. 0.95; got {confidence!r}.")
        out = {}
        for m in self.metrics:
            key = (m, confidence, seed, resamples, tuple(self[m]))
            if key not in self._intervals:
                self._intervals[key] = mean_interval(
                    self[m], confidence=confidence, resamples=resamples, seed=seed
                )
            out[m] = self._intervals[key]
        return out

    def nan_reasons(self, metric: str) -> Counter[str]:
        """How often each reason made this metric NaN."""
        return Counter(r.reason or "unknown" for r in self.results[metric] if not r.ok)

    def failures(self, *, max_backend_errors: float = 0.1) -> list[str]:
        """Why this run should not count as a success, empty when it should: a metric that scored no
        sample at all, or more than `max_backend_errors` (a fraction) of all scores lost to backend
        errors (an unreachable judge, a wrong URL, a device that failed). The command line exits non-zero
        on any of them, after the results are saved.

        Raises:
            ConfigError: `max_backend_errors` is not a fraction in [0, 1].
        """
        if not 0.0 <= max_backend_errors <= 1.0:
            raise ConfigError(f"max_backend_errors must be a fraction in [0, 1], got {max_backend_errors!r}.")
        out = []
        for a in self.aggregates():
            if a["count"] == 0:
                reasons = ", ".join(f"{r} x{n}" for r, n in self.nan_reasons(a["name"]).most_common(3))
                out.append(f"{a['name']}: no sample was scored ({reasons}).")
        total = sum(len(results) for results in self.results.values())
        failed = sum(
            n
            for metric in self.metrics
            for reason, n in self.nan_reasons(metric).items()
            if reason.startswith(BACKEND_ERROR)
        )
        if total and failed / total > max_backend_errors:
            out.append(
                f"{failed} of {total} scores failed in a backend, over the allowed "
                f"{max_backend_errors:.0%}; see the NaN reasons above. Check the model, URL or device, "
                "or raise --max-backend-errors."
            )
        return out

    def rows(self, *, details: bool = False) -> list[dict[str, Any]]:
        """One dict per sample: its id, language, inputs and each metric's score and NaN reason."""
        return list(self._iter_rows(details=details))

    def iter_rows(self, *, details: bool = False) -> Iterator[dict[str, Any]]:
        """`rows()` one at a time: a result read from its folder holds only the row being read."""
        return self._iter_rows(details=details)

    def _iter_rows(self, *, details: bool) -> Iterator[dict[str, Any]]:
        for i, sample in enumerate(self.samples):
            results = {metric: column[i] for metric, column in self.results.items()}
            yield sample_row(sample, self.languages[i], results, details=details)

    def to_dict(self, *, details: bool = True) -> dict[str, Any]:
        return {
            "aggregate_scores": self.aggregates(),
            "samples": self.rows(details=details),
            "nan_reasons": {m: dict(self.nan_reasons(m)) for m in self.metrics},
            "engine": self._engine(),
            "provenance": self.provenance,
        }

    def _engine(self) -> dict[str, Any]:
        return {
            "wall_seconds": self.wall_seconds,
            "rounds": [asdict(r) for r in self.rounds],
            "stages": {label: asdict(stage) for label, stage in self.stages.items()},
        }

    def to_json(self, path: str | Path, *, details: bool = True) -> Path:
        path = Path(path)
        path.write_text(
            json.dumps(self.to_dict(details=details), ensure_ascii=False, indent=2), encoding="utf-8"
        )
        return path

    def to_csv(self, path: str | Path) -> Path:
        """Per-sample scores; list columns are written as JSON text. UTF-8 with a BOM so that spreadsheet
        programs show Chinese correctly."""
        return write_scores_csv(Path(path), self._iter_rows(details=False))

    def to_pandas(self) -> Any:
        try:
            import pandas as pd
        except ImportError as e:
            from ascend_eval.errors import MissingDependencyError

            raise MissingDependencyError("to_pandas() needs pandas: pip install 'ascend-eval[data]'.") from e
        return pd.DataFrame(self.rows())

    def to_parquet(self, path: str | Path) -> Path:
        path = Path(path)
        self.to_pandas().to_parquet(path, index=False)
        return path

    def save(self, out_dir: str | Path) -> dict[str, Path]:
        """Write `samples.jsonl` (one line per sample, details included), `results.json` (everything),
        `scores.csv` (per sample), `summary.json` (aggregates, under "intervals" each mean's 95% interval as
        [low, high] or null, NaN reasons, engine stats and provenance: all but the samples) and
        `report.html` (the run's page: scores, distributions, lowest samples explained, engine stages).
        Written row by row: a run of any size is saved in constant memory.

        Raises:
            ConfigError: `out_dir` cannot be a results folder (see `check_output_dir`).
            OutputError: a file could not be written (a full disk); no half-written file is left.
        """
        out = check_output_dir(out_dir)
        writer = SamplesWriter(out / SAMPLES_FILE)
        try:
            for row in self._iter_rows(details=True):
                writer.write(row)
        finally:
            writer.close()
        writer.finish()  # made even for a result of no samples
        return self.write_folder(out)

    def summary(self) -> dict[str, Any]:
        """What `summary.json` holds: everything about the run but its samples."""
        return summary_dict(
            aggregates=self.aggregates(),
            intervals=self.intervals(),
            samples=len(self.samples),
            languages=Counter(self.languages),
            nan_reasons={m: self.nan_reasons(m) for m in self.metrics},
            engine=self._engine(),
            provenance=self.provenance,
        )

    def write_folder(self, out: Path) -> dict[str, Path]:
        """Everything of a results folder but `samples.jsonl`, which must be there already."""
        summary = self.summary()
        samples = out / SAMPLES_FILE
        tail = {k: summary[k] for k in ("nan_reasons", "engine", "provenance")}
        paths = {
            "samples": samples,
            "results": write_results_json(
                out / "results.json", samples, {"aggregate_scores": summary["aggregate_scores"]}, tail
            ),
            "scores": write_scores_csv(out / "scores.csv", iter_rows(samples)),
            "summary": write_summary(out / SUMMARY_FILE, summary),
        }
        # Last, so that the data files are on disk whatever happens while the page is drawn.
        paths["report"] = write_run_report(self, out)
        return paths

    @classmethod
    def load(cls, path: str | Path) -> EvaluationResult:
        """A saved run back from its `results.json` (or the folder holding it), for reports and comparisons.

        Scores saved as null come back as NaN; samples keep the columns the file has (id, language, inputs).

        Raises:
            ConfigError: there is no results.json there, or it is not one this library wrote.
        """
        given = Path(path).expanduser()
        file = given / "results.json" if given.is_dir() else given
        stored = StoredResult.open(file.parent)
        if stored is not None:
            return stored
        if not file.is_file():
            raise ConfigError(
                f"{str(path)!r} holds no results.json. Name a folder that `ascend-eval evaluate --out` wrote."
            )
        try:
            data = json.loads(file.read_text(encoding="utf-8"))
            metrics = [a["name"] for a in data["aggregate_scores"]]
            rows = data["samples"]
        except (ValueError, KeyError, TypeError) as e:
            raise ConfigError(f"{str(file)!r} is not an ascend-eval results file ({e}).") from None
        inputs = ("user_input", "response", "retrieved_contexts", "reference")
        samples = [
            Sample(id=str(row.get("id", i)), **{k: row.get(k) for k in inputs}) for i, row in enumerate(rows)
        ]
        results = {
            m: [
                MetricResult(
                    math.nan if row.get(m) is None else float(row[m]),
                    row.get(f"{m}_reason"),
                    row.get(f"{m}_details") or {},
                )
                for row in rows
            ]
            for m in metrics
        }
        engine = data.get("engine") or {}
        return cls(
            samples=samples,
            results=results,
            languages=[row.get("language", "en") for row in rows],
            rounds=[RoundStats(**r) for r in engine.get("rounds", [])],
            stages={label: StageStats(**s) for label, s in (engine.get("stages") or {}).items()},
            provenance=data.get("provenance") or {},
            wall_seconds=float(engine.get("wall_seconds") or 0.0),
        )

    def table(self) -> str:
        """The aggregates as an aligned text table, with each mean's 95% bootstrap interval (`intervals`)."""
        header = ("metric", "count", "mean", "95% CI", "min", "max", "nan")
        intervals = self.intervals()
        body = []
        for a in self.aggregates():
            mean, smallest, largest = (
                f"{a[k]:.4f}" if a[k] is not None else "-" for k in ("mean", "min", "max")
            )
            ci = intervals[a["name"]]
            shown = "-" if ci is None else f"[{ci[0]:.4f}, {ci[1]:.4f}]"
            body.append((a["name"], str(a["count"]), mean, shown, smallest, largest, str(a["nan_count"])))
        widths = [max(len(r[i]) for r in [header, *body]) for i in range(len(header))]
        lines = [
            "  ".join(
                c.ljust(w) if i == 0 else c.rjust(w) for i, (c, w) in enumerate(zip(r, widths, strict=True))
            )
            for r in [header, *body]
        ]
        lines.insert(1, "  ".join("-" * w for w in widths))
        return "\n".join(lines)

    def __repr__(self) -> str:
        means = {a["name"]: None if a["mean"] is None else round(a["mean"], 4) for a in self.aggregates()}
        return f"EvaluationResult({len(self.samples)} samples, {means})"


class StoredResult(EvaluationResult):
    """A saved run read back lazily from its folder: aggregates, intervals, NaN reasons, engine stats and
    provenance come from `summary.json`; per-sample scores, reasons and languages from one pass over
    `samples.jsonl` when first asked for; a sample's inputs and details when that sample is asked for.
    Memory stays a few bytes per sample however large the run.
    """

    def __init__(self, folder: Path, summary: Mapping[str, Any]) -> None:
        metrics = list(summary["metrics"])
        rows = RowFile(folder / SAMPLES_FILE, metrics)
        engine = summary.get("engine") or {}
        super().__init__(
            samples=StoredSamples(rows),
            results={m: StoredColumn(rows, m) for m in metrics},
            languages=StoredLanguages(rows),
            rounds=[RoundStats(**r) for r in engine.get("rounds", [])],
            stages={label: StageStats(**s) for label, s in (engine.get("stages") or {}).items()},
            provenance=dict(summary.get("provenance") or {}),
            wall_seconds=float(engine.get("wall_seconds") or 0.0),
        )
        self.folder = folder
        self._rows = rows
        self._summary = dict(summary)

    @classmethod
    def open(cls, folder: Path) -> StoredResult | None:
        """The run saved in `folder`, or None when it holds no `summary.json` of this format with a
        `samples.jsonl` beside it (an older folder, read whole by `EvaluationResult.load`)."""
        file = folder / SUMMARY_FILE
        if not (file.is_file() and (folder / SAMPLES_FILE).is_file()):
            return None
        try:
            summary = json.loads(file.read_text(encoding="utf-8"))
        except ValueError:
            return None
        if not isinstance(summary, dict) or summary.get("format") != SUMMARY_FORMAT:
            return None
        return cls(folder, summary)

    def __getitem__(self, metric: str) -> list[float]:
        if metric not in self.results:
            raise ConfigError(f"No scores for {metric!r}; this result has {self.metrics}.")
        return self._rows.scores(metric)

    def aggregates(self) -> list[dict[str, Any]]:
        return [dict(a) for a in self._summary["aggregate_scores"]]

    def nan_reasons(self, metric: str) -> Counter[str]:
        return Counter((self._summary.get("nan_reasons") or {}).get(metric) or {})

    def intervals(
        self, *, confidence: float = 0.95, seed: int = 0, resamples: int = DEFAULT_RESAMPLES
    ) -> dict[str, tuple[float, float] | None]:
        saved = (self._summary.get("intervals") or {}).get("scores")
        if saved is not None and (confidence, seed, resamples) == (0.95, 0, DEFAULT_RESAMPLES):
            return {m: None if saved.get(m) is None else tuple(saved[m]) for m in self.metrics}
        return super().intervals(confidence=confidence, seed=seed, resamples=resamples)

    def summary(self) -> dict[str, Any]:
        return dict(self._summary)

    def _iter_rows(self, *, details: bool) -> Iterator[dict[str, Any]]:
        # The file's lines are these rows already: one parse per sample, not one per sample and metric.
        for row in iter_rows(self._rows.path):
            yield row if details else {k: v for k, v in row.items() if not k.endswith("_details")}

    def save(self, out_dir: str | Path) -> dict[str, Path]:
        """Copy the run into another folder (or rewrite its own files but `samples.jsonl`)."""
        out = check_output_dir(out_dir)
        target = out / SAMPLES_FILE
        if target.resolve() != self._rows.path.resolve():
            import shutil

            shutil.copyfile(self._rows.path, target)
        return self.write_folder(out)

    def __repr__(self) -> str:
        means = {a["name"]: None if a["mean"] is None else round(a["mean"], 4) for a in self.aggregates()}
        return f"StoredResult({len(self.samples)} samples, {means}, folder={str(self.folder)!r})"
