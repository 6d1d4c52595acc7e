"""The README stays short and its links stay true: at most 15 KiB (details and dated measurements belong in
docs/), and every relative link in README.md and docs/*.md names a file or folder that exists. Anchors
after `#` are not checked; links with a scheme (`https:`, `mailto:`) are not followed."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
README_LIMIT = 15 * 1024
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]

_FENCED = re.compile(r"^(```|~~~).*?^\1", re.MULTILINE | re.DOTALL)
_INLINE_CODE = re.compile(r"`[^`\n]*`")
_INLINE_LINK = re.compile(r"!?\[[^\]]*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
_REFERENCE_LINK = re.compile(r"^\s*\[[^\]]+\]:\s*<?(\S+?)>?(?:\s+\"[^\"]*\")?\s*$", re.MULTILINE)
_SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*:")


def relative_links(text: str) -> list[str]:
    """The relative link targets of a Markdown text, code blocks and inline code left out, anchors cut."""
    prose = _INLINE_CODE.sub("", _FENCED.sub("", text))
    targets = _INLINE_LINK.findall(prose) + _REFERENCE_LINK.findall(prose)
    paths = [target.split("#", 1)[0] for target in targets if not _SCHEME.match(target)]
    return [path for path in paths if path]


def test_the_readme_is_at_most_15_kib() -> None:
    size = len((ROOT / "README.md").read_bytes())
    assert size <= README_LIMIT, (
        f"README.md is {size:,} bytes, over {README_LIMIT:,}: move details and dated measurements to docs/"
    )


@pytest.mark.parametrize("page", PAGES, ids=lambda page: page.relative_to(ROOT).as_posix())
def test_every_relative_link_resolves(page: Path) -> None:
    broken = [
        link for link in relative_links(page.read_text(encoding="utf-8")) if not (page.parent / link).exists()
    ]
    assert not broken, f"{page.relative_to(ROOT)} links to what does not exist: {broken}"


def test_the_link_reader_finds_relative_links_only() -> None:
    text = (
        "[a](docs/a.md) ![b](img/b.png) [c](https://x.org/c.md) [d](#top) [e](e.md#part) `[f](f.md)`\n"
        "```\n[g](g.md)\n```\n[h]: ../h.md\n"
    )
    assert relative_links(text) == ["docs/a.md", "img/b.png", "e.md", "../h.md"]
