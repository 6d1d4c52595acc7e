"""The experiment report opened in headless Chromium: the page renders (the screenshot is not blank) and
every plot is an embedded PNG that the browser decodes."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

from ascend_eval.experiments import run_experiment
from tests.experiments.test_sweep import IMG, METRICS, LocalRunner, base_spec

np = pytest.importorskip("numpy")
Image = pytest.importorskip("PIL.Image")


def chromium() -> str:
    for name in ("chromium", "chromium-browser", "google-chrome"):
        path = shutil.which(name)
        if path:
            return path
    pytest.skip("no headless Chromium on PATH (Debian: apt-get install -y chromium)")


def screenshot(page: Path, out: Path, *, height: int) -> np.ndarray:
    run = subprocess.run(
        [chromium(), "--headless", "--disable-gpu", "--no-sandbox", "--hide-scrollbars",
         f"--screenshot={out}", f"--window-size=1280,{height}", page.resolve().as_uri()],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert run.returncode == 0 and out.is_file(), run.stderr[-2000:]
    return np.asarray(Image.open(out).convert("RGB"), dtype=np.float32)


def test_report_renders_with_its_plots(tmp_path: Path) -> None:
    spec = {**base_spec(), "sweep": {"chunk_size": [128, 256], "top_k": [1, 3]}, "name": "render check"}
    result = run_experiment(spec, tmp_path / "out", run_point=LocalRunner(tmp_path / "cache"), limit=4)
    page = result.paths["report"]
    html = page.read_text("utf-8")
    assert len(IMG.findall(html)) == 2 * len(METRICS)

    shot = screenshot(page, tmp_path / "report.png", height=2000)
    assert shot.shape == (2000, 1280, 3)
    assert shot.std() > 20  # text, table and plots, not a blank page
    # The plot area (below the table) holds colour: matplotlib's blue lines and boxes.
    blue = (shot[..., 2] > 150) & (shot[..., 0] < 100)
    assert blue.sum() > 500

    # A page with the images stripped renders far less ink: the plots really come from the data URIs.
    bare = tmp_path / "bare.html"
    bare.write_text(re.sub(r'<img src="data:image/png;base64,[^"]+"', "<img", html), encoding="utf-8")
    bare_shot = screenshot(bare, tmp_path / "bare.png", height=2000)
    assert ((bare_shot[..., 2] > 150) & (bare_shot[..., 0] < 100)).sum() < blue.sum() / 5
