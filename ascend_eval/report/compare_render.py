"""Markdown and HTML for a run comparison, rendered from `RunComparison.to_dict()`, so that a comparison
saved as JSON renders the same way as a fresh one.

The runs' text (ids, questions, each run's reasons, model names, paths) is the dataset's and the runs':
in Markdown it is escaped so that no link, image, emphasis, code span or raw HTML can start in it and a
table cell cannot end its row; in HTML it is escaped, and in both a bidi control (U+202E, ...) is shown as a
visible marker instead of reordering what is displayed (`ascend_eval.results.escape`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from ascend_eval.results.escape import html_text, markdown_cell

_STYLE = """
body { font-family: system-ui, sans-serif; margin: 2em; color: #222; max-width: 80em; }
table { border-collapse: collapse; margin: 0.6em 0 1.4em; }
th, td { border: 1px solid #ccc; padding: 0.25em 0.6em; vertical-align: top; }
th { background: #f3f3f3; text-align: left; }
td.num { text-align: right; font-variant-numeric: tabular-nums; white-space: nowrap; }
tr.flag td { background: #fff7d6; }
.up { color: #1a7f37; } .down { color: #c62828; }
p.note { color: #555; font-size: 0.92em; max-width: 60em; }
"""


def _num(value: float | None, *, signed: bool = False) -> str:
    if value is None:
        return "-"
    return f"{value:+.4f}" if signed else f"{value:.4f}"


def _interval(interval: Sequence[float] | None) -> str:
    return "-" if interval is None else f"[{interval[0]:+.4f}, {interval[1]:+.4f}]"


def _flag(metric: dict[str, Any]) -> str:
    if metric["interval"] is None:
        return "-"
    return "yes" if metric["excludes_zero"] else "no"


def _samples_line(data: dict[str, Any]) -> str:
    s = data["samples"]
    return (
        f"{s['shared']} samples matched by id; {len(s['only_a'])} only in A and {len(s['only_b'])} only "
        "in B (left out)."
    )


def _same(text: str) -> str:
    return text


def _differences_line(data: dict[str, Any], text: Callable[[str], str] = _same) -> str:
    """The differences, each one's values passed through `text` (`markdown_cell` for Markdown) and the
    arrows between them left as they are."""
    if not data["differences"]:
        return "none in the models, judge mode, decoding, prompt versions or metric settings."
    return "; ".join(" -> ".join(map(text, d.split(" -> "))) for d in data["differences"]) + "."


def _only_line(data: dict[str, Any], text: Callable[[str], str] = _same) -> str | None:
    """The metrics in one run only, each name passed through `text`; None when there are none."""
    parts = []
    if data["metrics_only_a"]:
        parts.append(f"only in A: {', '.join(map(text, data['metrics_only_a']))}")
    if data["metrics_only_b"]:
        parts.append(f"only in B: {', '.join(map(text, data['metrics_only_b']))}")
    return "Metrics not compared (" + "; ".join(parts) + ")." if parts else None


def _caveat(data: dict[str, Any]) -> str:
    level = f"{data['confidence']:.0%}"
    return (
        f'{data["method"]} "CI excludes 0" marks a change larger than resampling these samples explains '
        f"at {level}; it is not a correction for comparing many metrics (at {level}, about one unchanged "
        f"metric in {round(1 / (1 - data['confidence']))} is flagged by chance), and it says nothing about "
        "the judges' own randomness. Means are over the pairs both runs scored."
    )


_METRIC_HEAD = (
    *("metric", "n", "mean A", "mean B", "B - A", "CI of B - A", "CI excludes 0"),
    *("up", "down", "same"),
)
_MOVER_HEAD = ("id", "question", "A", "B", "change", "why A", "why B")


def _metric_cells(m: dict[str, Any]) -> list[str]:
    return [
        m["name"],
        str(m["n"]) + (f" (+{m['left_out']} NaN)" if m["left_out"] else ""),
        _num(m["mean_a"]),
        _num(m["mean_b"]),
        _num(m["difference"], signed=True),
        _interval(m["interval"]),
        _flag(m),
        str(m["up"]),
        str(m["down"]),
        str(m["unchanged"]),
    ]


def _mover_cells(v: dict[str, Any]) -> list[str]:
    return [
        v["id"],
        v["question"],
        _num(v["score_a"]),
        _num(v["score_b"]),
        _num(v["change"], signed=True),
        v["why_a"] or "-",
        v["why_b"] or "-",
    ]


def _unscored_line(metric: dict[str, Any]) -> str:
    shown = len(metric["unscored"])
    more = f" (the first {shown})" if shown < metric["left_out"] else ""
    count = metric["left_out"]
    return f"Left out, NaN in a run: {count} sample{'s' if count != 1 else ''}{more}"


def _md_number(text: str) -> str:
    # Numbers this module formatted: only a pipe or a line break could break the table.
    return " ".join(text.split()).replace("|", "\\|")


def _md_table(head: Sequence[str], rows: Sequence[Sequence[str]], numeric: Sequence[int] = ()) -> list[str]:
    """A GitHub table; the `numeric` columns hold numbers formatted here, every other cell is text from the
    runs and is escaped (`markdown_cell`)."""
    align = ["--:" if i in numeric else "---" for i in range(len(head))]
    lines = ["| " + " | ".join(head) + " |", "|" + "|".join(align) + "|"]
    for row in rows:
        cells = (_md_number(c) if i in numeric else markdown_cell(c) for i, c in enumerate(row))
        lines.append("| " + " | ".join(cells) + " |")
    return lines


def comparison_markdown(data: dict[str, Any]) -> str:
    """Markdown for a `RunComparison.to_dict()`: the setup, one row per metric and each metric's movers."""
    setup = [("run", data["run_a"], data["run_b"])] + [(h["what"], h["a"], h["b"]) for h in data["header"]]
    lines = ["# Run comparison: B against A", ""]
    lines += _md_table(("", "A", "B"), setup)
    lines += ["", f"**Differences:** {_differences_line(data, markdown_cell)}", ""]
    lines += [f"**Samples:** {_samples_line(data)}", ""]
    lines += _md_table(
        _METRIC_HEAD, [_metric_cells(m) for m in data["metrics"]], numeric=(1, 2, 3, 4, 5, 7, 8, 9)
    )
    only = _only_line(data, markdown_cell)
    lines += ["", *([only, ""] if only else []), _caveat(data)]
    listed = [m for m in data["metrics"] if m["movers"] or m["unscored"]]
    if listed:
        lines += ["", "## Largest changes"]
    for m in listed:
        lines += ["", f"### {markdown_cell(m['name'])}", ""]
        if m["movers"]:
            lines += _md_table(_MOVER_HEAD, [_mover_cells(v) for v in m["movers"]], numeric=(2, 3, 4))
        if m["unscored"]:
            lines += ["", f"{_unscored_line(m)}:", ""]
            lines += _md_table(_MOVER_HEAD, [_mover_cells(v) for v in m["unscored"]], numeric=(2, 3, 4))
    return "\n".join(lines) + "\n"


def _html_table(
    head: Sequence[str],
    rows: Sequence[Sequence[str]],
    numeric: Sequence[int] = (),
    row_classes: Sequence[str] | None = None,
    signed: Sequence[int] = (),
) -> str:
    out = ["<table>", "<tr>" + "".join(f"<th>{html_text(h)}</th>" for h in head) + "</tr>"]
    for r, row in enumerate(rows):
        cls = f' class="{row_classes[r]}"' if row_classes and row_classes[r] else ""
        cells = []
        for i, cell in enumerate(row):
            classes = ["num"] if i in numeric else []
            if i in signed and cell.startswith(("+", "-")) and cell.strip("+-0.") != "":
                classes.append("up" if cell.startswith("+") else "down")
            attr = f' class="{" ".join(classes)}"' if classes else ""
            cells.append(f"<td{attr}>{html_text(cell)}</td>")
        out.append(f"<tr{cls}>" + "".join(cells) + "</tr>")
    out.append("</table>")
    return "\n".join(out)


def comparison_html(data: dict[str, Any]) -> str:
    """One self-contained HTML page for a `RunComparison.to_dict()`: inline CSS, every text escaped (bidi
    controls shown as markers), no scripts and no external resources."""
    e = html_text
    setup = [("run", data["run_a"], data["run_b"])] + [(h["what"], h["a"], h["b"]) for h in data["header"]]
    parts = [
        "<!DOCTYPE html>",
        '<html><head><meta charset="utf-8"><title>Run comparison</title>',
        f"<style>{_STYLE}</style></head><body>",
        "<h1>Run comparison: B against A</h1>",
        _html_table(("", "A", "B"), setup),
        f"<p><b>Differences:</b> {e(_differences_line(data))}</p>",
        f"<p><b>Samples:</b> {e(_samples_line(data))}</p>",
        _html_table(
            _METRIC_HEAD,
            [_metric_cells(m) for m in data["metrics"]],
            numeric=(1, 2, 3, 4, 5, 7, 8, 9),
            row_classes=["flag" if m["excludes_zero"] else "" for m in data["metrics"]],
            signed=(4,),
        ),
    ]
    only = _only_line(data)
    if only:
        parts.append(f"<p>{e(only)}</p>")
    parts.append(f'<p class="note">{e(_caveat(data))}</p>')
    listed = [m for m in data["metrics"] if m["movers"] or m["unscored"]]
    if listed:
        parts.append("<h2>Largest changes</h2>")
    for m in listed:
        parts.append(f"<h3>{e(m['name'])}</h3>")
        if m["movers"]:
            rows = [_mover_cells(v) for v in m["movers"]]
            parts.append(_html_table(_MOVER_HEAD, rows, numeric=(2, 3, 4), signed=(4,)))
        if m["unscored"]:
            parts.append(f"<p>{e(_unscored_line(m))}:</p>")
            rows = [_mover_cells(v) for v in m["unscored"]]
            parts.append(_html_table(_MOVER_HEAD, rows, numeric=(2, 3, 4)))
    parts.append("</body></html>")
    return "\n".join(parts) + "\n"
