"""Every function of ascend_eval/, models/ and kernels/ reads in one screenful or two: at most 100 lines
from its `def` to its last line, docstring included. A longer one is several steps that want names of
their own (argparse groups, route groups, a loop's setup, step and finish)."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
LIMIT = 100
FOLDERS = ("ascend_eval", "models", "kernels")


def long_functions(source: str, limit: int = LIMIT) -> list[tuple[str, int]]:
    """(name, lines) of each function in `source` longer than `limit` lines, nested ones included."""
    return [
        (node.name, node.end_lineno - node.lineno + 1)
        for node in ast.walk(ast.parse(source))
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
        and node.end_lineno is not None
        and node.end_lineno - node.lineno + 1 > limit
    ]


def test_long_functions_counts_from_def_to_the_last_line() -> None:
    body = "\n".join(f"    x{i} = {i}" for i in range(3))
    assert long_functions(f"def f():\n{body}\n", limit=4) == []
    assert long_functions(f"def f():\n{body}\n    return 1\n", limit=4) == [("f", 5)]


def test_no_function_is_longer_than_the_limit() -> None:
    long = {
        f"{path.relative_to(ROOT).as_posix()}::{name}": lines
        for folder in FOLDERS
        for path in sorted((ROOT / folder).rglob("*.py"))
        for name, lines in long_functions(path.read_text(encoding="utf-8"))
    }
    assert not long, f"functions over {LIMIT} lines (split them into named steps): {long}"
