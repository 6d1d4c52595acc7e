"""Secrets by name: a private folder of 0600 files, or ASCEND_EVAL_SECRET_* variables; values are never
printed, and `secrets set` never takes the value from the command line."""

from __future__ import annotations

import io
import os
import stat

import pytest

from ascend_eval.cli.main import main
from ascend_eval.jobs.secrets import SecretStore, secret_env_var
from ascend_eval.models.errors import ConfigError

VALUE = "sk-live-0123456789abcdef"


def _mode(path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_set_resolve_list_delete(secrets):
    path = secrets.set("judge-api-key", VALUE + "\n")
    assert _mode(path) == 0o600 and _mode(secrets.directory) == 0o700
    ref = secrets.resolve("judge-api-key")
    assert ref.file == path and ref.endpoint_kwargs() == {"api_key_file": str(path)}
    assert ref.read() == VALUE  # the trailing newline of `echo ... |` is not part of the key
    assert VALUE not in repr(ref)
    assert ("judge-api-key", "file") in secrets.list()
    assert secrets.delete("judge-api-key") and not secrets.delete("judge-api-key")
    with pytest.raises(ConfigError, match=r"Secret 'judge-api-key' is not set.*secrets set judge-api-key"):
        secrets.resolve("judge-api-key")


def test_an_environment_variable_wins_and_is_passed_by_name(secrets, monkeypatch):
    secrets.set("model-api-key", "from-file")
    monkeypatch.setenv("ASCEND_EVAL_SECRET_MODEL_API_KEY", VALUE)
    ref = secrets.resolve("model-api-key")
    assert ref.endpoint_kwargs() == {"api_key_env": "ASCEND_EVAL_SECRET_MODEL_API_KEY"}
    assert ref.read() == VALUE
    assert secret_env_var("hf.token") == "ASCEND_EVAL_SECRET_HF_TOKEN"


def test_a_widened_secret_file_is_refused(secrets):
    path = secrets.set("hf-token", VALUE)
    os.chmod(path, 0o644)
    with pytest.raises(ConfigError, match="chmod 600"):
        secrets.resolve("hf-token")


def test_a_widened_folder_is_made_private_again(tmp_path):
    folder = tmp_path / "s"
    folder.mkdir(mode=0o755)
    SecretStore(folder).set("a", "b")
    assert _mode(folder) == 0o700


@pytest.mark.parametrize("name", ["", "../escape", "with space", ".hidden", "a/b"])
def test_invalid_names(secrets, name):
    with pytest.raises(ConfigError, match="not valid"):
        secrets.set(name, VALUE)


def test_cli_reads_the_value_from_stdin_and_never_prints_it(tmp_path, monkeypatch, capsys):
    folder = tmp_path / "cli-secrets"
    monkeypatch.setattr("sys.stdin", io.StringIO(VALUE + "\n"))
    assert main(["secrets", "--secrets-dir", str(folder), "set", "judge-api-key"]) == 0
    assert main(["secrets", "--secrets-dir", str(folder), "list"]) == 0
    out = capsys.readouterr().out
    assert "judge-api-key" in out and VALUE not in out
    assert (folder / "judge-api-key").read_text().strip() == VALUE
    with pytest.raises(SystemExit):  # no way to pass the value as an argument
        main(["secrets", "--secrets-dir", str(folder), "set", "judge-api-key", VALUE])
    assert main(["secrets", "--secrets-dir", str(folder), "delete", "judge-api-key"]) == 0
    assert main(["secrets", "--secrets-dir", str(folder), "delete", "judge-api-key"]) == 2
    assert not (folder / "judge-api-key").exists()


def test_secret_files_and_api_key_files_share_one_check(secrets, tmp_path):
    from ascend_eval.models.checks import private_file
    from ascend_eval.models.http import EndpointConfig

    path = secrets.set("judge-api-key", VALUE)
    os.chmod(path, 0o640)
    with pytest.raises(ConfigError) as from_store:
        secrets.resolve("judge-api-key")
    with pytest.raises(ConfigError) as from_endpoint:
        EndpointConfig(url="http://127.0.0.1:1", model="m", api_key_file=str(path))
    with pytest.raises(ConfigError) as direct:
        private_file(path, "Secret file")
    assert str(from_store.value) == str(direct.value)
    assert str(from_endpoint.value) == str(direct.value).replace("Secret file", "api_key_file")
