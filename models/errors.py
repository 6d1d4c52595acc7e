"""The errors the model layer raises, and the root of the hierarchy.

They live in the lowest layer that raises them (`ascend_eval.models`) so that imports keep flowing one
way (`ascend_eval` -> `models` -> `kernels`). The errors only the layers above raise (the request cache's,
the output files') are defined in `ascend_eval.errors`, which re-exports these: code outside `models/`
imports its errors from there.
"""

from __future__ import annotations

BACKEND_ERROR = "backend_error"
"""How the NaN reason of a score starts when a backend failed one of its requests (after its retries)."""


class AscendEvalError(Exception):
    """Root of every error this library raises on purpose."""


class ConfigError(AscendEvalError, ValueError):
    """A setting is invalid or two settings conflict. The message names the setting and the fix."""


class DataError(AscendEvalError, ValueError):
    """The dataset cannot be evaluated as given. The message names the sample, the column and the fix."""


class MissingDependencyError(AscendEvalError, ImportError):
    """An optional engine (torch, vllm, torch_npu, ...) is not installed. The message says what to install."""


class BackendError(AscendEvalError, RuntimeError):
    """A model runtime failed: it could not load, or a whole batch failed."""
