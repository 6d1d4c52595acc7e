"""pyproject.toml lists its packages by hand (models/ and kernels/ install as `ascend_eval.models` and
`ascend_eval.kernels`): a package missing from the list installs without it, which only a user of a built
wheel would find. This keeps the list and the folders equal."""

from __future__ import annotations

from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def package_folders(package_dir: dict[str, str]) -> set[str]:
    """Every package the mapped folders hold, by its installed name; a folder mapped under another
    package's name belongs to that mapping only."""
    found = set()
    for name, path in package_dir.items():
        for init in (ROOT / path).rglob("__init__.py"):
            dotted = ".".join((name, *init.parent.relative_to(ROOT / path).parts))
            inner = [other for other in package_dir if other.startswith(name + ".")]
            mapped_elsewhere = any(dotted == other or dotted.startswith(other + ".") for other in inner)
            if "__pycache__" not in dotted and not mapped_elsewhere:
                found.add(dotted)
    return found


def test_every_package_folder_is_listed_in_pyproject_and_nothing_else():
    tomllib = pytest.importorskip("tomllib")  # Python 3.11+
    setuptools = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["setuptools"]
    assert sorted(package_folders(setuptools["package-dir"])) == sorted(setuptools["packages"])


def test_a_plain_checkout_imports_models_and_kernels_from_beside_the_package(tmp_path):
    """Without the install's mapping (`-S`: no .pth file, so no editable finder), the checkout on the path
    finds `ascend_eval.models` and `ascend_eval.kernels` in the folders beside `ascend_eval/`."""
    import site
    import subprocess
    import sys

    code = (
        "import sys; sys.path[:0] = sys.argv[1:]\n"
        "import ascend_eval.config, ascend_eval.models.spec, ascend_eval.kernels\n"
        "print(ascend_eval.models.spec.__file__); print(ascend_eval.kernels.__file__)\n"
    )
    paths = [str(ROOT), *site.getsitepackages()]
    done = subprocess.run(
        [sys.executable, "-S", "-c", code, *paths], cwd=tmp_path, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == [str(ROOT / "models" / "spec.py"), str(ROOT / "kernels" / "__init__.py")]
