"""The comparison of an experiment's points: a self-contained HTML report and a markdown summary.

The HTML page has no external references: styles are inline and each plot is a PNG embedded as base64,
so the file can be mailed or archived alone. Plots (matplotlib, imported here only, drawn without pyplot
so no GUI backend or global state is involved): per metric, its mean against the swept x parameter (top_k
where it is swept) with one line per value of the other parameters; and per metric the per-sample score
distribution of every point. Plot text is ASCII (metric and parameter names), so no CJK font is needed.
"""

from __future__ import annotations

import base64
import io
import json
from collections.abc import Sequence
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from ascend_eval.errors import MissingDependencyError
from ascend_eval.experiments.results import ExperimentResult, PointResult, format_mean
from ascend_eval.results.escape import html_text

_X_PREFERENCE = ("top_k", "metric_params.top_k", "chunk_size", "retriever_pipeline.chunk_size")


def x_parameter(sweep: dict[str, list[Any]]) -> str:
    """The parameter on the x axis: top_k if swept, else chunk size, else the first numeric one, else the
    first.

    >>> x_parameter({"chunk_size": [256, 512], "top_k": [2, 4]})
    'top_k'
    >>> x_parameter({"model.url": ["a", "b"], "chunk_overlap": [0, 32]})
    'chunk_overlap'
    """
    for name in _X_PREFERENCE:
        if name in sweep:
            return name
    numeric = [k for k, v in sweep.items() if all(_is_number(x) for x in v)]
    return numeric[0] if numeric else next(iter(sweep))


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _series_label(params: dict[str, Any], x: str) -> str:
    rest = [f"{k}={v}" for k, v in params.items() if k != x]
    return ", ".join(rest) or "all points"


def _png(figure: Any) -> str:
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png", dpi=100, bbox_inches="tight")
    return base64.b64encode(buffer.getvalue()).decode("ascii")


def _figure(width: float, height: float) -> Any:
    try:
        from matplotlib.backends.backend_agg import FigureCanvasAgg
        from matplotlib.figure import Figure
    except ImportError as e:
        raise MissingDependencyError(
            "The experiment report draws its plots with matplotlib: pip install 'ascend-eval[data]'."
        ) from e
    figure = Figure(figsize=(width, height))
    FigureCanvasAgg(figure)
    return figure


def metric_vs_x_plot(result: ExperimentResult, metric: str) -> str:
    """Base64 PNG: the metric's mean against the x parameter, one line per combination of the others."""
    x = x_parameter(result.sweep)
    values = result.sweep[x]
    numeric = all(_is_number(v) for v in values)
    series: dict[str, list[tuple[Any, float]]] = {}
    for point in result.points:
        mean = point.mean(metric)
        if mean is not None:
            series.setdefault(_series_label(point.params, x), []).append((point.params[x], mean))
    figure = _figure(5.6, 3.6)
    ax = figure.add_subplot()
    for label, pairs in series.items():
        pairs.sort(key=lambda p: values.index(p[0]))
        xs = [p[0] if numeric else values.index(p[0]) for p in pairs]
        ax.plot(xs, [p[1] for p in pairs], marker="o", label=label)
    ax.set_xticks(values if numeric else range(len(values)))
    ax.set_xticklabels([str(v) for v in values])
    ax.set_xlabel(x)
    ax.set_ylabel(f"mean {metric}")
    ax.set_ylim(-0.05, 1.05)
    ax.set_title(f"{metric} vs {x}")
    ax.grid(alpha=0.3)
    if series:
        ax.legend(fontsize=8, loc="best")
    return _png(figure)


