"""The report of one evaluation run: a self-contained HTML page beside results.json.

Inline CSS and inline SVG only, no script and no external reference (fonts, images, styles), so the file
can be mailed or archived alone and read offline. Every piece of user text (questions, answers, contexts,
judge output) and every name is HTML-escaped, with each bidi control (U+202E, ...) shown as a visible marker
so that it cannot reorder what the page shows (`ascend_eval.results.escape.html_text`).

`EvaluationResult.save` calls it (`ascend_eval.results.result`), so this module reads a result through the
`RunResult` protocol, which `EvaluationResult` satisfies, instead of importing that module back.
"""

from __future__ import annotations

import heapq
import itertools
import json
import math
import re
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import asdict
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Protocol

from ascend_eval.data import Sample
from ascend_eval.engine.stats import StageStats
from ascend_eval.metrics.base import MetricResult
from ascend_eval.results.details import clip, details_html
from ascend_eval.results.escape import html_text
from ascend_eval.results.svg import histogram_svg
from ascend_eval.writing import write_text

LOWEST = 3
"""Samples shown per metric: the lowest scored ones, and as many NaN ones."""
EXCERPT = 300
REPORT_FILE = "report.html"

STAGE_COLUMNS = (
    ("requests", "requests"),
    ("unique", "unique"),
    ("cache_hits", "cache hits"),
    ("sent", "sent"),
    ("failed", "failed"),
    ("tokens_in", "prompt tokens"),
    ("computed_prompt_tokens", "computed prompt tokens"),
    ("tokens_out", "generated tokens"),
    ("backend_seconds", "backend seconds"),
)

SECTIONS = ("Scores", "Score distributions", "Lowest-scoring samples", "Engine stages", "Provenance")
"""The `<h2>` headings of the page, in order."""


class RunResult(Protocol):
    """What the report reads of a run (`ascend_eval.results.EvaluationResult` has all of it)."""

    samples: Sequence[Sample]
    results: Mapping[str, Sequence[MetricResult]]
    languages: Sequence[str]
    stages: dict[str, StageStats]
    provenance: dict[str, Any]
    wall_seconds: float

    def __getitem__(self, metric: str) -> list[float]:
        """Per-sample scores of one metric, NaN where unscored (cheap on a stored run, unlike iterating
        `results[metric]`, which reads each sample's details)."""
        ...

    def aggregates(self) -> list[dict[str, Any]]: ...

    def nan_reasons(self, metric: str) -> Counter[str]: ...

    def intervals(self) -> dict[str, tuple[float, float] | None]: ...


_STYLE = """
body{font-family:system-ui,-apple-system,"Segoe UI","Noto Sans CJK SC","PingFang SC","Microsoft YaHei",
sans-serif;margin:2rem auto;max-width:1200px;color:#1d1d1f;padding:0 1rem;line-height:1.4}
h1{font-size:1.6rem}h2{font-size:1.25rem;margin-top:2rem;border-bottom:1px solid #ddd;padding-bottom:.3rem}
h3{font-size:1.05rem;margin:1.5rem 0 .5rem}
table{border-collapse:collapse;margin:.6rem 0;font-size:.85rem}
th,td{border:1px solid #ccc;padding:.3rem .5rem;text-align:right;vertical-align:top}th{background:#f3f3f6}
td.text,th.text,td.label,th.label{text-align:left}td.low{background:#fde8e8}td.nan{color:#b00020}
caption{text-align:left;font-size:.8rem;color:#555;padding:.2rem 0}
.meta{color:#555;font-size:.9rem}.plots{display:flex;flex-wrap:wrap;gap:.8rem}
.plots figure{margin:0;border:1px solid #eee;padding:.4rem}
figcaption{font-size:.78rem;color:#555;max-width:360px}
.sample{border:1px solid #e3e3e8;border-radius:4px;padding:.5rem .8rem;margin:.6rem 0}
.sample .score{font-weight:bold}.sample .reason{color:#b00020}
.excerpt{margin:.2rem 0;font-size:.9rem;white-space:pre-wrap}.excerpt b{color:#555}
pre{background:#f7f7f9;padding:.6rem;overflow:auto;white-space:pre-wrap;font-size:.8rem}
dl.details{display:grid;grid-template-columns:max-content 1fr;gap:.15rem .8rem;font-size:.85rem;
margin:.4rem 0}
dl.details dt{font-weight:bold}dl.details dd{margin:0;word-break:break-word}
p.key{margin:.4rem 0 0;font-size:.8rem;color:#555}nav a{margin-right:.8rem}
summary{font-size:.85rem;color:#555;cursor:pointer}
"""


