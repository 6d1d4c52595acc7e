"""The module import graph of ascend_eval, models and kernels has no cycle, and imports flow one way:
ascend_eval -> models -> kernels -> base.

Every import statement counts: top-level ones, those inside functions (lazy imports) and those under
`if TYPE_CHECKING:`. A lazy import hides a cycle from Python at import time, not from the reader, and a
TYPE_CHECKING one is a cycle for type checkers; both mean two modules that belong together or a shared
piece that belongs elsewhere. models/ and kernels/ install as `ascend_eval.models` and
`ascend_eval.kernels` (pyproject's package-dir), so that is what their imports are called.
`ascend_eval.base` is the bottom layer: what every layer shares and that is not about models (the root
errors, the cache folder); every layer may import it, and it imports nothing of the project but itself.
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = {"ascend_eval": "ascend_eval", "models": "ascend_eval.models", "kernels": "ascend_eval.kernels"}
LOWER = ("ascend_eval.models", "ascend_eval.kernels")
BASE = "ascend_eval.base"
LAYERS = ("ascend_eval.models", "ascend_eval.kernels", BASE)
"""The lower layers, top to bottom: a module in one imports only its own layer's modules and those below."""


def _modules() -> dict[str, tuple[Path, bool]]:
    """Dotted module name -> (file, is a package `__init__`)."""
    modules: dict[str, tuple[Path, bool]] = {}
    for folder, prefix in PACKAGES.items():
        for path in sorted((ROOT / folder).rglob("*.py")):
            parts = list(path.relative_to(ROOT / folder).with_suffix("").parts)
            package = parts[-1] == "__init__"
            if package:
                parts = parts[:-1]
            modules[".".join([prefix, *parts])] = (path, package)
    return modules


def _imports(name: str, path: Path, package: bool, modules: dict[str, tuple[Path, bool]]) -> set[str]:
    """The project modules that module `name` imports, anywhere in its file."""
    here = name if package else name.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names if alias.name in modules)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                parts = here.split(".")
                base = parts[: len(parts) - (node.level - 1)]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            for alias in node.names:
                # `from package import submodule` imports the submodule, `from module import name` the module.
                if f"{target}.{alias.name}" in modules:
                    found.add(f"{target}.{alias.name}")
                elif target in modules:
                    found.add(target)
    found.discard(name)
    return found


def import_graph() -> dict[str, set[str]]:
    modules = _modules()
    return {name: _imports(name, path, package, modules) for name, (path, package) in modules.items()}


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One cycle as a path `[a, b, ..., a]`, or None. Iterative depth-first search, in sorted order."""
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    for start in sorted(graph):
        if start in state:
            continue
        path = [start]
        stack = [iter(sorted(graph[start]))]
        state[start] = 1
        while stack:
            step = next(stack[-1], None)
            if step is None:
                state[path.pop()] = 2
                stack.pop()
            elif state.get(step) == 1:
                return [*path[path.index(step) :], step]
            elif step not in state:
                state[step] = 1
                path.append(step)
                stack.append(iter(sorted(graph[step])))
    return None


def test_the_graph_covers_every_package() -> None:
    graph = import_graph()
    assert "ascend_eval.jobs.execute" in graph and "ascend_eval.models.http" in graph
    assert "ascend_eval.kernels.label_softmax" in graph
    # Lazy (function-level) imports are edges too: the runner starts `execute` inside `Job.run`.
    assert "ascend_eval.jobs.execute" in graph["ascend_eval.jobs.runner"]


def test_find_cycle_reports_the_cycle() -> None:
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": set()}) == ["a", "b", "c", "a"]
    assert find_cycle({"a": {"b"}, "b": set()}) is None


def test_no_import_cycles() -> None:
    cycle = find_cycle(import_graph())
    assert cycle is None, "import cycle: " + " -> ".join(cycle or [])


def layer_of(module: str) -> int:
    """The module's layer, from the top: 0 for the rest of ascend_eval, then each of LAYERS in turn."""
    for i, layer in enumerate(LAYERS, 1):
        if module == layer or module.startswith(layer + "."):
            return i
    return 0


def upward_imports(graph: dict[str, set[str]]) -> list[str]:
    """The imports of the graph that go up the layering ascend_eval -> models -> kernels -> base."""
    return [
        f"{name} -> {target}"
        for name, targets in sorted(graph.items())
        for target in sorted(targets)
        if layer_of(target) < layer_of(name)
    ]


