"""Validation shared by the runtimes' config dataclasses (called from their `__post_init__`)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ascend_eval.models.errors import ConfigError


def positive_int(name: str, value: Any, *, optional: bool = False) -> None:
    """Raise ConfigError unless `value` is an int >= 1 (or None when `optional`); bools are refused.

    >>> positive_int("batch_size", 8)
    >>> positive_int("max_length", None, optional=True)
    >>> positive_int("batch_size", 0)
    Traceback (most recent call last):
    ...
    ascend_eval.models.errors.ConfigError: batch_size must be an integer >= 1, got 0.
    """
    if optional and value is None:
        return
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        suffix = " or None" if optional else ""
        raise ConfigError(f"{name} must be an integer >= 1{suffix}, got {value!r}.")


def model_path(value: Any) -> Path:
    """The model argument as a Path; raise ConfigError unless it is a non-empty str or Path."""
    if not isinstance(value, (str, Path)) or not str(value):
        raise ConfigError(f"model must be a local directory path, got {value!r}.")
    return Path(value)


def device_spec(value: Any) -> None:
    """Raise ConfigError unless `value` is None or a string (the device seam parses it)."""
    if value is not None and not isinstance(value, str):
        raise ConfigError(f"device must be a string such as 'cpu' or 'npu:0', or None; got {value!r}.")
