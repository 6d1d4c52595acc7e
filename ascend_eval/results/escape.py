"""Text from a dataset made inert in the files people open: spreadsheet cells, Markdown and HTML.

A dataset is input from anyone, and its text (questions, answers, contexts, ids, a judge's reasons) is
copied into files that programs act on:

* a spreadsheet runs a cell that starts with `=`, `+`, `-`, `@`, a tab or a carriage return as a formula
  (OWASP, "CSV Injection"): `spreadsheet_cell` (`spreadsheet_row` for a whole row) puts a single quote
  before such a text cell, so it is shown as the text it is. Numbers are never changed: a negative
  score stays a number;
* a Markdown viewer turns `[x](javascript:...)` into a link, `![](http://...)` into a remote image
  that is fetched on view, and a bare `http://...` or `www.` into a link: `markdown_text` escapes every
  character that could start one (and emphasis, code spans, raw HTML and table pipes), and
  `markdown_cell` also keeps a table cell on one line;
* a browser (and a terminal, and a Markdown viewer) lets a bidi control such as U+202E (right-to-left
  override) reorder the text around it, so "gnp.exe" can show as "exe.png": `html_text` escapes HTML
  and, like the Markdown helpers, shows each such control as a visible marker, "⟨U+202E⟩".

Every CSV written for spreadsheets (`scores.csv`) and every HTML and Markdown report goes through them.
"""

from __future__ import annotations

import html
import re
from collections.abc import Mapping
from typing import Any

FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")
"""The first characters that make a spreadsheet read a cell as a formula (OWASP's list)."""

BIDI_CONTROLS = "\u061c\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069"
"""Unicode's Bidi_Control characters (ALM, LRM, RLM, LRE, RLE, PDF, LRO, RLO, LRI, RLI, FSI, PDI)."""

_BIDI = re.compile(f"[{BIDI_CONTROLS}]")
# What could start a link, an image, emphasis, a code span or a table cell in CommonMark or GitHub's
# Markdown, and the backslash itself (so that a backslash in the data cannot cancel the escape put before
# the next character). An underscore between two letters or digits is left alone: it cannot start emphasis
# there (CommonMark's flanking rules), and "context_precision" stays readable. "<", ">" and "&" become
# entities, which every Markdown dialect reads as text (raw HTML is then impossible), "&" so that
# "&#x202E;" in the data stays those eight characters.
# A bare URL or domain ("http://x", "www.x", "x.com/p") is made a live link by GitHub's Markdown and by
# linkifying renderers with no markup at all: the ":" before "//" and every "." between two letters or
# digits are escaped too, which shows the same text and leaves no URL for them to find.
_MARKDOWN = re.compile(r"[\\`*\[\]()!|]|(?<![^\W_])_|_(?![^\W_])|:(?=/)|(?<=\w)\.(?=\w)")
_ENTITIES = {"&": "&amp;", "<": "&lt;", ">": "&gt;"}


def spreadsheet_cell(value: Any) -> Any:
    """`value` for a CSV cell that a spreadsheet opens: text that starts with one of `FORMULA_STARTS`
    gets a leading single quote; anything else (numbers, None, other text) is returned as it is.

    >>> spreadsheet_cell('=HYPERLINK("http://x")'), spreadsheet_cell("-2+3"), spreadsheet_cell(-0.5)
    ('\\'=HYPERLINK("http://x")', "'-2+3", -0.5)
    """
    if isinstance(value, str) and value.startswith(FORMULA_STARTS):
        return "'" + value
    return value


def spreadsheet_row(row: Mapping[str, Any]) -> dict[str, Any]:
    """A CSV row for a spreadsheet: `spreadsheet_cell` on every value.

    >>> spreadsheet_row({"id": "@SUM(A1)", "score": -0.25, "reason": None})
    {'id': "'@SUM(A1)", 'score': -0.25, 'reason': None}
    """
    return {name: spreadsheet_cell(value) for name, value in row.items()}


def visible_bidi(text: str) -> str:
    """`text` with each bidi control shown as a marker, so that it cannot reorder what is displayed.

    >>> visible_bidi("invoice\\u202egnp.exe")
    'invoice⟨U+202E⟩gnp.exe'
    """
    return _BIDI.sub(lambda m: f"⟨U+{ord(m.group()):04X}⟩", text)


def html_text(value: Any) -> str:
    """`str(value)` for an HTML page, in text or in a quoted attribute: HTML-escaped (quotes too), bidi
    controls shown as markers (`visible_bidi`).

    >>> html_text('<b a="1">\\u202eRTL</b>')
    '&lt;b a=&quot;1&quot;&gt;⟨U+202E⟩RTL&lt;/b&gt;'
    """
    return visible_bidi(html.escape(str(value)))


def markdown_text(value: Any) -> str:
    """`str(value)` for Markdown: no link, image, emphasis, code span or raw HTML can start in it, and bidi
    controls are shown as markers. Line breaks are kept (see `markdown_cell` for a table cell).

    >>> markdown_text("![x](http://e/p.png) <b>*hi*</b>")
    '\\\\!\\\\[x\\\\]\\\\(http\\\\://e/p\\\\.png\\\\) &lt;b&gt;\\\\*hi\\\\*&lt;/b&gt;'
    """
    text = "".join(_ENTITIES.get(c, c) for c in str(value))
    return visible_bidi(_MARKDOWN.sub(lambda m: "\\" + m.group(), text))


def markdown_cell(value: Any) -> str:
    """`markdown_text` on one line, for a cell of a Markdown table: every run of white space (line breaks
    included) becomes one space, so that a cell cannot end its row.

    >>> markdown_cell("a | b\\n[c](javascript:d)")
    'a \\\\| b \\\\[c\\\\]\\\\(javascript:d\\\\)'
    """
    return markdown_text(" ".join(str(value).split()))