def _e(value: Any) -> str:
    return html_text(str(value))


def _number(value: float | None, places: int = 3) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "–"
    return f"{value:.{places}f}"


def anchor(metric: str) -> str:
    """An element id for a metric's section: letters, digits, - and _ only.

    >>> anchor("noise_sensitivity(mode=relevant)")
    'm-noise_sensitivity-mode-relevant'
    """
    return "m-" + re.sub(r"[^A-Za-z0-9_]+", "-", metric).strip("-")


def language_order(languages: Sequence[str]) -> list[str]:
    """The run's languages, en then zh then the rest by count.

    >>> language_order(["zh", "fr", "zh", "en"])
    ['en', 'zh', 'fr']
    """
    counts = Counter(languages)
    known = [x for x in ("en", "zh") if x in counts]
    return known + [x for x, _ in counts.most_common() if x not in known]


def lowest_samples(scores: Sequence[float], n: int = LOWEST) -> tuple[list[int], list[int]]:
    """Indices of the `n` lowest scores (lowest first, ties in dataset order) and of the first `n` NaNs.

    >>> lowest_samples([0.9, 0.1, float("nan"), 0.5], 2)
    ([1, 3], [2])
    """
    scored = heapq.nsmallest(n, ((s, i) for i, s in enumerate(scores) if not math.isnan(s)))
    nans = list(itertools.islice((i for i, s in enumerate(scores) if math.isnan(s)), n))
    return [i for _, i in scored], nans


def _header(result: RunResult) -> str:
    prov = result.provenance
    models = prov.get("models") or {}
    counts = Counter(result.languages)
    langs = ", ".join(f"{lang} {counts[lang]}" for lang in language_order(result.languages)) or "–"
    dataset = prov.get("dataset") or {}
    facts = [
        ("samples", len(result.samples)),
        ("languages", langs),
        ("metrics", len(result.results)),
        ("wall time", f"{result.wall_seconds:.1f}s"),
        ("judge", models.get("judge", "–")),
        ("embedder", models.get("embedder", "–")),
        ("judge mode", prov.get("judge_mode", "–")),
        ("dataset", dataset.get("source", "–") if isinstance(dataset, dict) else dataset),
        ("run created", prov.get("created", "–")),
    ]
    facts += [(role, name) for role, name in models.items() if role not in ("judge", "embedder")]
    items = "".join(f"<dt>{_e(k)}</dt><dd>{_e(v)}</dd>" for k, v in facts)
    return f'<dl class="details">{items}</dl>'


