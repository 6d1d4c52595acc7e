"""The errors the model layer raises.

They subclass the root errors of the bottom layer (`ascend_eval.base.errors`), which this module also
re-exports (`AscendEvalError`, `ConfigError`, `DataError`) so that the model runtimes import every error
they raise from here. Users import every error from `ascend_eval.errors`, which re-exports these: the same
classes, whichever module they are imported from.
"""

from __future__ import annotations

from ascend_eval.base.errors import AscendEvalError, ConfigError, DataError

__all__ = [
    "BACKEND_ERROR",
    "AscendEvalError",
    "BackendError",
    "ConfigError",
    "DataError",
    "MissingDependencyError",
]

BACKEND_ERROR = "backend_error"
"""How the NaN reason of a score starts when a backend failed one of its requests (after its retries)."""


class MissingDependencyError(AscendEvalError, ImportError):
    """An optional engine (torch, vllm, torch_npu, ...) is not installed. The message says what to install."""


class BackendError(AscendEvalError, RuntimeError):
    """A model runtime failed: it could not load, or a whole batch failed."""
