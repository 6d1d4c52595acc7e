"""`private_file`: the one check for files that hold secrets (api_key_file and the job secrets store)."""

from __future__ import annotations

import os

import pytest

from ascend_eval.models.checks import private_file
from ascend_eval.models.errors import ConfigError

posix = pytest.mark.skipif(os.name != "posix", reason="file modes are POSIX")


@posix
def test_a_private_regular_file_passes_and_home_is_expanded(tmp_path, monkeypatch):
    monkeypatch.setenv("HOME", str(tmp_path))
    key = tmp_path / "key"
    key.write_text("k")
    key.chmod(0o600)
    assert private_file("~/key", "api_key_file") == key


@posix
@pytest.mark.parametrize("mode", [0o640, 0o604, 0o644, 0o660])
def test_group_or_other_access_is_refused_with_the_fix(tmp_path, mode):
    key = tmp_path / "key"
    key.write_text("k")
    key.chmod(mode)
    with pytest.raises(ConfigError, match=rf"Secret file .*mode {mode:04o}.*Run: chmod 600 {key}"):
        private_file(key, "Secret file")


def test_missing_and_non_regular_files_are_refused(tmp_path):
    with pytest.raises(ConfigError, match=r"api_key_file '.*nope' cannot be read .*Check the path"):
        private_file(tmp_path / "nope", "api_key_file")
    with pytest.raises(ConfigError, match="is not a regular file"):
        private_file(tmp_path, "api_key_file")