def _scores_table(result: RunResult, languages: Sequence[str]) -> str:
    head = '<th class="label">metric</th><th>count</th><th>mean</th><th>95% CI</th><th>min</th><th>max</th>'
    head += "<th>NaN</th>"
    head += "".join(f"<th>mean {_e(lang)}</th>" for lang in languages)
    head += '<th class="label">NaN reasons</th>'
    rows = []
    intervals = result.intervals()  # computed once per run, shared with table() and summary.json
    for a in result.aggregates():
        metric = a["name"]
        sums: dict[str, list[float]] = {lang: [0, 0.0] for lang in languages}
        for score, sample_lang in zip(result[metric], result.languages, strict=True):
            if not math.isnan(score) and sample_lang in sums:
                sums[sample_lang][0] += 1
                sums[sample_lang][1] += score
        per_language = [total / n if n else None for n, total in sums.values()]
        reasons = "<br>".join(f"{_e(r)} &times;{n}" for r, n in result.nan_reasons(metric).most_common())
        nan_class = ' class="nan"' if a["nan_count"] else ""
        ci = intervals[metric]
        interval = "–" if ci is None else f"{_number(ci[0])} – {_number(ci[1])}"
        rows.append(
            f'<tr><td class="label"><a href="#{anchor(metric)}">{_e(metric)}</a></td><td>{a["count"]}</td>'
            f"<td>{_number(a['mean'])}</td><td>{interval}</td>"
            + "".join(f"<td>{_number(a[k])}</td>" for k in ("min", "max"))
            + f"<td{nan_class}>{a['nan_count']}</td>"
            + "".join(f"<td>{_number(m)}</td>" for m in per_language)
            + f'<td class="label">{reasons or "–"}</td></tr>'
        )
    return f"<table><thead><tr>{head}</tr></thead><tbody>{''.join(rows)}</tbody></table>"


def _distributions(result: RunResult, languages: Sequence[str]) -> str:
    figures = []
    for metric in result.results:
        scores = result[metric]
        pairs = list(zip(scores, result.languages, strict=True))
        by_language = {lang: [s for s, x in pairs if x == lang] for lang in languages}
        nan = sum(math.isnan(s) for s in scores)
        caption = "; ".join(
            f"{lang}: {sum(not math.isnan(s) for s in scores)} scored" for lang, scores in by_language.items()
        )
        caption += f"; NaN (not drawn): {nan}" if nan else ""
        figures.append(
            f"<figure>{histogram_svg(metric, by_language)}<figcaption>{_e(caption)}</figcaption></figure>"
        )
    return f'<div class="plots">{"".join(figures)}</div>'


def _excerpt(label: str, text: str | None) -> str:
    if not text:
        return ""
    return f'<p class="excerpt"><b>{_e(label)}:</b> {_e(clip(text, EXCERPT))}</p>'


def _sample_card(result: RunResult, metric: str, index: int) -> str:
    r = result.results[metric][index]
    sample = result.samples[index]
    score = (
        f'<span class="score">{r.score:.3f}</span>'
        if r.ok
        else f'<span class="score">NaN</span> <span class="reason">{_e(r.reason or "unknown")}</span>'
    )
    contexts = list(sample.retrieved_contexts or ())
    excerpts = (
        _excerpt("question", sample.user_input)
        + _excerpt("answer", sample.response)
        + _excerpt("reference", sample.reference)
    )
    if contexts:
        # Folded (a native <details>, no script): most metrics' details already say what they used.
        listed = "".join(_excerpt(f"context {i + 1}", c) for i, c in enumerate(contexts))
        excerpts += f"<details><summary>{len(contexts)} retrieved context(s)</summary>{listed}</details>"
    explained = details_html(r.details, contexts) or '<p class="meta">no details recorded</p>'
    lang = result.languages[index] if index < len(result.languages) else "?"
    return (
        f'<div class="sample"><p>sample <b>{_e(sample.id)}</b> ({_e(lang)}): {score}</p>'
        f"{excerpts}{explained}</div>"
    )


def _lowest(result: RunResult) -> str:
    parts = []
    for metric in result.results:
        low, nans = lowest_samples(result[metric])
        cards = "".join(_sample_card(result, metric, i) for i in low)
        if nans:
            cards += f'<p class="key">not scored (NaN), first {len(nans)}:</p>'
            cards += "".join(_sample_card(result, metric, i) for i in nans)
        parts.append(f'<h3 id="{anchor(metric)}">{_e(metric)}</h3>{cards or "<p>no samples</p>"}')
    return "".join(parts)


