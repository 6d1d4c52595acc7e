"""`ascend-eval job ...` and `ascend-eval secrets ...`: NeMo-style metric jobs run locally, and the secrets
their specs name."""

from __future__ import annotations

import argparse
import getpass
import json
import sys
from pathlib import Path
from typing import Any

from ascend_eval.errors import ConfigError


def _shown(value: Any) -> str:
    """A value of a job's record as a terminal line shows it: control characters (an escape sequence, a
    line break) written as escapes. The record is a file anyone with access to the jobs folder, or an
    older server, may have written."""
    from ascend_eval.models.scrub import escape_controls

    return escape_controls(str(value))


def _jobs(args: argparse.Namespace) -> Any:
    from ascend_eval.jobs import Jobs

    return Jobs(args.jobs_dir)


def _run(args: argparse.Namespace) -> int:
    jobs = _jobs(args)
    if args.resume:
        if args.spec or args.id or args.name or args.cache_dir:
            raise ConfigError(
                "job run --resume ID takes no SPEC, --id, --name or --cache-dir: the job has them."
            )
        job = jobs.get(args.resume)
    elif args.spec:
        job = jobs.create(args.spec, name=args.name, cache_dir=args.cache_dir, job_id=args.id)
    else:
        raise ConfigError("job run needs a SPEC file (JSON or YAML), or --resume ID.")
    if args.detach:
        job.start()
        print(f"job {job.id} started in the background ({job.directory})")
        print(f"follow it with: ascend-eval job status {job.id}")
        return 0
    # SIGTERM (`job cancel`, `timeout`) stops it like Ctrl-C: `main` runs every command that way.
    print(f"job {job.id} running in {job.directory}", file=sys.stderr)
    job.run()
    print((job.directory / "results" / "summary.txt").read_text(encoding="utf-8"))
    print(f"\njob {job.id} completed; results: ascend-eval job results {job.id}")
    return 0


def _status(args: argparse.Namespace) -> int:
    job = _jobs(args).get(args.job_id)
    info, progress = job.info(), job.progress()
    if args.json:
        print(json.dumps({**info, "progress": progress}, ensure_ascii=False, indent=2))
        return 0
    print(f"{job.id}: {_shown(info['status'])}")
    for key in ("name", "created", "started", "finished", "error"):
        if info.get(key):
            print(f"  {key}: {_shown(info[key])}")
    if progress:
        print("  progress: " + ", ".join(f"{k}={v}" for k, v in progress.items() if k != "updated"))
    print(f"  directory: {job.directory}")
    return 0


def _results(args: argparse.Namespace) -> int:
    job = _jobs(args).get(args.job_id)
    results = job.results()
    if args.json:
        print(json.dumps(results, ensure_ascii=False, indent=2))
        return 0
    print((job.directory / "results" / "summary.txt").read_text(encoding="utf-8"))
    print(f"\nper-sample rows: {job.directory / 'results'} (results.json, scores.csv)")
    return 0


def _list(args: argparse.Namespace) -> int:
    jobs = _jobs(args).list()
    if args.json:
        print(json.dumps([j.info() for j in jobs], ensure_ascii=False, indent=2))
        return 0
    if not jobs:
        print("no jobs")
        return 0
    for job in jobs:
        info = job.info()
        status, created, name = (_shown(info.get(k) or "") for k in ("status", "created", "name"))
        print(f"{_shown(job.id):<44} {status:<10} {created:<26} {name}")
    return 0


def _cancel(args: argparse.Namespace) -> int:
    status = _jobs(args).get(args.job_id).cancel()
    print(f"{args.job_id}: {status}")
    return 0 if status == "cancelled" else 1


def _secret_value(name: str) -> str:
    """The value from stdin when it is piped in, else from a prompt that does not echo. Never argv: a
    command line is visible to other users (ps) and kept in shell history."""
    if sys.stdin.isatty():
        return getpass.getpass(f"value of secret {name!r} (not shown): ")
    return sys.stdin.read()


