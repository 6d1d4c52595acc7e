"""The root of the error hierarchy, and the two errors every layer raises: a bad setting, bad data.

The errors of one layer are defined in it and subclass these: the model runtimes'
(`MissingDependencyError`, `BackendError`) in `ascend_eval.models.errors`, the request cache's and the
output files' in `ascend_eval.errors`, the module users import every error from.
"""

from __future__ import annotations


class AscendEvalError(Exception):
    """Root of every error this library raises on purpose."""


class ConfigError(AscendEvalError, ValueError):
    """A setting is invalid or two settings conflict. The message names the setting and the fix."""


class DataError(AscendEvalError, ValueError):
    """The dataset cannot be evaluated as given. The message names the sample, the column and the fix."""
