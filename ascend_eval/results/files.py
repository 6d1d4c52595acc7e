"""A results folder written in constant memory: `samples.jsonl` one line per sample as it is scored, then
`results.json`, `scores.csv` and `summary.json` from that file and the aggregates.

`results.json` has the shape it always had (aggregates, every sample with details, NaN reasons, engine
stats, provenance); its samples are copied line by line from `samples.jsonl`, never held as a list.
`summary.json` is small and holds everything but the samples, so a saved run is read back without parsing
the samples (`ascend_eval.results.stored`).
"""

from __future__ import annotations

import contextlib
import csv
import json
import math
import os
from collections.abc import Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import IO, Any, NoReturn

from ascend_eval.data import Sample
from ascend_eval.metrics.base import MetricResult
from ascend_eval.results.escape import spreadsheet_row
from ascend_eval.results.intervals import BOOTSTRAP_LIMIT, DEFAULT_RESAMPLES
from ascend_eval.writing import replaced, write_failure, write_text

SAMPLES_FILE = "samples.jsonl"
SUMMARY_FILE = "summary.json"
SUMMARY_FORMAT = 2
"""`summary.json` files with this "format" (and a samples.jsonl beside them) are read back lazily."""

_INPUTS = ("user_input", "response", "retrieved_contexts", "reference")


def is_run_folder(folder: Path) -> bool:
    """Whether `folder` holds a run this library wrote: a `summary.json`, `results.json` or
    `samples.jsonl` that begins as ours do (the first 4 KiB of each are read, no more). Such a folder may
    be written again, replacing that run's files."""
    marks = {SUMMARY_FILE: '"format"', "results.json": '"aggregate_scores"', SAMPLES_FILE: '"language"'}
    for name, mark in marks.items():
        try:
            with (folder / name).open("rb") as file:
                head = file.read(4096).decode("utf-8", "replace")
        except OSError:
            continue
        if head.lstrip().startswith("{") and mark in head:
            return True
    return False


def _jsonable(x: float) -> float | None:
    return None if math.isnan(x) else x


def sample_row(
    sample: Sample, language: str, results: Mapping[str, MetricResult], *, details: bool
) -> dict[str, Any]:
    """One sample's row: its id, language, inputs and each metric's score (None for NaN) and NaN reason,
    with each metric's details under `<metric>_details` when `details` is set."""
    row: dict[str, Any] = {"id": sample.id, "language": language}
    row.update(
        {
            "user_input": sample.user_input,
            "response": sample.response,
            "retrieved_contexts": list(sample.retrieved_contexts) if sample.retrieved_contexts else None,
            "reference": sample.reference,
        }
    )
    for metric, r in results.items():
        row[metric] = _jsonable(r.score)
        row[f"{metric}_reason"] = r.reason
        if details:
            row[f"{metric}_details"] = r.details
    return row


def sample_from_row(row: Mapping[str, Any], index: int) -> Sample:
    """The sample a row was written from (its id and inputs; other columns are not in the row)."""
    return Sample(id=str(row.get("id", index)), **{k: row.get(k) for k in _INPUTS})


def result_from_row(row: Mapping[str, Any], metric: str) -> MetricResult:
    score = row.get(metric)
    return MetricResult(
        math.nan if score is None else float(score),
        row.get(f"{metric}_reason"),
        row.get(f"{metric}_details") or {},
    )


def dump_line(row: Mapping[str, Any]) -> str:
    return json.dumps(row, ensure_ascii=False) + "\n"


class SamplesWriter:
    """Appends rows to `samples.jsonl`, flushed every `flush_every` rows so a killed run keeps what it
    scored (the request cache keeps the rest).

    The file is made with its first row (`finish` makes it for a run without any), so a run stopped
    before it scored a sample leaves no empty file. A write that fails (a full disk) cuts the file back to
    the rows that were flushed whole (removing it if none were), then raises `OutputError`: the file never
    ends in half a line, and the rows cut off are in the request cache for the re-run.
    """

    def __init__(self, path: Path, *, flush_every: int = 256) -> None:
        self.path = path
        self.count = 0
        self._flush_every = flush_every
        self._file: IO[str] | None = None
        self._whole = 0
        """Bytes at the start of the file known to hold whole rows: what the last flush wrote."""
        self._closed = False

    def write(self, row: Mapping[str, Any]) -> None:
        assert not self._closed, "write after close"
        try:
            if self._file is None:
                self._file = self.path.open("w", encoding="utf-8")
            self._file.write(dump_line(row))
            self.count += 1
            if self.count % self._flush_every == 0:
                self._file.flush()
                self._whole = self._file.tell()
        except OSError as e:
            self._failed(e)

    def close(self) -> None:
        """Flush and close the file; every row written so far stays on disk."""
        self._closed = True
        if self._file is not None:
            try:
                self._file.close()
            except OSError as e:
                self._failed(e)
            self._file = None

    def finish(self) -> None:
        """`close`, and make the file even when no row came: a results folder always has one."""
        self.close()
        if self.count == 0:
            write_text(self.path, "")

    def _failed(self, e: OSError) -> NoReturn:
        self._closed = True
        if self._file is not None:
            with contextlib.suppress(OSError):  # the rows still buffered cannot be written either
                self._file.close()
            self._file = None
        with contextlib.suppress(OSError):
            if self._whole:
                os.truncate(self.path, self._whole)
            else:
                self.path.unlink(missing_ok=True)
        raise write_failure(e, self.path) from None


