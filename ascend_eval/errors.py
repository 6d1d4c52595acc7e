"""Errors users catch. Defined in `ascend_eval.models.errors` (the lowest layer that raises them)."""

from ascend_eval.models.errors import (
    AscendEvalError,
    BackendError,
    CacheError,
    ConfigError,
    DataError,
    MissingDependencyError,
    OutputError,
)

__all__ = [
    "AscendEvalError",
    "BackendError",
    "CacheError",
    "ConfigError",
    "DataError",
    "MissingDependencyError",
    "OutputError",
]