def test_layer_of_places_each_package_in_its_layer() -> None:
    assert layer_of("ascend_eval.config") == layer_of("ascend_eval") == 0
    assert layer_of("ascend_eval.models.weights.paths") == 1
    assert layer_of("ascend_eval.kernels") == 2
    assert layer_of("ascend_eval.base.paths") == 3
    assert layer_of("ascend_eval.baseline") == 0  # a name that only starts like the layer is not in it


def test_upward_imports_finds_each_import_up_the_layering() -> None:
    graph = {
        "ascend_eval.config": {"ascend_eval.models.errors", "ascend_eval.base.errors"},
        "ascend_eval.models.errors": {"ascend_eval.base.errors", "ascend_eval.kernels"},
        "ascend_eval.kernels": {"ascend_eval.models.base"},
        "ascend_eval.base.errors": {"ascend_eval.errors"},
        "ascend_eval.base.paths": {"ascend_eval.models.weights.paths", "ascend_eval.base.errors"},
    }
    assert upward_imports(graph) == [
        "ascend_eval.base.errors -> ascend_eval.errors",
        "ascend_eval.base.paths -> ascend_eval.models.weights.paths",
        "ascend_eval.kernels -> ascend_eval.models.base",
    ]


def test_the_base_layer_is_in_the_graph() -> None:
    graph = import_graph()
    assert {"ascend_eval.base.errors", "ascend_eval.base.paths"} <= set(graph)
    assert "ascend_eval.base.errors" in graph["ascend_eval.models.errors"]


def test_models_kernels_and_base_import_only_downwards() -> None:
    wrong = upward_imports(import_graph())
    assert not wrong, "imports against the layering ascend_eval -> models -> kernels -> base:\n" + "\n".join(
        wrong
    )


def package_of(module: str) -> str:
    """The package a module counts in: `ascend_eval.<package>` (a top-level module is its own), and one level
    deeper inside models and kernels (`ascend_eval.models.judge`), whose folders are packages of their own."""
    parts = module.split(".")
    return ".".join(parts[: 3 if module.startswith(LOWER) else 2])


def package_graph(graph: dict[str, set[str]]) -> dict[str, set[str]]:
    packages: dict[str, set[str]] = {}
    for name, targets in graph.items():
        edges = packages.setdefault(package_of(name), set())
        edges.update(package_of(t) for t in targets)
    for name, edges in packages.items():
        edges.discard(name)
    return packages


def test_package_of_groups_modules_by_their_package() -> None:
    assert package_of("ascend_eval.results.sink") == "ascend_eval.results"
    assert package_of("ascend_eval.api") == "ascend_eval.api"
    assert package_of("ascend_eval.models.judge.torch.decode") == "ascend_eval.models.judge"


def test_no_package_cycles() -> None:
    """Module cycles are not enough: two packages that import each other through different modules (the
    results folder's files calling the report, the report reading results) are one package in two
    folders. Each package imports only those below it."""
    cycle = find_cycle(package_graph(import_graph()))
    assert cycle is None, "package cycle: " + " -> ".join(cycle or [])


def architecture_order() -> list[str]:
    """The packages of docs/architecture.md's table, top to bottom, as package names (`cli/` ->
    `ascend_eval.cli`, `mxrag.py` -> `ascend_eval.mxrag`, `models/` -> `ascend_eval.models`)."""
    order: list[str] = []
    for line in (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8").splitlines():
        cells = line.split("|")
        if len(cells) < 4 or "`" not in cells[2]:
            continue
        for name in cells[2].split("`")[1::2]:
            if name.endswith("/") or name.endswith(".py"):
                order.append("ascend_eval." + name.removesuffix("/").removesuffix(".py"))
    return order


def test_the_architecture_page_lists_every_package_in_import_order() -> None:
    """docs/architecture.md says imports go one way down its table; this keeps that true."""
    order = architecture_order()
    rank = {name: i for i, name in enumerate(order)}

    def rank_of(package: str) -> int | None:
        top = package if not package.startswith(LOWER) else ".".join(package.split(".")[:2])
        return rank.get(top)

    folders = {
        f"ascend_eval.{p.name}" for p in (ROOT / "ascend_eval").iterdir() if (p / "__init__.py").is_file()
    }
    assert folders <= set(order), (
        f"packages missing from docs/architecture.md: {sorted(folders - set(order))}"
    )
    upwards = [
        f"{a} -> {b}"
        for a, targets in sorted(package_graph(import_graph()).items())
        for b in sorted(targets)
        if (ra := rank_of(a)) is not None and (rb := rank_of(b)) is not None and rb < ra
    ]
    assert not upwards, "imports up docs/architecture.md's table:\n" + "\n".join(upwards)
