"""Score histograms as inline SVG, drawn in pure Python so the run report needs no plotting library.

Each bar carries a `<title>` (a browser shows it on hover) and its count as a text label, so the numbers
can be read without hovering and without a browser at all.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

from ascend_eval.results.escape import html_text

BINS = 10
LANGUAGE_COLOURS = {"en": "#3b6fd4", "zh": "#e07b39"}
"""Bar colour per language; other languages take `OTHER_COLOURS` in turn."""
OTHER_COLOURS = ("#4a9e5c", "#8e5ab8", "#7a7a7a")


def bin_counts(scores: Sequence[float], bins: int = BINS) -> list[int]:
    """How many scores fall in each of `bins` equal bins over [0, 1]; NaN is left out, 1.0 goes in the last
    bin, and a score outside [0, 1] in the nearest end bin.

    >>> bin_counts([0.0, 0.05, 0.1, 0.55, 1.0, float("nan")])
    [2, 1, 0, 0, 0, 1, 0, 0, 0, 1]
    >>> bin_counts([], bins=4)
    [0, 0, 0, 0]
    """
    counts = [0] * bins
    for score in scores:
        if math.isnan(score):
            continue
        counts[min(bins - 1, max(0, int(score * bins)))] += 1
    return counts


def language_colour(language: str, order: Sequence[str]) -> str:
    """The bar colour of a language: fixed for en and zh, then the other colours in `order`.

    >>> language_colour("zh", ["en", "zh"])
    '#e07b39'
    >>> language_colour("fr", ["en", "fr"])
    '#4a9e5c'
    """
    if language in LANGUAGE_COLOURS:
        return LANGUAGE_COLOURS[language]
    others = [x for x in order if x not in LANGUAGE_COLOURS]
    return OTHER_COLOURS[others.index(language) % len(OTHER_COLOURS)] if language in others else "#7a7a7a"


def histogram_svg(
    title: str, scores_by_language: Mapping[str, Sequence[float]], *, width: int = 360, height: int = 190
) -> str:
    """One metric's score histogram, a group of bars per bin with one bar per language.

    Args:
        title: shown above the plot (escaped).
        scores_by_language: language -> its samples' scores (NaN is left out of the bars).
        width: the SVG width in pixels.
        height: the SVG height in pixels.

    Returns:
        An `<svg>` element as text, with a `<title>` and a count label per non-empty bar and a legend.
    """
    languages = list(scores_by_language)
    counts = {lang: bin_counts(scores_by_language[lang]) for lang in languages}
    left, right, top, bottom = 30, 10, 34, 32
    plot_w, plot_h = width - left - right, height - top - bottom
    peak = max([1, *(c for row in counts.values() for c in row)])
    group = plot_w / BINS
    bar = (group - 4) / max(1, len(languages))
    parts = [
        (
            f'<svg width="{width}" height="{height}" viewBox="0 0 {width} {height}" role="img" '
            f'aria-label="{html_text(title)} histogram">'
        ),
        f"<title>{html_text(title)}: scores in {BINS} bins over [0, 1]</title>",
        f'<text x="{left}" y="14" font-size="12" font-weight="bold">{html_text(title)}</text>',
        f'<line x1="{left}" y1="{top + plot_h}" x2="{left + plot_w}" y2="{top + plot_h}" stroke="#444"/>',
        f'<line x1="{left}" y1="{top}" x2="{left}" y2="{top + plot_h}" stroke="#444"/>',
        f'<text x="{left - 4}" y="{top + 4}" font-size="9" text-anchor="end">{peak}</text>',
        f'<text x="{left - 4}" y="{top + plot_h}" font-size="9" text-anchor="end">0</text>',
    ]
    for i in range(BINS + 1):
        if i % 2 == 0:
            x = left + i * group
            parts.append(
                f'<text x="{x:.1f}" y="{top + plot_h + 12}" font-size="9" text-anchor="middle">{i / BINS:.1f}'
                "</text>"
            )
    for j, lang in enumerate(languages):
        colour = language_colour(lang, languages)
        for i, n in enumerate(counts[lang]):
            if not n:
                continue
            h = plot_h * n / peak
            x = left + i * group + 2 + j * bar
            y = top + plot_h - h
            label = f"{lang} [{i / BINS:.1f}, {(i + 1) / BINS:.1f}{']' if i == BINS - 1 else ')'}: {n}"
            parts.append(
                f'<rect x="{x:.1f}" y="{y:.1f}" width="{bar:.1f}" height="{h:.1f}" fill="{colour}">'
                f"<title>{html_text(label)}</title></rect>"
                f'<text x="{x + bar / 2:.1f}" y="{y - 2:.1f}" font-size="8" text-anchor="middle">{n}</text>'
            )
    for j, lang in enumerate(languages):
        x = left + j * 80
        total, colour = sum(counts[lang]), language_colour(lang, languages)
        parts.append(
            f'<rect x="{x}" y="{height - 12}" width="9" height="9" fill="{colour}"/>'
            f'<text x="{x + 12}" y="{height - 4}" font-size="10">{html_text(lang)} (n={total})</text>'
        )
    parts.append("</svg>")
    return "".join(parts)
