"""Errors users catch, from one place.

The root errors every layer raises (`AscendEvalError`, the root; `ConfigError`, `DataError`) are defined
in the bottom layer, `ascend_eval.base.errors`; the model layer's (`MissingDependencyError`,
`BackendError`) in `ascend_eval.models.errors`; both are re-exported here. The errors of the request cache
and of the run's output files are defined here, as only the layers above `models/` raise them. Code in
`ascend_eval/` imports its errors from this module.
"""

from ascend_eval.base.errors import AscendEvalError, ConfigError, DataError
from ascend_eval.models.errors import BACKEND_ERROR, BackendError, MissingDependencyError

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
