"""pyproject.toml lists its packages by hand (models/ and kernels/ install as `ascend_eval.models` and
`ascend_eval.kernels`): a package missing from the list installs without it, which only a user of a built
wheel would find. This keeps the list and the folders equal: every folder that holds files is a package,
with an `__init__.py` or without (the data folders, which Python imports as namespace packages and
setuptools warns about when they are not listed), and each data folder's files are its package data."""

from __future__ import annotations

from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def package_folders(package_dir: dict[str, str]) -> dict[str, Path]:
    """Every package the mapped folders hold (each folder holding a file), by its installed name, with its
    folder; a folder mapped under another package's name belongs to that mapping only."""
    found = {}
    for name, path in package_dir.items():
        for file in (ROOT / path).rglob("*"):
            if not file.is_file() or "__pycache__" in file.parts:
                continue
            dotted = ".".join((name, *file.parent.relative_to(ROOT / path).parts))
            inner = [other for other in package_dir if other.startswith(name + ".")]
            mapped_elsewhere = any(dotted == other or dotted.startswith(other + ".") for other in inner)
            if not mapped_elsewhere:
                found[dotted] = file.parent
    return found


def setuptools_table() -> dict:
    tomllib = pytest.importorskip("tomllib")  # Python 3.11+
    return tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["setuptools"]


def test_every_package_folder_is_listed_in_pyproject_and_nothing_else():
    setuptools = setuptools_table()
    assert sorted(package_folders(setuptools["package-dir"])) == sorted(setuptools["packages"])


def test_every_file_of_a_data_folder_ships_as_its_package_data():
    setuptools = setuptools_table()
    data = {
        name: folder
        for name, folder in package_folders(setuptools["package-dir"]).items()
        if not (folder / "__init__.py").is_file()
    }
    assert "ascend_eval.data.builtin" in data
    unshipped = [
        str(file.relative_to(ROOT))
        for name, folder in sorted(data.items())
        for file in sorted(folder.iterdir())
        if file.is_file() and not any(file.match(p) for p in setuptools["package-data"].get(name, []))
    ]
    assert not unshipped, f"files missing from pyproject's package-data: {unshipped}"


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


def test_a_checkout_takes_models_and_kernels_from_itself_over_another_clones_editable_install(tmp_path):
    """An environment with another clone installed in editable mode has a finder that maps
    `ascend_eval.models` to that clone's folder; the package imported from this checkout still takes its
    models from beside it, never a mix of two clones."""
    import subprocess
    import sys

    other = tmp_path / "other" / "models"
    other.mkdir(parents=True)
    (other / "__init__.py").write_text("raise ImportError('the other clone')\n", encoding="utf-8")
    code = (
        "import importlib.util, sys\n"
        "class OtherClone:\n"
        "    def find_spec(self, fullname, path=None, target=None):\n"
        "        if fullname != 'ascend_eval.models':\n"
        "            return None\n"
        "        return importlib.util.spec_from_file_location(\n"
        "            fullname, sys.argv[2], submodule_search_locations=[sys.argv[2].rpartition('/')[0]])\n"
        "sys.meta_path.insert(0, OtherClone())\n"
        "sys.path.insert(0, sys.argv[1])\n"
        "import ascend_eval.models.spec\n"
        "print(ascend_eval.models.spec.__file__)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code, str(ROOT), str(other / "__init__.py")],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == [str(ROOT / "models" / "spec.py")]
