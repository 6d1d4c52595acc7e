"""The bottom layer, `ascend_eval.base`: the root errors and the cache folder, shared by every layer.

Each error is one class whichever module it is imported from (users import from `ascend_eval.errors`;
code that imported from `ascend_eval.models.errors` or `models.weights.paths` keeps working), and the
layer loads nothing else of the project.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import ascend_eval.errors as public
import ascend_eval.models.errors as model_errors
import ascend_eval.models.weights.paths as weight_paths
from ascend_eval.base import errors as base_errors
from ascend_eval.base import paths as base_paths


def test_each_error_is_one_class_whichever_module_it_comes_from() -> None:
    for name in ("AscendEvalError", "ConfigError", "DataError"):
        assert getattr(public, name) is getattr(model_errors, name) is getattr(base_errors, name)
    for name in ("MissingDependencyError", "BackendError", "BACKEND_ERROR"):
        assert getattr(public, name) is getattr(model_errors, name)
    assert set(public.__all__) >= set(model_errors.__all__)


def test_the_model_and_output_errors_subclass_the_root_ones() -> None:
    assert issubclass(model_errors.MissingDependencyError, (base_errors.AscendEvalError, ImportError))
    assert issubclass(model_errors.BackendError, (base_errors.AscendEvalError, RuntimeError))
    assert issubclass(public.CacheError, base_errors.ConfigError)
    assert issubclass(public.OutputError, base_errors.ConfigError)
    assert issubclass(base_errors.DataError, (base_errors.AscendEvalError, ValueError))


def test_the_cache_folder_is_the_environment_variable_else_the_xdg_cache(tmp_path, monkeypatch) -> None:
    monkeypatch.setenv(base_paths.CACHE_ENV, str(tmp_path / "home"))
    assert base_paths.cache_root() == tmp_path / "home"
    assert (tmp_path / "home").is_dir()
    monkeypatch.delenv(base_paths.CACHE_ENV)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert base_paths.cache_root() == tmp_path / "xdg" / "ascend-eval"


def test_converted_checkpoints_go_under_the_cache_folder(tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("ASCEND_EVAL_HOME", str(tmp_path))
    assert weight_paths.cache_root is base_paths.cache_root
    assert weight_paths.CACHE_ENV == base_paths.CACHE_ENV == "ASCEND_EVAL_HOME"
    assert weight_paths.checkpoints_root() == tmp_path / "checkpoints"


def test_the_base_layer_loads_nothing_else_of_the_project() -> None:
    code = (
        "import sys\n"
        "import ascend_eval.base.errors, ascend_eval.base.paths\n"
        "print(sorted(m for m in sys.modules if m.startswith('ascend_eval') or m == 'numpy'))\n"
    )
    root = Path(__file__).resolve().parents[2]
    done = subprocess.run([sys.executable, "-c", code], cwd=root, capture_output=True, text=True, check=True)
    assert ast.literal_eval(done.stdout) == [
        "ascend_eval",
        "ascend_eval.base",
        "ascend_eval.base.errors",
        "ascend_eval.base.paths",
    ]