def _stages(result: RunResult) -> str:
    if not result.stages:
        return '<p class="meta">No engine stages recorded.</p>'
    head = '<th class="label">stage</th>' + "".join(f"<th>{_e(label)}</th>" for _, label in STAGE_COLUMNS)
    rows = []
    totals: dict[str, float] = {}
    for label, stage in result.stages.items():
        values = asdict(stage) if not isinstance(stage, dict) else stage
        cells = []
        for key, _ in STAGE_COLUMNS:
            value = values.get(key)
            if isinstance(value, int | float):
                totals[key] = totals.get(key, 0) + value
            cells.append(f"<td>{_number(value, 1) if key == 'backend_seconds' else _e(_count(value))}</td>")
        rows.append(f'<tr><td class="label">{_e(label)}</td>{"".join(cells)}</tr>')
    total_cells = "".join(
        f"<td>{_number(totals.get(k), 1) if k == 'backend_seconds' else _e(_count(totals.get(k)))}</td>"
        for k, _ in STAGE_COLUMNS
    )
    rows.append(f'<tr><th class="label">all stages</th>{total_cells}</tr>')
    return (
        f"<table><thead><tr>{head}</tr></thead><tbody>{''.join(rows)}</tbody></table>"
        '<p class="meta">Backend seconds of stages on different lanes overlap, so they can sum to more '
        "than the wall time. Computed prompt tokens: those the backend did not take from its prefix cache "
        "(counted by in-process judges only).</p>"
    )


def _count(value: Any) -> str:
    return "–" if value is None else f"{int(value):,}"


def render_run_report(result: RunResult) -> str:
    """The report page of one run, as HTML text.

    Args:
        result: an `EvaluationResult` (fresh from `evaluate`, or `EvaluationResult.load`-ed).

    Returns:
        A self-contained HTML document (UTF-8): run facts, the aggregate table with NaN reasons, a score
        histogram per metric split by language, the lowest-scoring samples of each metric with their
        details, the engine's per-stage figures and the provenance.
    """
    languages = language_order(result.languages)
    prov = result.provenance
    title = f"ascend-eval run: {len(result.samples)} samples, {len(result.results)} metrics"
    nav = "".join(f'<a href="#{anchor(s)}">{_e(s)}</a>' for s in SECTIONS)
    provenance = json.dumps(prov, ensure_ascii=False, indent=2, default=str)
    when = datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    body = [
        f"<h1>{_e(title)}</h1>",
        f"<nav>{nav}</nav>",
        _header(result),
        f'<h2 id="{anchor(SECTIONS[0])}">{SECTIONS[0]}</h2>',
        '<p class="meta">Over the scored samples; NaN scores are counted apart, with their reasons.</p>',
        _scores_table(result, languages),
        f'<h2 id="{anchor(SECTIONS[1])}">{SECTIONS[1]}</h2>',
        (
            '<p class="meta">Per-sample scores in 10 bins over [0, 1], one bar per language; the number '
            "over a bar is its count.</p>"
        ),
        _distributions(result, languages),
        f'<h2 id="{anchor(SECTIONS[2])}">{SECTIONS[2]}</h2>',
        (
            f'<p class="meta">Per metric, the {LOWEST} lowest scores and the first NaNs, with what the '
            "score was computed from; shaded cells are the items that pulled it down.</p>"
        ),
        _lowest(result),
        f'<h2 id="{anchor(SECTIONS[3])}">{SECTIONS[3]}</h2>',
        _stages(result),
        f'<h2 id="{anchor(SECTIONS[4])}">{SECTIONS[4]}</h2>',
        f"<pre>{_e(provenance)}</pre>",
        f'<p class="meta">Report written {when} by ascend-eval.</p>',
    ]
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>{_e(title)}</title><style>{_STYLE}</style></head><body>\n"
        + "\n".join(body)
        + "\n</body></html>\n"
    )


def write_run_report(result: RunResult, out_dir: str | Path) -> Path:
    """Write `report.html` for `result` into `out_dir` (created if missing) and return its path.

    Raises:
        OutputError: it could not be written (a full disk); the page is whole or not there at all.
    """
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    return write_text(out / REPORT_FILE, render_run_report(result))
