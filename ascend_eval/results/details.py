"""A metric's `details` (what its score was computed from) as readable, escaped HTML.

The known shapes become tables, one row per item: statements with p(supported) or verdicts, per-context
verdicts with p(useful), the dual judges' ratings, answer_relevancy's generated questions with their
similarities, the reference's entities marked matched or not. Raw judge text goes in a `<pre>`; any other
key is shown as `key: value`, truncated, so a metric's new detail is visible before the report knows it.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from typing import Any

from ascend_eval.results.escape import html_text

TABLES: tuple[tuple[str, tuple[str, ...], str], ...] = (
    ("statements", ("p_supported", "verdicts", "attributed", "reasons"), "statements"),
    ("response_statements", ("p_response_supported",), "response statements"),
    ("reference_statements", ("p_reference_covered",), "reference statements"),
    ("questions", ("noncommittal", "similarities"), "generated questions"),
    ("ratings", ("probs", "failures"), "judges"),
)
"""(lead key, columns that run alongside it, caption): a table per lead key found, rows zipped by index.
A column joins only when it is a list as long as the lead; otherwise it is shown on its own."""

CONTEXT_COLUMNS = ("p_useful", "verdicts", "reasons")
"""Per-context lists (context_precision, context_utilization), shown beside each context's excerpt."""

HEADERS = {
    "p_supported": "p(supported)",
    "p_useful": "p(useful)",
    "p_response_supported": "p(supported by reference)",
    "p_reference_covered": "p(covered by response)",
    "p_answers": "p(answers every part)",
    "similarities": "similarity",
    "ratings": "rating",
    "probs": "label probabilities",
    "failures": "failure",
    "verdicts": "verdict",
    "reasons": "reason",
}

LOW_IS_BAD = frozenset(
    {
        "p_supported",
        "p_useful",
        "p_response_supported",
        "p_reference_covered",
        "p_answers",
        "similarities",
        "ratings",
    }
)
"""Columns whose values below 0.5 (or a false verdict) are what pulls a score down; they are marked."""

VALUE_LIMIT = 400
RAW_LIMIT = 2000


def clip(text: str, limit: int) -> str:
    """`text` cut to `limit` characters, with an ellipsis and the full length when cut.

    >>> clip("short", 10)
    'short'
    >>> clip("abcdefghij", 4)
    'abcd… (10 chars)'
    """
    return text if len(text) <= limit else f"{text[:limit]}… ({len(text)} chars)"


def format_value(value: Any, limit: int = VALUE_LIMIT) -> str:
    """A detail value as plain (unescaped) text: floats to 3 places, None as a dash, lists and dicts as
    compact JSON, everything clipped to `limit` characters.

    >>> format_value(0.123456)
    '0.123'
    >>> format_value([0.5, True, None])
    '[0.5, true, null]'
    >>> format_value({"reason": "parse_failure: x", "raw": "oops"})
    'parse_failure: x: oops'
    """
    if value is None:
        return "–"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        return "NaN" if math.isnan(value) else f"{value:.3f}"
    if isinstance(value, Mapping) and set(value) in ({"reason", "raw"}, {"reason", "raw", "raw_chars"}):
        return clip(f"{value['reason']}: {value['raw']}", limit)
    if isinstance(value, str):
        return clip(value, limit)
    try:
        text = json.dumps(value, ensure_ascii=False, default=str)
    except ValueError:  # a circular structure: not from JSON, but the report must not fail on it
        text = repr(value)
    return clip(text, limit)


def _is_low(key: str, value: Any) -> bool:
    if key == "noncommittal":
        return bool(value)  # a noncommittal answer scores 0
    if key in ("verdicts", "attributed", "matched"):
        return value in (0, False)
    return (
        key in LOW_IS_BAD and isinstance(value, int | float) and not isinstance(value, bool) and value < 0.5
    )


def _cell(key: str, value: Any) -> str:
    klass = ' class="low"' if _is_low(key, value) else ""
    return f"<td{klass}>{html_text(format_value(value))}</td>"


def _table(
    caption: str, first: str, rows: Sequence[str], columns: Sequence[tuple[str, Sequence[Any]]]
) -> str:
    head = f'<th>#</th><th class="text">{html_text(first)}</th>' + "".join(
        f"<th>{html_text(HEADERS.get(k, k))}</th>" for k, _ in columns
    )
    body = []
    for i, text in enumerate(rows):
        cells = "".join(_cell(k, values[i]) for k, values in columns)
        body.append(
            f'<tr><td>{i + 1}</td><td class="text">{html_text(clip(text, VALUE_LIMIT))}</td>{cells}</tr>'
        )
    return (
        f'<table class="details"><caption>{html_text(caption)}</caption><thead><tr>{head}</tr></thead>'
        f"<tbody>{''.join(body)}</tbody></table>"
    )


def _alongside(
    details: Mapping[str, Any], keys: Sequence[str], n: int, used: set[str]
) -> list[tuple[str, Any]]:
    found = []
    for key in keys:
        values = details.get(key)
        if key not in used and isinstance(values, list) and len(values) == n:
            found.append((key, values))
            used.add(key)
    return found


def details_html(details: Mapping[str, Any], contexts: Sequence[str] | None = None) -> str:
    """One sample's details for one metric.

    Args:
        details: the `MetricResult.details` dict.
        contexts: the sample's retrieved contexts, shown beside per-context verdicts.

    Returns:
        HTML (every value escaped): tables for the known shapes, then `raw` in a `<pre>`, then any other key
        as a definition list entry. Empty details give an empty string.
    """
    used: set[str] = set()
    parts = []
    for lead, columns, caption in TABLES:
        items = details.get(lead)
        if not isinstance(items, list) or lead in used:
            continue
        used.add(lead)
        if lead == "ratings":
            rows = [f"judge {i + 1}" for i in range(len(items))]
            cols = [("ratings", items), *_alongside(details, columns, len(items), used)]
            parts.append(_table(caption, "judge", rows, cols))
        else:
            cols = _alongside(details, columns, len(items), used)
            parts.append(_table(caption, lead.replace("_", " ").rstrip("s"), [str(x) for x in items], cols))
    per_context = next(
        (len(v) for k in CONTEXT_COLUMNS if k not in used and isinstance(v := details.get(k), list)), None
    )
    if per_context:
        cols = _alongside(details, CONTEXT_COLUMNS, per_context, used)
        given = list(contexts or ())
        rows = [given[i] if i < len(given) else "(context not in the results)" for i in range(per_context)]
        parts.append(_table("retrieved contexts", "context", rows, cols))
    entities = details.get("reference_entities")
    if isinstance(entities, list) and entities:
        used.add("reference_entities")
        if isinstance(details.get("matched"), list):
            used.add("matched")
            matched = set(map(str, details["matched"]))
            cols = [("matched", [str(e) in matched for e in entities])]
        else:
            cols = []
        parts.append(_table("reference entities", "entity", [str(e) for e in entities], cols))
    if "raw" in details:
        used.add("raw")
        raw = details["raw"] if isinstance(details["raw"], str) else format_value(details["raw"], RAW_LIMIT)
        parts.append(f'<p class="key">raw judge output</p><pre>{html_text(clip(raw, RAW_LIMIT))}</pre>')
    rest = [(k, v) for k, v in details.items() if k not in used]
    if rest:
        items_html = "".join(
            f"<dt>{html_text(str(k))}</dt><dd>{html_text(format_value(v))}</dd>" for k, v in rest
        )
        parts.append(f'<dl class="details">{items_html}</dl>')
    return "".join(parts)
