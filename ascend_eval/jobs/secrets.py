"""Secrets by name: API keys and tokens that job specs refer to without containing them.

A secret NAME resolves, in this order, to
1. the environment variable `ASCEND_EVAL_SECRET_<NAME>` (upper-cased, '-' and '.' as '_'), or
2. the file `<cache root>/secrets/<NAME>`, written by `ascend-eval secrets set NAME` (folder 0700,
   file 0600).

Endpoint clients receive where the key is (the variable's name or the file's path), never the key: they
read it themselves when they connect (`EndpointConfig.api_key_env` / `api_key_file`), so no spec, status
file, log line or result of ours ever holds it. Only a Hugging Face token is read here, to hand it to
`huggingface_hub`.

A secret is sent only to the endpoints it is bound to, as origins (`scheme://host:port`): otherwise
whoever may write a job spec (a client of `ascend-eval serve`) could point a judge URL at a server of
their own and receive any stored key as `Authorization: Bearer ...`. A job that would send a secret
elsewhere fails before any request, naming the secret, the URL and how to bind it. The origins are
* for a stored secret: those it was stored for (`ascend-eval secrets set NAME --endpoint URL`,
  `POST /v1/secrets` with `endpoints`, the endpoint a job body's `api_key` came with), kept in
  `<secrets folder>/.endpoints/NAME`, plus those of the operator's `ASCEND_EVAL_ENDPOINTS_<NAME>`;
* for an `ASCEND_EVAL_SECRET_<NAME>` variable: only those of `ASCEND_EVAL_ENDPOINTS_<NAME>`
  (comma-separated URLs or origins). Without it the variable's value is sent nowhere: the environment
  is the operator's, and a stored binding (which a REST client can write) never widens it.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

from ascend_eval.base.paths import cache_root
from ascend_eval.errors import ConfigError
from ascend_eval.jobs.spec import SECRET_NAME_PATTERN, JobSpec
from ascend_eval.models.checks import private_file
from ascend_eval.models.http import is_url

ENV_PREFIX = "ASCEND_EVAL_SECRET_"
ENDPOINTS_PREFIX = "ASCEND_EVAL_ENDPOINTS_"
"""`ASCEND_EVAL_ENDPOINTS_<NAME>`: the operator's allow-list of origins for secret NAME. Not under
`ENV_PREFIX`, so that no secret name can resolve to an allow-list variable."""
BINDINGS = ".endpoints"
"""The folder of the secrets folder that holds each stored secret's origins (no secret name starts with
'.', so it is never taken for a secret)."""
# A host as every URL parser reads it alike: a DNS name, IPv4, or a bracketed IPv6 address, then an
# optional port. Anything else ('\\', '@', '%', spaces) could be read as another host by the client.
_NETLOC = re.compile(
    r"(?P<host>[A-Za-z0-9](?:[A-Za-z0-9.-]*[A-Za-z0-9])?|\[[0-9A-Fa-f:.]+\])(?::(?P<port>[0-9]{1,5}))?"
)
# fullmatch, not match: Python's `$` also matches before a final newline, so "key\n" would pass (the
# spec's pydantic check, a Rust regex, already refuses it).
_NAME = re.compile(SECRET_NAME_PATTERN)


def secret_env_var(name: str) -> str:
    """The environment variable that holds secret `name`.

    >>> secret_env_var("judge-api-key")
    'ASCEND_EVAL_SECRET_JUDGE_API_KEY'
    """
    return ENV_PREFIX + re.sub(r"[-.]", "_", name).upper()


def secret_endpoints_var(name: str) -> str:
    """The environment variable that lists the origins secret `name` may be sent to.

    >>> secret_endpoints_var("judge-api-key")
    'ASCEND_EVAL_ENDPOINTS_JUDGE_API_KEY'
    """
    return ENDPOINTS_PREFIX + re.sub(r"[-.]", "_", name).upper()


def endpoint_origin(url: str, what: str = "endpoint") -> str:
    """The origin `scheme://host:port` of an http(s) URL, host in lower case and the port written out:
    what a secret is bound to, and what a request's destination is compared with.

    >>> endpoint_origin("https://Integrate.API.nvidia.com/v1/chat/completions")
    'https://integrate.api.nvidia.com:443'
    >>> endpoint_origin("http://127.0.0.1:8000")
    'http://127.0.0.1:8000'

    Raises:
        ConfigError: not an http(s) URL with a plain host (no user:password@, no odd characters).
    """
    try:
        parts = urlsplit(url.strip())
    except (AttributeError, ValueError):  # not a string; "http://[::1" and the like
        parts = None
    scheme = parts.scheme.lower() if parts is not None else ""
    match = _NETLOC.fullmatch(parts.netloc) if parts is not None else None
    if match is None or scheme not in ("http", "https"):
        raise ConfigError(
            f"The {what} {url!r} is not an http(s) URL with a plain host and optional port, such as "
            "'https://integrate.api.nvidia.com' or 'http://127.0.0.1:8000/v1'."
        )
    port = int(match["port"] or (443 if scheme == "https" else 80))
    if not 0 < port < 65536:
        raise ConfigError(f"The {what} {url!r} has port {port}; a port is 1 to 65535.")
    return f"{scheme}://{match['host'].lower()}:{port}"


def origins(urls: Iterable[str], what: str) -> tuple[str, ...]:
    """The distinct origins of `urls`, sorted (see `endpoint_origin`)."""
    if isinstance(urls, str):
        urls = [urls]
    return tuple(sorted({endpoint_origin(url, what) for url in urls}))


def hub_endpoint() -> str:
    """Where `huggingface_hub` sends a token: its ENDPOINT (`HF_ENDPOINT`, default the public hub)."""
    try:
        from huggingface_hub.constants import ENDPOINT
    except ImportError:
        return os.environ.get("HF_ENDPOINT") or "https://huggingface.co"
    return str(ENDPOINT)


def endpoint_secrets(spec: JobSpec) -> list[tuple[str, str, str]]:
    """`(field, url, secret name)` for every secret the spec would send, and where: each endpoint model's
    `api_key_secret` (local models are sent nothing) and a Hugging Face `token_secret` (sent to the hub)."""
    out = [
        (f"{field}.url", ref.url, ref.api_key_secret)
        for field, ref in spec.models()
        if ref.api_key_secret and is_url(ref.url)
    ]
    storage = spec.dataset.storage if not isinstance(spec.dataset, str) else None
    if storage is not None and storage.token_secret:
        hub = "dataset.storage.token_secret (sent to the Hugging Face hub)"
        out.append((hub, hub_endpoint(), storage.token_secret))
    return out


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
    endpoints: tuple[str, ...] = ()
    """The origins the value may be sent to (see the module docstring)."""

    @property
    def source(self) -> str:
        return f"environment variable {self.env_var}" if self.env_var else f"file {self.file}"

    def check_endpoint(self, url: str, field: str) -> SecretRef:
        """This ref, when its value may be sent to `url` (the value of spec field `field`).

        Raises:
            ConfigError: `url`'s origin is not one the secret is bound to; the message names the secret,
                the URL, the origins it may go to, and how to bind it to this one.
        """
        origin = endpoint_origin(url, field)
        if origin in self.endpoints:
            return self
        bound = ", ".join(self.endpoints) or "no endpoint"
        allow = secret_endpoints_var(self.name)
        if self.env_var:
            fix = f"export {allow}={origin} (comma-separated origins) where the job runs"
        else:
            fix = (
                f"store it for that endpoint: `ascend-eval secrets set {self.name} --endpoint {origin}` "
                f'(or POST /v1/secrets with "endpoints": ["{origin}"]), or export {allow}={origin} where the '
                "job runs"
            )
        raise ConfigError(
            f"Secret {self.name!r} ({self.source}) may not be sent to {url!r} ({field}): it is bound to "
            f"{bound}. A secret is sent only to the endpoints it was stored for. If {origin} should receive "
            f"it, {fix}."
        )

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
        """Where secret `name` is, and the origins it may be sent to.

        Raises:
            ConfigError: no such secret (the message says both ways to provide it), or an allow-list
                variable or binding file that cannot be read.
        """
        check_secret_name(name)
        env_var = secret_env_var(name)
        allowed = _allow_list(name)
        if os.environ.get(env_var, "").strip():
            return SecretRef(name, env_var=env_var, endpoints=allowed)
        path = self.directory / name
        if path.is_file():
            private_file(path, "Secret file")
            return SecretRef(name, file=path, endpoints=tuple(sorted({*allowed, *self.endpoints(name)})))
        raise ConfigError(
            f"Secret {name!r} is not set. Run `ascend-eval secrets set {name}` (it asks for the value), "
            f"or export {env_var}=<value>. Secret names must match exactly."
        )

    def for_endpoint(self, name: str, url: str, field: str) -> SecretRef:
        """Where secret `name` is, when it may be sent to `url` (spec field `field`).

        Raises:
            ConfigError: the secret is not set, or not bound to `url`'s origin (`SecretRef.check_endpoint`).
        """
        return self.resolve(name).check_endpoint(url, field)

    def endpoints(self, name: str) -> tuple[str, ...]:
        """The origins stored secret `name` was stored for; () for none."""
        check_secret_name(name)
        path = self.directory / BINDINGS / name
        if not path.is_file():
            return ()
        private_file(path, "Secret binding file")
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
            return origins(data, f"origin in {path}")
        except (ValueError, TypeError, ConfigError):
            raise ConfigError(
                f"The binding file {path} of secret {name!r} is damaged. Set the secret again: "
                f"`ascend-eval secrets set {name} --endpoint URL`."
            ) from None

    def set(self, name: str, value: str, endpoints: Iterable[str] = ()) -> Path:
        """Store `value` under `name` in a file only its owner can read, bound to the origins of
        `endpoints` (none: sent nowhere); replaces an existing secret and its binding.

        Raises:
            ConfigError: an invalid name, an empty value, or an endpoint that is not an http(s) URL.
        """
        check_secret_name(name)
        value = value.strip()
        if not value:
            raise ConfigError(f"Secret {name!r}: the value is empty; nothing stored.")
        bound = origins(endpoints, f"endpoint of secret {name!r}")
        folder = self._folder()
        binding = folder / BINDINGS / name
        # Unbound first, bound last: no moment pairs the old value with the new origins, or the new value
        # with the old ones (an overwrite by someone who may name other origins).
        binding.unlink(missing_ok=True)
        path = folder / name
        _write_private(folder, name, value + "\n")
        if bound:
            (folder / BINDINGS).mkdir(mode=0o700, exist_ok=True)
            _write_private(folder / BINDINGS, name, json.dumps(list(bound)) + "\n")
        return path

    def delete(self, name: str) -> bool:
        """Remove the stored secret `name` and its binding; False when there was none. Environment
        variables stay."""
        check_secret_name(name)
        path = self.directory / name
        (self.directory / BINDINGS / name).unlink(missing_ok=True)
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


def check_spec_secrets(spec: JobSpec, store: SecretStore, *, skip: Iterable[str] = ()) -> None:
    """Refuse a spec that would send a secret to an endpoint it is not bound to, before anything runs.

    Secrets that are not set (yet) and those in `skip` are left out: a missing secret fails where it is
    used, with its own message, and the endpoint check is made again there.

    Raises:
        ConfigError: the first secret that may not go where the spec sends it (`SecretRef.check_endpoint`).
    """
    skipped = set(skip)
    for field, url, name in endpoint_secrets(spec):
        if name in skipped:
            continue
        try:
            ref = store.resolve(name)
        except ConfigError:
            continue  # not set: reported where it is used
        ref.check_endpoint(url, field)


def _allow_list(name: str) -> tuple[str, ...]:
    """The origins of `ASCEND_EVAL_ENDPOINTS_<NAME>`, the operator's allow-list for secret `name`."""
    var = secret_endpoints_var(name)
    entries = [e for e in re.split(r"[,\s]+", os.environ.get(var, "")) if e]
    return origins(entries, f"entry of {var}")


def _write_private(folder: Path, name: str, text: str) -> None:
    """Replace `folder/name` with `text` in one step, the file 0600 from its first byte."""
    temp = folder / f".{name}.{os.getpid()}.tmp"
    fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
        os.replace(temp, folder / name)
    finally:
        temp.unlink(missing_ok=True)
