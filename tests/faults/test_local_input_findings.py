"""The library and the CLI tried as a hostile user would, issue 48: a file that is no file, invisible
characters before a column's name, a bare URL in the data, and an `--out` folder that holds someone
else's files."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pytest

import ascend_eval
from ascend_eval.cli.main import main
from ascend_eval.data import load_dataset
from ascend_eval.data.corpus import read_corpus
from ascend_eval.data.stream import open_samples
from ascend_eval.models.errors import DataError
from ascend_eval.results.escape import markdown_cell
from tests.conftest import NgramEmbedder
from tests.faults.test_data_file_findings import FAST, within
from tests.models.loopback_server import CHAT, LoopbackServer
from tests.report.test_compare import rule_judge
from tests.test_api_endpoints import judge_route

# --- files that are no files ------------------------------------------------------------------------------


@pytest.mark.skipif(not Path("/proc/self/mem").exists(), reason="no /proc/self/mem here")
def test_proc_self_mem_as_a_corpus_is_a_data_error_not_a_traceback():
    with pytest.raises(DataError, match=r"Cannot read the corpus file '/proc/self/mem'"):
        read_corpus(Path("/proc/self/mem"))


@pytest.fixture
def fifo(tmp_path: Path) -> Path:
    if not hasattr(os, "mkfifo"):
        pytest.skip("no FIFOs on this platform")
    path = tmp_path / "data.jsonl"
    os.mkfifo(path)
    return path


def test_a_fifo_named_jsonl_is_refused_by_evaluate_without_waiting_for_a_writer(fifo, tmp_path, capsys):
    for call in (
        lambda: load_dataset(fifo),
        lambda: open_samples(fifo),
        lambda: ascend_eval.evaluate(
            str(fifo), "faithfulness", judge="http://127.0.0.1:9/v1", progress=False
        ),
    ):
        error = within(call)
        assert isinstance(error, DataError), error
        assert f"'{fifo}' is a FIFO (named pipe), not a regular file" in str(error)
    started = time.monotonic()
    code = within(
        lambda: main(["evaluate", str(fifo), "--out", str(tmp_path / "out"), "--metrics", "faithfulness"])
    )
    assert code == 2 and time.monotonic() - started < FAST
    assert "is a FIFO (named pipe)" in capsys.readouterr().err


# --- invisible characters before a column's name ----------------------------------------------------------


@pytest.mark.parametrize(
    "invisible",
    ["\u200b", "\ufeff \ufeff", "\u200d", "\u2060", "\u00ad", " ", "\u200e"],
    ids=[
        "zero-width space",
        "bom-space-bom",
        "zero-width joiner",
        "word joiner",
        "soft hyphen",
        "a space",
        "lrm",
    ],
)
@pytest.mark.parametrize("kind", ["csv", "jsonl"])
def test_invisible_characters_before_the_id_header_do_not_drop_the_ids(tmp_path, invisible, kind):
    if kind == "csv":
        path = tmp_path / "data.csv"
        path.write_text(f"{invisible}id,question,answer\nx1,q1,a\nx2,q2,a\n", encoding="utf-8")
    else:
        path = tmp_path / "data.jsonl"
        rows = [{f"{invisible}id": f"x{i}", f"question{invisible}": f"q{i}"} for i in (1, 2)]
        path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    assert [s.id for s in load_dataset(path)] == ["x1", "x2"]
    assert [s.id for s in open_samples(path)] == ["x1", "x2"]  # the reader `ascend-eval evaluate` uses
    assert [s.user_input for s in load_dataset(path)] == ["q1", "q2"]


# --- bare URLs in `compare --markdown` ---------------------------------------------------------------------

URLS = "see http://evil.example/steal www.evil.example"


def test_compare_markdown_leaves_no_bare_url_for_a_renderer_to_link(tmp_path, capsys):
    rows = [
        {
            "id": "HTTPS://EVIL.EXAMPLE/a",
            "question": URLS,
            "answer": "Mars is red.",
            "contexts": ["Mars is red."],
            "ground_truth": "x",
        },
        {"id": "u2", "question": "Where?", "answer": "Paris is big.", "contexts": ["Paris is big."]},
    ]
    for name, broken in (("a", None), ("b", "Mars")):
        judge = rule_judge(f"rules-{name}", statement=0.4, context=0.4, broken=broken)
        ascend_eval.evaluate(
            rows, ["faithfulness"], judge=judge, embedder=NgramEmbedder(), cache_dir=False, progress=False
        ).save(tmp_path / name)
    capsys.readouterr()
    assert (
        main(["compare", str(tmp_path / "a"), str(tmp_path / "b"), "--markdown", str(tmp_path / "c.md")]) == 0
    )
    markdown = (tmp_path / "c.md").read_text(encoding="utf-8")
    assert "evil" in markdown  # the sample is listed, with its text
    for live in ("http://", "HTTPS://", "www.evil", "evil.example"):
        assert live not in markdown, live
    assert "http\\://evil\\.example/steal" in markdown and "www\\.evil\\.example" in markdown
    assert "HTTPS\\://EVIL\\.EXAMPLE/a" in markdown
    assert markdown_cell("evil.example/p, a.b@c.d") == "evil\\.example/p, a\\.b@c\\.d"  # a domain alone
    markdown_it = pytest.importorskip("markdown_it")
    rendered = markdown_it.MarkdownIt("commonmark").enable("table").render(markdown)
    assert "http://evil.example/steal" in rendered and "<a " not in rendered  # shown as it was, not linked


# --- an --out folder with someone else's files --------------------------------------------------------------


ROWS = [
    {
        "user_input": "Where is the Eiffel Tower?",
        "response": "The Eiffel Tower is in Paris.",
        "retrieved_contexts": ["The Eiffel Tower is in Paris."],
    }
]


def _argv(server: LoopbackServer, data: Path, out: Path) -> list[str]:
    return [
        "evaluate", str(data), "--metrics", "faithfulness", "--no-cache", "-q",
        "--judge", server.url, "--judge-model", "served-judge", "--out", str(out),
    ]  # fmt: skip


@pytest.mark.parametrize("theirs", ["config.yaml", "report.html", "results.json"])
def test_out_into_a_folder_with_files_no_run_wrote_is_refused_before_the_run(tmp_path, theirs, capsys):
    data = tmp_path / "data.json"
    data.write_text(json.dumps(ROWS), encoding="utf-8")
    out = tmp_path / "project"
    out.mkdir()
    (out / theirs).write_text("their own file\n", encoding="utf-8")
    (out / "notes.txt").write_text("notes\n", encoding="utf-8")
    with LoopbackServer() as server:
        server.route(CHAT, judge_route)
        assert main(_argv(server, data, out)) == 2
        assert server.requests == []  # refused before any request
    err = capsys.readouterr().err
    assert f"holds {theirs}, which no earlier ascend-eval run wrote" in err and "new or empty folder" in err
    assert sorted(p.name for p in out.iterdir()) == sorted([theirs, "notes.txt"])
    assert (out / theirs).read_text(encoding="utf-8") == "their own file\n"


def test_out_into_an_earlier_runs_folder_or_one_with_other_files_still_runs(tmp_path):
    data = tmp_path / "data.json"
    data.write_text(json.dumps(ROWS), encoding="utf-8")
    notes = tmp_path / "notes"
    notes.mkdir()
    (notes / "notes.txt").write_text("notes\n", encoding="utf-8")
    python_run = tmp_path / "python-run"
    with LoopbackServer() as server:
        server.route(CHAT, judge_route)
        assert main(_argv(server, data, tmp_path / "cli-run")) == 0
        assert main(_argv(server, data, tmp_path / "cli-run")) == 0  # the same command again
        (tmp_path / "cli-run" / "results.json").unlink()  # a run killed before its results
        (tmp_path / "cli-run" / "summary.json").unlink()
        assert main(_argv(server, data, tmp_path / "cli-run")) == 0
        assert main(_argv(server, data, notes)) == 0  # files the run does not write are no obstacle
        ascend_eval.evaluate(ROWS, "faithfulness", judge=rule_judge("r", statement=0.4, context=0.4),
                             cache_dir=False, progress=False, out=python_run)  # fmt: skip
        assert not (python_run / "config.yaml").exists()
        assert main(_argv(server, data, python_run)) == 0  # a folder evaluate(out=...) wrote
    assert (notes / "notes.txt").read_text(encoding="utf-8") == "notes\n"
