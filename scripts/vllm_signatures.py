"""Extract the keyword arguments a vLLM release accepts, from its source, without importing or running it.

Our vLLM runtimes call `vllm.LLM(...)` (whose extra keywords become `EngineArgs` fields), `LLM.generate`,
`LLM.embed`, `LLM.score`, `SamplingParams`, `PoolingParams`, `StructuredOutputsParams` and
`RepetitionDetectionParams`. The release the Ascend row pins (`NPU_ROW["vllm"]` in
models/platforms/npu.py) cannot run here, so its source is read with `ast` and the names are written to
tests/models/vllm/signatures/vllm-VERSION.json, which tests/models/test_vllm_keywords.py checks our calls
against in CI (no network).

To regenerate, get the release's source from PyPI or GitHub and point this script at it:

    pip download --no-deps --no-binary :all: vllm==0.23.0    # or: git clone --branch v0.23.0 ...
    python scripts/vllm_signatures.py vllm-0.23.0.tar.gz

(`pip download` of the sdist builds its metadata, which needs torch and setuptools-rust in the build
environment; the tarball itself is all this script reads.)
"""

from __future__ import annotations

import argparse
import ast
import hashlib
import json
import sys
import tarfile
from pathlib import Path, PurePosixPath

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "tests" / "models" / "vllm" / "signatures"

CLASSES = {
    "EngineArgs": "vllm/engine/arg_utils.py",
    "SamplingParams": "vllm/sampling_params.py",
    "StructuredOutputsParams": "vllm/sampling_params.py",
    "RepetitionDetectionParams": "vllm/sampling_params.py",
    "PoolingParams": "vllm/pooling_params.py",
}
"""Classes whose fields (dataclass or msgspec struct) are their keyword arguments."""
LLM_FILE = "vllm/entrypoints/llm.py"
LLM_METHODS = ("__init__", "generate", "embed", "score")


class Source:
    """The Python files of a vLLM source tree, an sdist (.tar.gz) or a directory holding the package."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.files: dict[str, str] = {}
        if path.is_dir():
            for file in path.rglob("vllm/**/*.py"):
                rel = file.relative_to(path).as_posix()
                self.files[rel[rel.index("vllm/") :]] = file.read_text(encoding="utf-8")
        else:
            with tarfile.open(path) as tar:
                for member in tar.getmembers():
                    parts = PurePosixPath(member.name).parts
                    if member.isfile() and member.name.endswith(".py") and "vllm" in parts[1:2]:
                        rel = "/".join(parts[1:])
                        handle = tar.extractfile(member)
                        if handle is not None:
                            self.files[rel] = handle.read().decode("utf-8")

    def tree(self, rel: str) -> ast.Module:
        if rel not in self.files:
            raise SystemExit(f"{self.path} has no {rel}: not a vLLM source")
        return ast.parse(self.files[rel], filename=rel)

    def module_file(self, module: str, level: int, importer: str) -> str | None:
        """The file of `module` imported (with `level` dots) from the file `importer`."""
        if level:
            base = PurePosixPath(importer).parent
            for _ in range(level - 1):
                base = base.parent
            dotted = "/".join([*base.parts, *module.split(".")]) if module else base.as_posix()
        else:
            dotted = module.replace(".", "/")
        for candidate in (f"{dotted}.py", f"{dotted}/__init__.py"):
            if candidate in self.files:
                return candidate
        return None


def _class(tree: ast.Module, name: str) -> ast.ClassDef | None:
    return next((n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == name), None)


def _fields(node: ast.ClassDef) -> list[str]:
    """Annotated class-level names, ClassVars and private names left out: a dataclass's or a msgspec
    struct's fields."""
    out = []
    for item in node.body:
        if isinstance(item, ast.AnnAssign) and isinstance(item.target, ast.Name):
            if "ClassVar" in ast.unparse(item.annotation) or item.target.id.startswith("_"):
                continue
            out.append(item.target.id)
    return out


def _params(func: ast.FunctionDef) -> dict[str, object]:
    args = func.args
    names = [a.arg for a in [*args.posonlyargs, *args.args, *args.kwonlyargs] if a.arg not in ("self", "cls")]
    return {"params": names, "var_keyword": args.kwarg is not None}


def _methods(source: Source, rel: str, class_name: str, wanted: tuple[str, ...]) -> dict[str, dict]:
    """`wanted` methods of `class_name` in `rel`, looked up through its bases as Python would (the class
    itself first, then each base in order), following the file's imports to the bases' files."""
    tree = source.tree(rel)
    node = _class(tree, class_name)
    if node is None:
        return {}
    found: dict[str, dict] = {}
    for item in node.body:
        if (
            isinstance(item, ast.FunctionDef)
            and item.name in wanted
            and item.name not in found
            and not any(ast.unparse(d) == "overload" for d in item.decorator_list)
        ):
            found[item.name] = _params(item)
    imports = {
        alias.asname or alias.name: (n.module or "", n.level, alias.name)
        for n in tree.body
        if isinstance(n, ast.ImportFrom)
        for alias in n.names
    }
    for base in node.bases:
        name = ast.unparse(base)
        if name in imports:
            module, level, original = imports[name]
            base_file = source.module_file(module, level, rel)
        else:
            base_file, original = rel, name
        if base_file is None:
            continue
        for method, params in _methods(source, base_file, original, wanted).items():
            found.setdefault(method, params)
    return found


def extract(source: Source) -> dict[str, dict]:
    """The keyword table of a vLLM source: every class's fields and the LLM methods' parameters."""
    table: dict[str, dict] = {}
    for name, rel in CLASSES.items():
        node = _class(source.tree(rel), name)
        if node is None:
            raise SystemExit(f"{rel} defines no class {name}")
        table[name] = {"params": _fields(node), "var_keyword": False}
    for method, params in _methods(source, LLM_FILE, "LLM", LLM_METHODS).items():
        table["LLM" if method == "__init__" else f"LLM.{method}"] = params
    missing = [m for m in LLM_METHODS if ("LLM" if m == "__init__" else f"LLM.{m}") not in table]
    if missing:
        raise SystemExit(f"LLM has no {missing} in {source.path}")
    return table


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("source", type=Path, help="vLLM sdist (.tar.gz) or source directory")
    parser.add_argument("--version", help="the release (default: read from the sdist's name)")
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args(argv)
    version = args.version or args.source.name.removeprefix("vllm-").removesuffix(".tar.gz")
    digest = hashlib.sha256(args.source.read_bytes()).hexdigest() if args.source.is_file() else None
    document = {
        "vllm": version,
        "source": args.source.name,
        "sha256": digest,
        "generated_by": "scripts/vllm_signatures.py",
        "signatures": extract(Source(args.source)),
    }
    args.out.mkdir(parents=True, exist_ok=True)
    target = args.out / f"vllm-{version}.json"
    target.write_text(json.dumps(document, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    print(f"wrote {target.relative_to(ROOT) if target.is_relative_to(ROOT) else target}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
