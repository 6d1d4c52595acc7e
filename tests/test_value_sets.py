"""Each value set of the settings is written once: as a `Literal` in `ascend_eval.choices` (the backends in
`models/spec.py`, the chunk units in `pipeline/config.py`), and every check, command-line `choices` and type
takes it from there. A tuple, list or `Literal` of the same strings anywhere else is a second copy."""

from __future__ import annotations

import ast
from pathlib import Path
from typing import get_args

from ascend_eval import choices
from ascend_eval.pipeline.config import ChunkUnit

ROOT = Path(__file__).resolve().parents[1]
SETS = {
    "judge modes": frozenset(choices.JUDGE_MODES),
    "scorings": frozenset(choices.SCORINGS),
    "calibration methods": frozenset(choices.METHODS),
    "layouts": frozenset(choices.LAYOUTS),
    "backends": frozenset(choices.BACKENDS),
    "languages": frozenset(choices.LANGUAGE_SETTINGS),
    "executors": frozenset(choices.EXECUTOR_NAMES),
    "chunk units": frozenset(get_args(ChunkUnit)),
}
HOMES = {
    "backends": "models/spec.py",
    "chunk units": "ascend_eval/pipeline/config.py",
}
LEFT: set[tuple[str, str]] = set()
"""Copies not yet replaced by the set's name (none)."""


def string_collections(tree: ast.AST) -> list[tuple[int, frozenset[str]]]:
    """(line, values) of every tuple, list or set literal, and `Literal[...]`, made only of strings."""
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Tuple | ast.List | ast.Set) and len(node.elts) >= 2:
            values = [e.value for e in node.elts if isinstance(e, ast.Constant) and isinstance(e.value, str)]
            if len(values) == len(node.elts):
                found.append((node.lineno, frozenset(values)))
    return found


def copies() -> list[str]:
    out = []
    for path in sorted([*ROOT.glob("ascend_eval/**/*.py"), *ROOT.glob("models/**/*.py")]):
        rel = path.relative_to(ROOT).as_posix()
        for line, values in string_collections(ast.parse(path.read_text(encoding="utf-8"))):
            for name, wanted in SETS.items():
                # The set itself, or itself with "auto" (a setting's values), written out again.
                if (
                    values in (wanted, wanted | {"auto"})
                    and rel not in ("ascend_eval/choices.py", HOMES.get(name))
                    and (name, rel) not in LEFT
                ):
                    out.append(f"{rel}:{line}: the {name} {sorted(values)}")
    return out


def test_each_value_set_is_written_once():
    assert copies() == []


def test_the_finder_sees_a_copy():
    tree = ast.parse('CHOICES = ["auto", "sample_first", "task_first"]\nx: Literal["classify", "generate"]')
    assert [v for _, v in string_collections(tree)] == [
        frozenset({"auto", "sample_first", "task_first"}),
        frozenset({"classify", "generate"}),
    ]
