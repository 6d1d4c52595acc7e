"""`ascend-eval testset` end to end: a folder of documents in, a .jsonl of rows and a summary out, the flags
reaching the models and the settings, and bad input an exit status 2 before any model is built."""

from __future__ import annotations

import json

import pytest

from ascend_eval.cli.main import main
from ascend_eval.data.corpus import read_corpus
from ascend_eval.models.spec import ModelSpec
from ascend_eval.testset import generation
from tests.conftest import NgramEmbedder
from tests.testset.conftest import scripted_judge

DOCS = {
    "harbour.txt": "Kelwick harbour was dredged in 1931 so that larger trawlers could land their catch "
    "there. The work took two summers and cost the council four thousand pounds.",
    "mill.md": "# Brannock Mill\n\nBrannock Mill ground barley with a waterwheel until electric motors "
    "came in 1948. The wheel still turns on open days in August.",
    "chapel.jsonl": json.dumps(
        {
            "id": "chapel",
            "text": "Saint Ives chapel keeps a bell cast in Bristol in 1702. It rings for weddings "
            "and at noon on the feast day.",
        }
    )
    + "\n",
    "茶园.txt": "青川镇的茶园分布在海拔八百米以上的山坡上。每年清明前后采摘的明前茶价格最高，"
    "一斤鲜叶只能制成四两干茶。",
}


@pytest.fixture
def folder(tmp_path):
    root = tmp_path / "docs"
    root.mkdir()
    for name, text in DOCS.items():
        (root / name).write_text(text, encoding="utf-8")
    return root


@pytest.fixture
def built(monkeypatch):
    """Model resolution replaced by the scripted judge and the n-gram embedder; records what it was given."""
    asked = []

    def build_models(specs, *, memory_budget=None):
        asked.append(dict(specs))
        return {"judge": scripted_judge(), "embedder": NgramEmbedder(dim=512)}

    monkeypatch.setattr(generation, "build_models", build_models)
    return asked


def test_a_folder_in_rows_and_a_summary_out(folder, tmp_path, built, capsys):
    personas = tmp_path / "personas.txt"
    personas.write_text("# who asks\na harbour historian\n\na visiting student\n", encoding="utf-8")
    out, corpus_out = tmp_path / "out" / "testset.jsonl", tmp_path / "out" / "corpus.jsonl"
    argv = [
        "testset",
        str(folder),
        "--size",
        "4",
        "--out",
        str(out),
        "--kinds",
        "single_hop=0.5,multi_hop=0.5",
    ]
    argv += ["--personas", str(personas), "--seed", "2", "--chunk-size", "200", "--no-cache"]
    argv += ["--judge", "my-judge", "--embedder", "my-embedder", "--judge-backend", "vllm"]
    argv += ["--device", "cpu", "--corpus-out", str(corpus_out), "-q"]
    assert main(argv) == 0
    rows = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
    assert len(rows) == 4
    assert {r["query_kind"] for r in rows} == {"single_hop", "multi_hop"}
    assert {r["persona"] for r in rows} <= {"a harbour historian", "a visiting student"}
    assert all(r["question"] and r["ground_truth"] and r["reference_contexts"] for r in rows)
    printed = capsys.readouterr()
    assert "rows per kind: " in printed.out and "rows per language: " in printed.out
    assert f"wrote 4 rows to {out}" in printed.out and printed.err == ""  # -q: no progress lines
    [models] = built  # each model as the one spec it is built from: its backend and the device merged in
    assert models == {
        "judge": ModelSpec(model="my-judge", role="judge", backend="vllm", device="cpu"),
        "embedder": ModelSpec(model="my-embedder", role="embedder", device="cpu"),
    }
    ids = sorted(d["id"] for d in read_corpus(corpus_out))  # a corpus file a job spec can name
    assert ids == ["chapel", "harbour.txt", "mill.md", "茶园.txt"]


def test_progress_goes_to_stderr_and_running_out_exits_3(folder, tmp_path, built, capsys):
    out = tmp_path / "testset.jsonl"
    code = main(
        ["testset", str(folder), "--size", "40", "--out", str(out), "--chunk-size", "200", "--no-cache"]
    )
    assert code == 3
    printed = capsys.readouterr()
    assert "round 1: writing" in printed.err and "4 documents" in printed.err
    assert "ran out at" in printed.out
    assert 0 < len(out.read_text(encoding="utf-8").splitlines()) < 40  # what passed is written


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--size", "0"], "size=0"),
        (["--size", "2", "--kinds", "single=1"], "Did you mean 'single_hop'"),
        (["--size", "2", "--personas", "missing.txt"], "Cannot read the personas file"),
        (["--size", "2", "--chunk-size", "5000"], "less than one chunk"),
    ],
)
def test_bad_input_exits_2_before_any_model_is_built(folder, tmp_path, built, capsys, extra, message):
    out = tmp_path / "testset.jsonl"
    assert main(["testset", str(folder), "--out", str(out), "--no-cache", *extra]) == 2
    assert message in capsys.readouterr().err
    assert built == [] and not out.exists()


def test_an_empty_folder_and_a_wrong_out_file_are_errors(tmp_path, built, capsys):
    (tmp_path / "empty").mkdir()
    assert main(["testset", str(tmp_path / "empty"), "--size", "2", "--out", str(tmp_path / "t.jsonl")]) == 2
    assert "holds no .txt, .md, .jsonl, .pdf file" in capsys.readouterr().err
    assert main(["testset", "ascend-eval/rag-mini-en", "--size", "2", "--out", str(tmp_path / "t.csv")]) == 2
    assert "must name a .jsonl file" in capsys.readouterr().err
    assert built == []


def test_help_shows_the_examples(capsys):
    with pytest.raises(SystemExit):
        main(["testset", "--help"])
    text = capsys.readouterr().out
    assert "ascend-eval testset docs/ --size 50" in text and "--personas FILE" in text


def test_model_flags_change_the_judges_fields_before_any_model_loads():
    from ascend_eval.cli.main import build_parser
    from ascend_eval.cli.testset import model_arg
    from ascend_eval.models.errors import ConfigError

    argv = ["testset", "c", "--size", "1", "--out", "o.jsonl", "--judge", "http://127.0.0.1:9/v1"]
    args = build_parser().parse_args([*argv, "--judge-model", "qwen", "--judge-set", "request_timeout=600"])
    judge = model_arg(args, "judge")
    assert (judge.model, judge.served_model_name, judge.request_timeout) == (
        "http://127.0.0.1:9/v1",
        "qwen",
        600,
    )
    assert model_arg(build_parser().parse_args(argv), "judge") == "http://127.0.0.1:9/v1"
    with pytest.raises(ConfigError, match="request_timout"):
        model_arg(build_parser().parse_args([*argv, "--judge-set", "request_timout=600"]), "judge")
