"""Fixtures for the weight-conversion tests."""

from pathlib import Path

import pytest


@pytest.fixture(autouse=True)
def _private_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Each test caches into its own folder, never the user's cache."""
    monkeypatch.setenv("ASCEND_EVAL_HOME", str(tmp_path / "ascend-eval-home"))
