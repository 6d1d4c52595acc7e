"""Errors users catch, from one place.

The model layer's errors (`AscendEvalError`, the root; `ConfigError`, `DataError`, `MissingDependencyError`,
`BackendError`) are defined in `ascend_eval.models.errors`, the lowest layer that raises them, and
re-exported here; the errors of the request cache and of the run's output files are defined here, as only
the layers above `models/` raise them. Code in `ascend_eval/` imports its errors from this module.
"""

from ascend_eval.models.errors import (
    BACKEND_ERROR,
    AscendEvalError,
    BackendError,
    ConfigError,
    DataError,
    MissingDependencyError,
)

__all__ = [
    "BACKEND_ERROR",
    "AscendEvalError",
    "BackendError",
    "CacheError",
    "ConfigError",
    "DataError",
    "MissingDependencyError",
    "OutputError",
]


class CacheError(ConfigError):
    """The request cache file cannot be used: damaged, locked by another process, or read-only. Raised when
    the cache is opened, before any request is sent; the message names the file and how to go on."""


class OutputError(ConfigError):
    """A file of the run's output could not be written: the device holding it is full, over quota,
    read-only or failing. The message names the file and how to go on (free space, or another --out);
    no half-written file is left behind, and the answers received so far stay in the request cache."""