def _secrets_set(args: argparse.Namespace) -> int:
    from ascend_eval.jobs import SecretStore

    store = SecretStore(args.secrets_dir)
    path = store.set(args.name, _secret_value(args.name), endpoints=args.endpoint or ())
    bound = store.endpoints(args.name)
    print(f"secret {args.name!r} stored in {path} (mode 0600)")
    if bound:
        print(f"jobs may send it to {', '.join(bound)} only")
    else:
        print(
            "bound to no endpoint: jobs send it nowhere (right for serve-token). To send it, set it again "
            "with --endpoint URL (repeatable)"
        )
    return 0


def _secrets_list(args: argparse.Namespace) -> int:
    from ascend_eval.jobs import SecretStore

    store = SecretStore(args.secrets_dir)
    entries = store.list()
    for name, where in entries:
        bound = ", ".join(store.endpoints(name)) if where == "file" else ""
        print(f"{name:<40} {where:<12} {bound}".rstrip())
    if not entries:
        print("no secrets")
    return 0


def _secrets_delete(args: argparse.Namespace) -> int:
    from ascend_eval.jobs import SecretStore

    if not SecretStore(args.secrets_dir).delete(args.name):
        raise ConfigError(f"No stored secret {args.name!r}; `ascend-eval secrets list` shows them.")
    print(f"secret {args.name!r} deleted")
    return 0


def add_parser(sub: Any) -> None:
    """Register the `job` and `secrets` commands on the main parser's subparsers."""
    job = sub.add_parser("job", help="run NeMo-style metric jobs locally (spec, status, results, resume)")
    job.add_argument("--jobs-dir", type=Path, help="the jobs folder (default ~/.cache/ascend-eval/jobs)")
    commands = job.add_subparsers(dest="job_command", required=True)

    run = commands.add_parser("run", help="create and run a job from a spec file, or resume one")
    run.add_argument("spec", nargs="?", help="job spec file (JSON or YAML, NeMo's metric job shape)")
    run.add_argument("--resume", metavar="ID", help="run an existing job again, from its cache")
    run.add_argument("--id", help="the job id (default: NAME-DATE-TIME-RANDOM)")
    run.add_argument("--name", help="a label for the job")
    run.add_argument(
        "--cache-dir", type=Path, help="share this request cache folder instead of the job's own"
    )
    run.add_argument("--detach", action="store_true", help="run in the background and return at once")
    run.set_defaults(func=_run)

    status = commands.add_parser("status", help="a job's status and progress")
    status.add_argument("job_id")
    status.add_argument("--json", action="store_true")
    status.set_defaults(func=_status)

    results = commands.add_parser("results", help="a completed job's scores")
    results.add_argument("job_id")
    results.add_argument("--json", action="store_true", help="aggregate_scores and per-sample rows as JSON")
    results.set_defaults(func=_results)

    listing = commands.add_parser("list", help="every job, oldest first")
    listing.add_argument("--json", action="store_true")
    listing.set_defaults(func=_list)

    cancel = commands.add_parser("cancel", help="stop a running job (its cache is kept)")
    cancel.add_argument("job_id")
    cancel.set_defaults(func=_cancel)

    secrets = sub.add_parser("secrets", help="API keys and tokens that job specs name (never printed)")
    secrets.add_argument("--secrets-dir", type=Path, help="default ~/.cache/ascend-eval/secrets")
    actions = secrets.add_subparsers(dest="secrets_command", required=True)
    put = actions.add_parser("set", help="store a secret; the value is read from stdin or a hidden prompt")
    put.add_argument("name")
    put.add_argument(
        "--endpoint",
        action="append",
        metavar="URL",
        help="an endpoint (URL or scheme://host:port) jobs may send the secret to; repeatable. Without "
        "one it is sent nowhere",
    )
    put.set_defaults(func=_secrets_set)
    show = actions.add_parser(
        "list", help="secret names, where each is and the endpoints it may go to (never the values)"
    )
    show.set_defaults(func=_secrets_list)
    delete = actions.add_parser("delete", help="delete a stored secret")
    delete.add_argument("name")
    delete.set_defaults(func=_secrets_delete)
