"""The command line explains itself: `--version`, the examples under `--help`, the metric names, and a help
that stays cheap (no model runtime imported)."""

from __future__ import annotations

import re
import subprocess
import sys
from importlib import metadata

import pytest

import ascend_eval
from ascend_eval.cli.main import main
from ascend_eval.metrics import metric_names


def cli(*args):
    return subprocess.run([sys.executable, *args], capture_output=True, text=True, timeout=120)


def installed(dist: str) -> str | None:
    try:
        return metadata.version(dist)
    except metadata.PackageNotFoundError:
        return None


def test_version_names_ours_python_and_the_runtimes():
    out = cli("-m", "ascend_eval", "--version")
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    assert lines[0] == f"ascend-eval {ascend_eval.__version__}" == "ascend-eval 0.1.0"
    assert re.fullmatch(r"python 3\.\d+\.\d+\S*", lines[1])
    for dist in ("torch", "transformers", "vllm", "torch-npu"):
        version = installed(dist)
        if version:
            assert f"{dist} {version}" in lines
        else:
            assert dist in lines[-1] and lines[-1].startswith("not installed: ")


def help_text(capsys, *argv: str) -> str:
    with pytest.raises(SystemExit) as stop:
        main([*argv, "--help"])
    assert stop.value.code == 0
    return capsys.readouterr().out


def test_top_level_help_shows_the_examples(capsys):
    text = help_text(capsys)
    for example in (
        "ascend-eval evaluate bilingual-example --out out/example",  # the main job
        "--judge http://127.0.0.1:8000/v1",  # a file with a server judge
        "ascend-eval evaluate --config examples/eval.yaml",
        "ascend-eval job run spec.json",  # a NeMo job
        "ascend-eval report out/example",
        "ascend-eval compare out/example out/mine",
        "--version",
    ):
        assert example in text, example


def test_evaluate_help_shows_examples_the_config_file_and_every_metric(capsys):
    text = help_text(capsys, "evaluate")
    assert "ascend-eval evaluate bilingual-example --out out/example" in text
    assert "--judge-set gpu_memory_utilization=0.6" in text and "--config FILE" in text
    assert "Flags given on the command line override the file" in text
    flat = " ".join(text.split())
    assert "{metric_names}" not in text
    for name in metric_names():
        assert name in flat, name
    for flag in ("--judge-set", "--embedder-set", "--chunk-size", "--no-dedupe", "--no-quiet"):
        assert flag in text


def test_help_imports_no_model_runtime():
    """`-X importtime` lists every module the help imported; torch and friends are not among them, and
    building the parser alone does not even import the metrics."""
    out = cli("-X", "importtime", "-m", "ascend_eval", "evaluate", "--help")
    assert out.returncode == 0, out.stderr[-2000:]
    imported = {line.rsplit("|", 1)[-1].strip() for line in out.stderr.splitlines() if "|" in line}
    assert "ascend_eval.metrics" in imported  # the help lists the metric names
    heavy = {m for m in imported if m.split(".")[0] in ("torch", "transformers", "vllm", "torch_npu")}
    assert not heavy, sorted(heavy)[:5]

    code = (
        "import sys; from ascend_eval.cli.main import build_parser; build_parser(); "
        "print(sorted(m for m in sys.modules if m.split('.')[0] in ('torch', 'transformers', 'vllm') "
        "or m == 'ascend_eval.metrics'))"
    )
    built = cli("-c", code)
    assert built.returncode == 0, built.stderr
    assert built.stdout.strip() == "[]"
