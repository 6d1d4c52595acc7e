"""Secrets by name: API keys and tokens that job specs refer to without containing them.

A secret NAME resolves, in this order, to
1. the environment variable `ASCEND_EVAL_SECRET_<NAME>` (upper-cased, '-' and '.' as '_'), or
2. the file `<cache root>/secrets/<NAME>`, written by `ascend-eval secrets set NAME` (folder 0700,
   file 0600).

Endpoint clients receive where the key is (the variable's name or the file's path), never the key: they
read it themselves when they connect (`EndpointConfig.api_key_env` / `api_key_file`), so no spec, status
file, log line or result of ours ever holds it. Only a Hugging Face token is read here, to hand it to
`huggingface_hub`.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path

from ascend_eval.jobs.spec import SECRET_NAME_PATTERN
from ascend_eval.models.checks import private_file
from ascend_eval.models.errors import ConfigError
from ascend_eval.models.weights.paths import cache_root

ENV_PREFIX = "ASCEND_EVAL_SECRET_"
# fullmatch, not match: Python's `$` also matches before a final newline, so "key\n" would pass (the
# spec's pydantic check, a Rust regex, already refuses it).
_NAME = re.compile(SECRET_NAME_PATTERN)


def secret_env_var(name: str) -> str:
    """The environment variable that holds secret `name`.

    >>> secret_env_var("judge-api-key")
    'ASCEND_EVAL_SECRET_JUDGE_API_KEY'
    """
    return ENV_PREFIX + re.sub(r"[-.]", "_", name).upper()


def check_secret_name(name: str) -> str:
    if not isinstance(name, str) or not _NAME.fullmatch(name):
        raise ConfigError(
            f"Secret name {name!r} is not valid: use letters, digits, '.', '_' and '-' (at most 128 "
            "characters, starting with a letter or digit), e.g. 'judge-api-key'."
        )
    return name


@dataclass(frozen=True)
class SecretRef:
    """Where a secret's value is: an environment variable or a private file. Holds no value."""

    name: str
    env_var: str | None = None
    file: Path | None = None

    @property
    def source(self) -> str:
        return f"environment variable {self.env_var}" if self.env_var else f"file {self.file}"

    def endpoint_kwargs(self) -> dict[str, str]:
        """The `EndpointConfig` arguments that make a client read this secret as its API key."""
        return {"api_key_env": self.env_var} if self.env_var else {"api_key_file": str(self.file)}

    def read(self) -> str:
        """The value. Only for libraries that take a value, not a location (a Hugging Face token)."""
        if self.env_var:
            value = os.environ.get(self.env_var, "")
        else:
            assert self.file is not None
            private_file(self.file, "Secret file")
            value = self.file.read_text(encoding="utf-8")
        value = value.strip()
        if not value:
            raise ConfigError(f"Secret {self.name!r} ({self.source}) is empty. Set it again.")
        return value


class SecretStore:
    """The secrets folder plus the `ASCEND_EVAL_SECRET_*` environment variables.

    Args:
        directory: the folder of secret files (default `<cache root>/secrets`).
    """

    def __init__(self, directory: str | Path | None = None) -> None:
        self.directory = Path(directory) if directory is not None else cache_root() / "secrets"

    def _folder(self) -> Path:
        """The folder, created private, and made private again if someone widened it."""
        self.directory.mkdir(mode=0o700, parents=True, exist_ok=True)
        if os.name == "posix" and self.directory.stat().st_mode & 0o077:
            os.chmod(self.directory, 0o700)
        return self.directory

    def resolve(self, name: str) -> SecretRef:
        """Where secret `name` is.

        Raises:
            ConfigError: no such secret (the message says both ways to provide it).
        """
        check_secret_name(name)
        env_var = secret_env_var(name)
        if os.environ.get(env_var, "").strip():
            return SecretRef(name, env_var=env_var)
        path = self.directory / name
        if path.is_file():
            private_file(path, "Secret file")
            return SecretRef(name, file=path)
        raise ConfigError(
            f"Secret {name!r} is not set. Run `ascend-eval secrets set {name}` (it asks for the value), "
            f"or export {env_var}=<value>. Secret names must match exactly."
        )

    def set(self, name: str, value: str) -> Path:
        """Store `value` under `name` in a file only its owner can read; replaces an existing one."""
        check_secret_name(name)
        value = value.strip()
        if not value:
            raise ConfigError(f"Secret {name!r}: the value is empty; nothing stored.")
        folder = self._folder()
        path = folder / name
        temp = folder / f".{name}.{os.getpid()}.tmp"
        # Created 0600 from the first byte: never a moment when another user could read it.
        fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as f:
                f.write(value + "\n")
            os.replace(temp, path)
        finally:
            temp.unlink(missing_ok=True)
        return path

    def delete(self, name: str) -> bool:
        """Remove the stored secret `name`; False when there was none. Environment variables stay."""
        check_secret_name(name)
        path = self.directory / name
        if not path.is_file():
            return False
        path.unlink()
        return True

    def list(self) -> list[tuple[str, str]]:
        """(name, where) of every stored secret and every `ASCEND_EVAL_SECRET_*` variable; no values."""
        out = []
        if self.directory.is_dir():
            out += [
                (p.name, "file")
                for p in sorted(self.directory.iterdir())
                if p.is_file() and _NAME.fullmatch(p.name)
            ]
        out += [(var, "environment") for var in sorted(os.environ) if var.startswith(ENV_PREFIX)]
        return out