def distribution_plot(result: ExperimentResult, metric: str) -> str:
    """Base64 PNG: per-sample scores of the metric for every point (box plot with the samples on top)."""
    figure = _figure(max(5.6, 1.1 * len(result.points) + 1.5), 3.8)
    ax = figure.add_subplot()
    data = [point.scores(metric) for point in result.points]
    positions = list(range(1, len(data) + 1))
    drawn = [(pos, scores) for pos, scores in zip(positions, data, strict=True) if scores]
    if drawn:
        ax.boxplot([s for _, s in drawn], positions=[p for p, _ in drawn], widths=0.5, showmeans=True)
        for pos, scores in drawn:
            # A fixed, deterministic spread so that equal scores stay visible side by side.
            offsets = [((i % 7) - 3) * 0.04 for i in range(len(scores))]
            ax.scatter([pos + o for o in offsets], scores, s=10, alpha=0.5, color="tab:blue")
    ax.set_xticks(positions)
    ax.set_xticklabels([_short(p.params) for p in result.points], rotation=20, ha="right", fontsize=8)
    ax.set_xlim(0.4, len(positions) + 0.6)
    ax.set_ylim(-0.05, 1.05)
    ax.set_ylabel(metric)
    ax.set_title(f"{metric}: per-sample scores")
    ax.grid(alpha=0.3, axis="y")
    return _png(figure)


def _short(params: dict[str, Any]) -> str:
    return "\n".join(f"{k.rsplit('.', 1)[-1]}={v}" for k, v in params.items())


def _cell(value: float | None) -> str:
    return "&ndash;" if value is None else f"{value:.3f}"


_STYLE = """
body{font-family:system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;margin:2rem auto;max-width:1200px;
color:#1d1d1f;padding:0 1rem}
h1{font-size:1.6rem}h2{font-size:1.25rem;margin-top:2rem;border-bottom:1px solid #ddd;padding-bottom:.3rem}
table{border-collapse:collapse;margin:1rem 0;font-size:.9rem}
th,td{border:1px solid #ccc;padding:.35rem .6rem;text-align:right}th{background:#f3f3f6}
td.label,th.label{text-align:left}td.best{font-weight:bold;background:#e7f5e7}td.failed{color:#b00020}
.plots{display:flex;flex-wrap:wrap;gap:1rem}.plots figure{margin:0;border:1px solid #eee;padding:.5rem}
.plots img{max-width:100%;height:auto;display:block}figcaption{font-size:.8rem;color:#555}
.meta{color:#555;font-size:.9rem}details{margin:.5rem 0}pre{background:#f7f7f9;padding:.6rem;overflow:auto}
"""


def _table_html(result: ExperimentResult) -> str:
    metrics = result.metrics
    best = {m: result.best(m) for m in metrics}
    params = list(result.sweep)
    head = "".join(f'<th class="label">{html_text(p)}</th>' for p in params)
    head += "".join(f"<th>{html_text(m)}</th>" for m in metrics) + "<th>scored / NaN</th><th>seconds</th>"
    rows = []
    for point in result.points:
        cells = "".join(f'<td class="label">{html_text(str(point.params[p]))}</td>' for p in params)
        if point.status != "completed":
            error = html_text(point.error or "")
            cells += f'<td class="failed label" colspan="{len(metrics) + 2}">failed: {error}</td>'
        else:
            for m in metrics:
                klass = ' class="best"' if best[m] is point and len(result.points) > 1 else ""
                cells += f"<td{klass}>{_cell(point.mean(m))}</td>"
            counts = [(a.get("count", 0), a.get("nan_count", 0)) for a in point.aggregates]
            cells += f"<td>{sum(c for c, _ in counts)} / {sum(n for _, n in counts)}</td>"
        cells += f"<td>{point.seconds:.1f}</td>"
        rows.append(f"<tr>{cells}</tr>")
    return f"<table><thead><tr>{head}</tr></thead><tbody>{''.join(rows)}</tbody></table>"


def _samples_html(point: PointResult, metrics: Sequence[str]) -> str:
    head = '<th class="label">id</th><th class="label">question</th><th class="label">answer</th>'
    head += "".join(f"<th>{html_text(m)}</th>" for m in metrics)
    body = []
    for row in point.rows:
        cells = "".join(
            f'<td class="label">{html_text(str(row.get(k) or "")[:300])}</td>'
            for k in ("id", "user_input", "response")
        )
        cells += "".join(f"<td>{_cell(row.get(m))}</td>" for m in metrics)
        body.append(f"<tr>{cells}</tr>")
    return (
        f"<details><summary>{html_text(point.label)}: {len(point.rows)} samples</summary>"
        f"<table><thead><tr>{head}</tr></thead><tbody>{''.join(body)}</tbody></table></details>"
    )


