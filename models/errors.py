"""The error hierarchy shared by every layer.

It lives in the lowest layer that raises errors (`ascend_eval.models`) so that imports keep flowing one
way (`ascend_eval` -> `models` -> `kernels`); `ascend_eval.errors` re-exports it for users.
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


class CacheError(ConfigError):
    """The request cache file cannot be used: damaged, locked by another process, or read-only. Raised when
    the cache is opened, before any request is sent; the message names the file and how to go on."""


class OutputError(ConfigError):
    """A file of the run's output could not be written: the device holding it is full, over quota,
    read-only or failing. The message names the file and how to go on (free space, or another --out);
    no half-written file is left behind, and the answers received so far stay in the request cache."""
