"""No module imports another module's private names (STYLE §4): what a module keeps to itself carries a
leading underscore, and whoever needs it gets a public name instead.

ruff's SLF001 (on in pyproject) catches `obj._name` accesses; it does not look at imports, so this test
does: `from ascend_eval.x import _name`, `import ascend_eval.x._module` and the like, anywhere in the
repository's Python files. Third-party packages are not ours to rename: the RAGAS parity code imports the
metric classes from the private modules RAGAS defines them in, and that stays allowed.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
FOLDERS = ("ascend_eval", "models", "kernels", "tests", "benchmarks", "scripts")
FIRST_PARTY = frozenset({"ascend_eval", "models", "kernels", "tests", "benchmarks", "scripts"})


def _private(name: str) -> bool:
    return name.startswith("_") and not name.startswith("__")


def private_imports(tree: ast.AST) -> Iterator[tuple[int, str]]:
    """(line, what) for every import of a first-party private name or module in `tree`.

    >>> code = "from ascend_eval.cli.main import main, _split\\nimport ascend_eval._x\\nfrom ragas import _y"
    >>> list(private_imports(ast.parse(code)))
    [(1, 'from ascend_eval.cli.main import _split'), (2, 'import ascend_eval._x')]
    """
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            module = node.module or ""
            if node.level == 0 and module.split(".")[0] not in FIRST_PARTY:
                continue
            source = "." * node.level + module
            if any(_private(part) for part in module.split(".") if part):
                yield node.lineno, f"from {source} import ..."
            for alias in node.names:
                if _private(alias.name):
                    yield node.lineno, f"from {source} import {alias.name}"
        elif isinstance(node, ast.Import):
            for alias in node.names:
                parts = alias.name.split(".")
                if parts[0] in FIRST_PARTY and any(_private(p) for p in parts):
                    yield node.lineno, f"import {alias.name}"


def test_no_module_imports_another_modules_private_names() -> None:
    found = [
        f"{path.relative_to(ROOT)}:{line}: {what}"
        for folder in FOLDERS
        for path in sorted((ROOT / folder).rglob("*.py"))
        for line, what in private_imports(ast.parse(path.read_text(encoding="utf-8"), str(path)))
    ]
    assert not found, "private names imported across modules; give them public names:\n" + "\n".join(found)