def _figure_html(png: str, caption: str) -> str:
    alt = html_text(caption)
    return (
        f'<figure><img src="data:image/png;base64,{png}" alt="{alt}"><figcaption>{alt}</figcaption></figure>'
    )


def render_html(result: ExperimentResult) -> str:
    """The report page. Two plots per metric (mean vs x, per-sample distribution), all inline."""
    metrics = result.metrics
    x = x_parameter(result.sweep)
    trend = "".join(_figure_html(metric_vs_x_plot(result, m), f"{m}: mean vs {x}") for m in metrics)
    spread = "".join(
        _figure_html(distribution_plot(result, m), f"{m}: per-sample scores per point") for m in metrics
    )
    failed = [p for p in result.points if p.status != "completed"]
    grid = ", ".join(
        f"{html_text(k)} &isin; {html_text(json.dumps(v, ensure_ascii=False))}"
        for k, v in result.sweep.items()
    )
    when = datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>{html_text(result.name)}: experiment report</title>
<style>{_STYLE}</style></head><body>
<h1>{html_text(result.name)}</h1>
<p class="meta">{len(result.points)} points ({grid}); {len(failed)} failed; {result.wall_seconds:.1f}s in all;
written {when} by ascend-eval.</p>
<h2>Scores per point</h2>
<p class="meta">Mean of each metric over the scored samples; the best point per metric is highlighted.</p>
{_table_html(result)}
<h2>Metrics vs {html_text(x)}</h2><div class="plots">{trend}</div>
<h2>Per-sample score distributions</h2><div class="plots">{spread}</div>
<h2>Samples</h2>{"".join(_samples_html(p, metrics) for p in result.points if p.status == "completed")}
</body></html>
"""


def render_markdown(result: ExperimentResult) -> str:
    """A markdown summary: the grid, the table of means, the best point per metric, and failures."""
    metrics = result.metrics
    params = list(result.sweep)
    lines = [
        f"# {result.name}",
        "",
        f"{len(result.points)} points over "
        + ", ".join(f"`{k}` {v}" for k, v in result.sweep.items())
        + f"; {result.wall_seconds:.1f}s in all. Plots: `report.html`.",
        "",
        "| " + " | ".join([*params, *metrics, "seconds"]) + " |",
        "|" + "---|" * (len(params) + len(metrics) + 1),
    ]
    for point in result.points:
        values = [str(point.params[p]) for p in params]
        scores = [format_mean(point.mean(m)) if point.status == "completed" else "failed" for m in metrics]
        lines.append("| " + " | ".join([*values, *scores, f"{point.seconds:.1f}"]) + " |")
    lines.append("")
    for metric in metrics:
        best = result.best(metric)
        if best is not None:
            lines.append(f"- best `{metric}`: {best.label} ({best.mean(metric):.4f})")
    for point in result.points:
        if point.status != "completed":
            lines.append(f"- point {point.label} failed: {point.error}")
    return "\n".join(lines) + "\n"


def write_report(result: ExperimentResult) -> dict[str, Path]:
    """Write report.html, summary.md and points.json into the experiment's folder.

    Raises:
        MissingDependencyError: matplotlib is not installed (points.json and summary.md are written first).
    """
    out = result.out_dir
    points = out / "points.json"
    points.write_text(json.dumps(result.to_dict(), ensure_ascii=False, indent=2), encoding="utf-8")
    summary = out / "summary.md"
    summary.write_text(render_markdown(result), encoding="utf-8")
    report = out / "report.html"
    report.write_text(render_html(result), encoding="utf-8")
    return {"report": report, "summary": summary, "points": points}
