"""The run report opened in headless Chromium, on a real saved run (tests/report/data/bilingual_run.json:
the bundled 16-sample bilingual example, all 12 metrics, the shipped CPU judge and embedder): the page is
not blank, the inline SVG histograms draw their bars, and the browser's DOM has every section."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

from ascend_eval.results import EvaluationResult
from ascend_eval.results.page import SECTIONS, write_run_report
from ascend_eval.results.svg import LANGUAGE_COLOURS
from tests.experiments.test_report_render import chromium, screenshot

np = pytest.importorskip("numpy")

RUN = Path(__file__).parent / "data" / "bilingual_run.json"
HEIGHT = 2400  # the header, the score table and all twelve histograms


def bars(shot: np.ndarray) -> int:
    """Pixels of the two language colours (within a tolerance for anti-aliasing)."""
    count = 0
    for colour in LANGUAGE_COLOURS.values():
        rgb = np.array([int(colour[i : i + 2], 16) for i in (1, 3, 5)], dtype=np.float32)
        count += int((np.abs(shot - rgb).max(axis=-1) < 24).sum())
    return count


@pytest.fixture(scope="module")
def page(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_run_report(EvaluationResult.load(RUN), tmp_path_factory.mktemp("run"))


def test_the_report_renders_with_its_histograms(page: Path, tmp_path: Path) -> None:
    shot = screenshot(page, tmp_path / "report.png", height=HEIGHT)
    assert shot.shape == (HEIGHT, 1280, 3)
    assert shot.std() > 20  # text, tables and bars, not a blank page
    drawn = bars(shot)
    assert drawn > 5000

    # The same page without its <svg> elements has next to none of the bar colours: the ink is the SVG's.
    bare = tmp_path / "bare.html"
    bare.write_text(re.sub(r"<svg.*?</svg>", "", page.read_text("utf-8"), flags=re.DOTALL), encoding="utf-8")
    assert bars(screenshot(bare, tmp_path / "bare.png", height=HEIGHT)) < drawn / 20


def test_the_rendered_dom_has_every_section(page: Path) -> None:
    run = subprocess.run(
        [chromium(), "--headless", "--disable-gpu", "--no-sandbox", "--dump-dom", page.resolve().as_uri()],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert run.returncode == 0, run.stderr[-2000:]
    dom = run.stdout
    headings = re.findall(r"<h2[^>]*>(.*?)</h2>", dom)
    assert headings == list(SECTIONS)
    assert len(re.findall(r"<svg\b", dom)) == 12  # one histogram per metric
    assert len(re.findall(r"<h3\b", dom)) == 12  # one block of lowest samples per metric
    assert "水的化学式是什么？" in dom  # the Chinese questions came through as text
