"""`ascend-eval serve`: the NeMo Evaluator jobs API on this machine (127.0.0.1 unless told otherwise)."""

from __future__ import annotations

import argparse
import contextlib
import math
import os
import sys
from pathlib import Path
from typing import Any

from ascend_eval.errors import ConfigError, MissingDependencyError

TOKEN_ENV = "ASCEND_EVAL_SERVE_TOKEN"
TOKEN_SECRET = "serve-token"


def resolve_token(secrets_dir: Path | None, secret: str) -> tuple[str, str | None]:
    """The bearer token: `$ASCEND_EVAL_SERVE_TOKEN`, else the secret `secret`; and the secret's name
    when it came from one.

    Raises:
        ConfigError: neither is set (the message says how to set either).
    """
    value = os.environ.get(TOKEN_ENV, "").strip()
    if value:
        return _plain_token(value, f"${TOKEN_ENV}"), None
    from ascend_eval.jobs import SecretStore

    try:
        value = SecretStore(secrets_dir).resolve(secret).read()
    except ConfigError:
        raise ConfigError(
            f"ascend-eval serve needs a bearer token that clients send: store one with "
            f"`ascend-eval secrets set {secret}` (it asks for the value), or export {TOKEN_ENV}=<token>."
        ) from None
    return _plain_token(value, f"the secret {secret!r}"), secret


def _plain_token(token: str, where: str) -> str:
    """`token` when it is printable ASCII without spaces. An HTTP header carries other characters only as
    bytes that clients encode differently (UTF-8, latin-1), so a token with `ä` in it would let in the
    one encoding the server happens to compare against, and shut out the other.

    Raises:
        ConfigError: naming where the token came from (never the token) and how to make a good one.
    """
    if all("!" <= c <= "~" for c in token):
        return token
    raise ConfigError(
        f"The bearer token in {where} holds a character other than printable ASCII (a letter such as 'ä', "
        "a space or a control character), which HTTP clients do not send alike. Use letters, digits and "
        "punctuation only, e.g. python -c 'import secrets; print(secrets.token_urlsafe(32))'."
    )


def data_dirs(given: list[Path] | None) -> tuple[Path, ...]:
    """The folders the server's jobs may read local files from: `--data-dir` (repeatable), else
    `$ASCEND_EVAL_DATA_DIRS`, else `<cache root>/data` (created). Exported as `ASCEND_EVAL_DATA_DIRS`, so
    that each job's own process enforces them too, when it reads.

    Raises:
        ConfigError: a folder that does not exist.
    """
    from ascend_eval.base.paths import cache_root
    from ascend_eval.jobs.datasets import DATA_DIRS_ENV

    if given:
        dirs = tuple(given)
    elif os.environ.get(DATA_DIRS_ENV, "").strip():
        dirs = tuple(Path(d) for d in os.environ[DATA_DIRS_ENV].split(os.pathsep) if d.strip())
    else:
        default = cache_root() / "data"
        default.mkdir(parents=True, exist_ok=True)
        dirs = (default,)
    dirs = tuple(d.expanduser().absolute() for d in dirs)
    missing = [str(d) for d in dirs if not d.is_dir()]
    if missing:
        raise ConfigError(f"--data-dir {missing[0]!r} is not a folder. Create it, or pass another one.")
    os.environ[DATA_DIRS_ENV] = os.pathsep.join(map(str, dirs))
    return dirs


