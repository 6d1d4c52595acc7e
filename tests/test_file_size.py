"""Every module of ascend_eval/, models/ and kernels/ is readable in one sitting: at most 600 lines
(docs/development.md, "House rules the tests keep"), with no exceptions: `TorchJudge`, the last long one,
is now the package `models/judge/torch/` (planner, runner, decode loop, logits processors, facade).
"""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
LIMIT = 600
FOLDERS = ("ascend_eval", "models", "kernels")
EXCEPTIONS: frozenset[str] = frozenset()


def test_no_module_is_longer_than_the_limit() -> None:
    long = {
        rel: n
        for folder in FOLDERS
        for path in sorted((ROOT / folder).rglob("*.py"))
        if (rel := path.relative_to(ROOT).as_posix()) not in EXCEPTIONS
        and (n := len(path.read_text(encoding="utf-8").splitlines())) > LIMIT
    }
    assert not long, f"modules over {LIMIT} lines (split them by concern): {long}"


def test_the_exceptions_still_exist() -> None:
    assert all((ROOT / rel).is_file() for rel in EXCEPTIONS), "drop exceptions for files that are gone"
