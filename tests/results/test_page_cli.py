"""`ascend-eval report OUT`: redraws report.html from a saved run; a folder with no run says what to pass."""

from __future__ import annotations

from pathlib import Path

import pytest

from ascend_eval.cli.main import main
from tests.results.test_page import hand_built


@pytest.fixture
def run(tmp_path: Path) -> Path:
    folder = tmp_path / "run"
    hand_built().save(folder)
    (folder / "report.html").unlink()
    return folder


def test_report_redraws_the_page_of_a_saved_run(run: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["report", str(run)]) == 0
    page = run / "report.html"
    assert capsys.readouterr().out.strip() == str(page)
    assert "Lowest-scoring samples" in page.read_text("utf-8")


def test_report_takes_results_json_and_an_output_path(run: Path, tmp_path: Path) -> None:
    target = tmp_path / "pages" / "run1.html"
    assert main(["report", str(run / "results.json"), "--output", str(target)]) == 0
    assert target.is_file() and not (run / "report.html").exists()
    # An existing folder as --output gets report.html inside it.
    assert main(["report", str(run), "--output", str(tmp_path / "pages")]) == 0
    assert (tmp_path / "pages" / "report.html").is_file()


def test_a_folder_without_a_run_exits_2_naming_the_fix(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["report", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert "holds no results.json" in err and "ascend-eval evaluate --out" in err
    assert not (tmp_path / "report.html").exists()