def _serve(args: argparse.Namespace) -> int:
    try:
        import uvicorn

        from ascend_eval.serve.app import create_app
        from ascend_eval.serve.connections import uvicorn_settings
        from ascend_eval.serve.service import Settings
    except ModuleNotFoundError as e:
        raise MissingDependencyError(
            f"ascend-eval serve needs {e.name}: pip install 'ascend-eval[serve]' (fastapi, uvicorn)."
        ) from None
    from ascend_eval.base.paths import cache_root

    token, _ = resolve_token(args.secrets_dir, args.token_secret)
    if args.concurrency < 1:
        raise ConfigError("--concurrency must be at least 1.")
    settings = Settings(
        jobs_dir=args.jobs_dir or cache_root() / "jobs",
        token=token,
        secrets_dir=args.secrets_dir,
        concurrency=args.concurrency,
        max_body_bytes=int(args.max_body_mb * 1024 * 1024),
        # Reserved even while the token comes from the environment: a value planted there would become
        # the token of the next server started without the variable.
        token_secret=args.token_secret,
        data_dirs=data_dirs(args.data_dir),
    )
    if args.host not in ("127.0.0.1", "localhost", "::1"):
        print(
            f"warning: listening on {args.host}, not only this machine: anyone who can reach it and has the "
            "token can run jobs that read the data files in the --data-dir folders.",
            file=sys.stderr,
        )
    print(
        f"ascend-eval serve on http://{args.host}:{args.port} (docs: /docs); jobs in {settings.jobs_dir}; "
        f"data files from {', '.join(map(str, settings.data_dirs or ()))}",
        file=sys.stderr,
        flush=True,
    )
    # uvicorn hands a SIGTERM or Ctrl-C back (as KeyboardInterrupt here) once it has shut down cleanly.
    with contextlib.suppress(KeyboardInterrupt):
        uvicorn.run(
            create_app(settings),
            host=args.host,
            port=args.port,
            log_level=args.log_level,
            **uvicorn_settings(args.read_timeout),
        )
    return 0


def _port(text: str) -> int:
    """`--port`: a TCP port, 1 to 65535 (an argparse type: anything else is a usage error, exit 2)."""
    try:
        port = int(text)
    except ValueError:
        port = -1
    if not 1 <= port <= 65535:
        raise argparse.ArgumentTypeError(f"{text!r} is not a TCP port: give a whole number from 1 to 65535")
    return port


def _positive(text: str, what: str) -> float:
    """A finite number over 0, or the usage error that says what `what` (e.g. "a number of seconds over
    0, e.g. 60") should be."""
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not 0 < value < math.inf:
        raise argparse.ArgumentTypeError(f"{text!r} is not {what}")
    return value


def _megabytes(text: str) -> float:
    """`--max-body-mb`: a finite number of MiB over 0 that makes at least one byte."""
    what = "a size: give a positive number of MiB, e.g. 16"
    value = _positive(text, what)
    if int(value * 1024 * 1024) < 1:
        raise argparse.ArgumentTypeError(f"{text!r} is not {what}")
    return value


def _seconds(text: str) -> float:
    """`--read-timeout`: a finite number of seconds over 0."""
    return _positive(text, "a time: give a number of seconds over 0, e.g. 60")


def add_parser(sub: Any) -> None:
    """Register `serve` on the main parser's subparsers."""
    serve = sub.add_parser(
        "serve",
        help="NeMo Evaluator's evaluation-jobs REST API for RAG metric jobs (nemo-microservices client)",
    )
    serve.add_argument(
        "--host", default="127.0.0.1", help="address to bind (default 127.0.0.1: this machine)"
    )
    serve.add_argument("--port", type=_port, default=8000, help="the TCP port, 1 to 65535 (default 8000)")
    serve.add_argument("--jobs-dir", type=Path, help="the jobs folder (default ~/.cache/ascend-eval/jobs)")
    serve.add_argument("--secrets-dir", type=Path, help="default ~/.cache/ascend-eval/secrets")
    serve.add_argument(
        "--data-dir",
        type=Path,
        action="append",
        help="a folder jobs may read dataset and corpus files and local models from (repeatable; default "
        "$ASCEND_EVAL_DATA_DIRS, else ~/.cache/ascend-eval/data); paths elsewhere are refused (422)",
    )
    serve.add_argument("--concurrency", type=int, default=1, help="jobs run at once (default 1, at most 64)")
    serve.add_argument(
        "--token-secret",
        default=TOKEN_SECRET,
        help=f"the secret holding the bearer token (default {TOKEN_SECRET}); ${TOKEN_ENV} takes precedence",
    )
    serve.add_argument(
        "--max-body-mb", type=_megabytes, default=16.0, help="largest request body in MiB (default 16)"
    )
    serve.add_argument(
        "--read-timeout",
        type=_seconds,
        default=60.0,
        help="seconds a client has to send each whole request, from its first byte or from connecting; "
        "a connection that takes longer is closed (default 60)",
    )
    serve.add_argument("--log-level", default="warning", choices=["debug", "info", "warning", "error"])
    serve.set_defaults(func=_serve)
