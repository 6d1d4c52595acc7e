"""`python -m benchmarks` is the one entry point: its help lists every command, and every command's own
`--help` works through it (a module that lost its `main(argv)` or its parser fails here, cheaply)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from benchmarks.__main__ import COMMANDS

REPO = Path(__file__).resolve().parents[2]


def _run(*argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "benchmarks", *argv], capture_output=True, text=True, timeout=120, cwd=REPO
    )


def test_help_lists_every_command_with_its_line() -> None:
    run = _run("--help")
    assert run.returncode == 0, run.stderr
    for name, command in COMMANDS.items():
        assert f"  {name} " in run.stdout and command.summary in run.stdout


def test_every_module_with_a_main_is_a_command() -> None:
    programs = {
        path.stem
        for path in (REPO / "benchmarks").glob("*.py")
        if 'if __name__ == "__main__":' in path.read_text(encoding="utf-8") and path.stem != "__main__"
    }
    assert programs == {command.module for command in COMMANDS.values()}


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_each_command_help_exits_0(name: str) -> None:
    run = _run(name, "--help")
    assert run.returncode == 0, run.stderr[-2000:]
    assert f"python -m benchmarks {name}" in run.stdout


def test_an_unknown_command_is_refused() -> None:
    assert _run("no-such-command").returncode == 2