def iter_rows(path: Path) -> Iterator[dict[str, Any]]:
    with path.open(encoding="utf-8") as f:
        for line in f:
            if line.strip():
                yield json.loads(line)


def write_results_json(path: Path, samples: Path, head: Mapping[str, Any], tail: Mapping[str, Any]) -> Path:
    """`results.json`: `head`'s keys, then "samples" (each line of `samples`), then `tail`'s keys; put in
    place in one step (`replaced`)."""
    with replaced(path) as out, samples.open(encoding="utf-8") as rows:
        out.write("{\n")
        for key, value in head.items():
            out.write(f"{json.dumps(key)}: {json.dumps(value, ensure_ascii=False, indent=2)},\n")
        out.write('"samples": [\n')
        first = True
        for line in rows:
            if not line.strip():
                continue
            out.write(("" if first else ",\n") + line.rstrip("\n"))
            first = False
        out.write("\n]")
        for key, value in tail.items():
            out.write(f",\n{json.dumps(key)}: {json.dumps(value, ensure_ascii=False, indent=2)}")
        out.write("\n}\n")
    return path


def write_job_results(
    path: Path, aggregates: Sequence[Mapping[str, Any]], rows: Iterable[Mapping[str, Any]]
) -> Path:
    """A job's `job_results.json`, `{"aggregate_scores": [...], "rows": [...]}`, one row per line, written
    row by row and then put in place in one step (a server reads it once the job has completed)."""
    with replaced(path) as out:
        out.write('{\n"aggregate_scores": ')
        out.write(json.dumps(list(aggregates), ensure_ascii=False, indent=2))
        out.write(',\n"rows": [')
        for i, row in enumerate(rows):
            out.write(("\n" if i == 0 else ",\n") + dump_line(row).rstrip("\n"))
        out.write("\n]\n}\n")
    return path


def write_scores_csv(path: Path, rows: Iterable[Mapping[str, Any]]) -> Path:
    """Per-sample scores without details; list columns as JSON text. UTF-8 with a BOM so that spreadsheet
    programs show Chinese correctly, and made safe to open in one: a text cell (a question, an id, a reason)
    that starts with `=`, `+`, `-`, `@`, a tab or a carriage return starts with a single quote, so that it is
    not run as a formula (`spreadsheet_row`); numbers, scores included, are written as they are. Put in
    place in one step (`replaced`)."""
    with replaced(path, newline="", encoding="utf-8-sig") as f:
        writer: csv.DictWriter[str] | None = None
        for row in rows:
            flat = {
                k: json.dumps(v, ensure_ascii=False) if isinstance(v, list) else v
                for k, v in row.items()
                if not k.endswith("_details")
            }
            if writer is None:
                writer = csv.DictWriter(f, fieldnames=list(flat))
                writer.writerow(spreadsheet_row({name: name for name in flat}))
            writer.writerow(spreadsheet_row(flat))
    return path


def write_summary(path: Path, summary: Mapping[str, Any]) -> Path:
    return write_text(path, json.dumps(summary, ensure_ascii=False, indent=2))


def summary_dict(
    *,
    aggregates: list[dict[str, Any]],
    intervals: Mapping[str, tuple[float, float] | None],
    samples: int,
    languages: Mapping[str, int],
    nan_reasons: Mapping[str, Mapping[str, int]],
    engine: Mapping[str, Any],
    provenance: Mapping[str, Any],
) -> dict[str, Any]:
    """What `summary.json` holds: everything about a run but its samples."""
    return {
        "format": SUMMARY_FORMAT,
        "aggregate_scores": aggregates,
        "intervals": {
            "confidence": 0.95,
            "method": (
                f"percentile bootstrap of the mean over samples, {DEFAULT_RESAMPLES} resamples, seed 0 "
                f"(normal approximation above {BOOTSTRAP_LIMIT} scored samples)"
            ),
            "scores": {m: None if ci is None else list(ci) for m, ci in intervals.items()},
        },
        "samples": samples,
        "metrics": [a["name"] for a in aggregates],
        "languages": dict(languages),
        "nan_reasons": {m: dict(r) for m, r in nan_reasons.items()},
        "engine": dict(engine),
        "provenance": dict(provenance),
    }
