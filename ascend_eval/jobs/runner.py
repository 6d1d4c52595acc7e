"""Jobs run locally, each in its own directory, resumable from its request cache.

A job directory (default `<cache root>/jobs/<id>/`) holds

    spec.json       the validated spec (secret names only: a spec never holds a secret's value)
    status.json     id, name, status (pending/running/completed/failed/cancelled), timestamps, pid, error
    progress.json   the stage, scores and requests done (updated after every engine round)
    job.log         the library's log lines while the job ran
    output.log      stdout and stderr of a background run
    cache/          the request cache (unless the job shares another cache_dir)
    results/        results.json, scores.csv, summary.json, summary.txt and job_results.json
                    (aggregate_scores + per-sample rows)

Running a job again (after a kill, a failure or a cancel) answers every request already in its cache
from there and sends only the rest.
"""

from __future__ import annotations

import json
import logging
import os
import re
import secrets as random_tokens
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Mapping
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from ascend_eval.base.paths import cache_root
from ascend_eval.errors import BACKEND_ERROR, BackendError, ConfigError
from ascend_eval.jobs.secrets import SecretStore
from ascend_eval.jobs.spec import JobSpec, did_you_mean, load_spec
from ascend_eval.results.files import write_job_results
from ascend_eval.writing import replace_text

logger = logging.getLogger("ascend_eval.jobs")

STATES = ("pending", "running", "completed", "failed", "cancelled")
"""The statuses a job's status.json holds."""
DAMAGED = "error"
"""The status of a job whose status.json cannot be read (torn, not an object, an unknown status): never
written, only reported, with the file and what is wrong with it as the job's error. Such a job is not run
again until the file is restored; every other job is unaffected."""
FINISHED = frozenset({"completed", "failed", "cancelled", DAMAGED})
"""The statuses no process changes any more."""
# fullmatch, not match: Python's `$` also matches before a final newline, so "job\n" would pass.
_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,99}")
RESULTS_FILE = "job_results.json"


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


def _write_json(path: Path, data: Mapping[str, Any]) -> None:
    replace_text(path, json.dumps(data, ensure_ascii=False, indent=2))


def _json_kind(value: Any) -> str:
    """What a JSON value is, as JSON names it (for a message about a record that is not an object)."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, int | float):
        return f"a number ({value!r})"
    if isinstance(value, str):
        return "a string"
    return "an array" if isinstance(value, list) else "an object"


def read_record(path: Path) -> dict[str, Any]:
    """The JSON object in `path`, or {} when there is none: asked once, not "exists, then read", since a
    rerun removes progress.json while a server thread may be reading it.

    Raises:
        ConfigError: the file cannot be read, is not UTF-8 JSON, or holds something else than an object;
            the message names the file and what is wrong with it (callers add the fix).
    """
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return {}
    except UnicodeDecodeError as e:
        raise ConfigError(f"{path} is damaged: it is not UTF-8 text (byte {e.start}).") from None
    except OSError as e:
        raise ConfigError(f"{path} cannot be read: {e.strerror or e}.") from None
    try:
        data = json.loads(text)
    except json.JSONDecodeError as e:
        what = "it is empty" if not text.strip() else f"{e.msg}: line {e.lineno} column {e.colno}"
        raise ConfigError(f"{path} is damaged: it is not valid JSON ({what}).") from None
    except (RecursionError, ValueError) as e:  # nested thousands deep; an integer of 4300+ digits
        raise ConfigError(f"{path} is damaged: it cannot be read as JSON ({type(e).__name__}).") from None
    if not isinstance(data, dict):
        raise ConfigError(f"{path} is damaged: it holds {_json_kind(data)}, not a JSON object.")
    return data


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # exists, owned by someone else
        return True
    return True


def _check_id(job_id: str) -> str:
    if not isinstance(job_id, str) or not _ID.fullmatch(job_id):
        raise ConfigError(
            f"Job id {job_id!r} is not valid: use letters, digits, '.', '_' and '-' (at most 100 characters)."
        )
    return job_id


class Job:
    """One job and its directory. Get one from `Jobs.create` or `Jobs.get`."""

    def __init__(self, directory: Path, *, secrets: SecretStore | None = None) -> None:
        self.directory = Path(directory)
        self.id = self.directory.name
        self.secrets = secrets or SecretStore()
        self._process: subprocess.Popen[bytes] | None = None

    # ---------------------------------------------------------------------------------------- state

    @property
    def spec(self) -> JobSpec:
        return load_spec(self.directory / "spec.json")

    def _record(self) -> dict[str, Any]:
        """status.json as written, or, when it cannot be read, a record with status `DAMAGED` whose
        error names the file, what is wrong with it and the fix."""
        path = self.directory / "status.json"
        try:
            info = read_record(path)
            if not info and not path.is_file():  # deleted meanwhile: no job, not a damaged one
                raise FileNotFoundError(2, "No such file or directory", str(path))
            status = info.get("status")
            if status not in STATES:
                raise ConfigError(
                    f"{path} is damaged: its status is {status!r}, not one of {', '.join(STATES)}."
                )
        except ConfigError as e:
            return {
                "id": self.id,
                "name": None,
                "status": DAMAGED,
                "error": f"{e} The job is not run or resumed until the file is restored; to drop the job, "
                f"delete its folder {self.directory}.",
            }
        return info

    def info(self) -> dict[str, Any]:
        """The status record. A job whose process has died before it finished reads as failed; one whose
        status.json cannot be read reads as `DAMAGED` ("error"), with the reason as its error."""
        info = self._record()
        here = info.get("host") == socket.gethostname()
        pid = info.get("pid")
        if info["status"] == "running" and pid and here and not _alive(pid):
            info = self._update(
                status="failed",
                finished=_now(),
                error=f"the job's process (pid {pid}) ended without finishing (killed?). Run it again to "
                "resume from its cache.",
            )
        background = self._background_pid()
        if (
            info["status"] == "pending"
            and here
            and background is not None
            and not self._process_lives(background)
        ):
            info = self._update(
                status="failed",
                finished=_now(),
                error=f"the background process (pid {background}) ended before the job started; see "
                f"{self.directory / 'output.log'}",
            )
        return info

    def status(self) -> str:
        return str(self.info()["status"])

    @property
    def returncode(self) -> int | None:
        """The exit code of the background process `start` launched from this object; None while it runs,
        or when this object started none."""
        return None if self._process is None else self._process.poll()

    def _update(self, **fields: Any) -> dict[str, Any]:
        path = self.directory / "status.json"
        info = read_record(path)  # a damaged record raises, naming the file: it is never overwritten
        info.update(fields)
        _write_json(path, info)
        return info

    def progress(self) -> dict[str, Any]:
        """The last progress report; {} when there is none, or when progress.json cannot be read (the
        next report replaces it: only the counts are lost)."""
        try:
            return read_record(self.directory / "progress.json")
        except ConfigError as e:
            logger.warning("job %s: progress not shown: %s", self.id, e)
            return {}

    @property
    def cache_dir(self) -> Path:
        return Path(self.info()["cache_dir"])

    def results(self) -> dict[str, Any]:
        """`{"aggregate_scores": [{name, count, mean, min, max, nan_count}], "rows": [per sample]}`.

        Raises:
            ConfigError: the job has not completed (the message gives its status and error).
        """
        info = self.info()
        if info["status"] != "completed":
            error = f": {info['error']}" if info.get("error") else ""
            raise ConfigError(f"Job {self.id!r} has no results: it is {info['status']}{error}.")
        return json.loads((self.directory / "results" / RESULTS_FILE).read_text(encoding="utf-8"))

    def __repr__(self) -> str:
        return f"Job({self.id!r}, status={self.status()!r})"

    # ------------------------------------------------------------------------------------- running

    def run(self) -> Job:
        """Run the job in this process, blocking; resumes from its cache when run again.

        Raises:
            ConfigError: the job is already running.
            AscendEvalError: whatever made the job fail (also recorded in status.json).
        """
        info = self.info()
        _check_runnable(self.id, info)
        if info["status"] == "running" and info.get("pid") not in (None, os.getpid()):
            raise ConfigError(f"Job {self.id!r} is already running (pid {info['pid']}).")
        (self.directory / "progress.json").unlink(missing_ok=True)
        self._update(
            status="running",
            pid=os.getpid(),
            host=socket.gethostname(),
            started=_now(),
            finished=None,
            error=None,
            runs=int(info.get("runs", 0)) + 1,
        )
        handler = _log_to(self.directory / "job.log")
        try:
            from ascend_eval.jobs.execute import execute

            logger.info("job %s: run %d started", self.id, int(info.get("runs", 0)) + 1)
            result = execute(
                self.spec,
                cache_dir=self.cache_dir,
                secrets=self.secrets,
                report=self._report,
                out=self.directory / "results",
            )
            self._save(result)
            _check_some_scored(result)
        except KeyboardInterrupt:
            logger.warning("job %s cancelled; answered requests stay in its cache", self.id)
            self._update(status="cancelled", finished=_now(), error="cancelled")
            raise
        except Exception as e:
            logger.error("job %s failed: %s: %s", self.id, type(e).__name__, e)
            self._update(status="failed", finished=_now(), error=f"{type(e).__name__}: {e}")
            raise
        finally:
            _stop_logging(handler)
        self._update(status="completed", finished=_now())
        return self

    def _report(self, progress: dict[str, Any]) -> None:
        # Merged into what was reported before, so the last engine counts survive the final "done".
        _write_json(self.directory / "progress.json", {**self.progress(), **progress, "updated": _now()})

    def _save(self, result: Any) -> None:
        out = self.directory / "results"
        if getattr(result, "folder", None) != out:  # a run streamed into `out` has saved itself there
            result.save(out)
        # Row by row from the saved samples: a job of any size writes it in constant memory.
        write_job_results(out / RESULTS_FILE, result.aggregates(), result.iter_rows())
        (out / "summary.txt").write_text(result.table() + "\n", encoding="utf-8")
        logger.info("job %s scores:\n%s", self.id, result.table())

    def start(self) -> Job:
        """Run the job in a background process (`python -m ascend_eval.jobs`); returns at once."""
        info = self.info()
        _check_runnable(self.id, info)
        if info["status"] == "running":
            raise ConfigError(f"Job {self.id!r} is already running (pid {info.get('pid')}).")
        command = [sys.executable, "-m", "ascend_eval.jobs", "--root", str(self.directory.parent)]
        # The process resolves the spec's secret names in this job's store, not the default one.
        command += ["--secrets-dir", str(self.secrets.directory.absolute()), self.id]
        # A run before this one left its process's pid, long dead: read beside "pending" by another
        # thread (the server answering a status request) before the new pid is written, it made the job
        # read as "ended before the job started", and failed it. No pid until the new one is known.
        (self.directory / "background.pid").unlink(missing_ok=True)
        # Written before the process exists: the process records "running" and its pid itself, and a
        # write from here afterwards could overwrite that.
        self._update(status="pending", host=socket.gethostname(), error=None)
        with (self.directory / "output.log").open("ab") as output:
            # A session of its own: closing the terminal or Ctrl-C there does not stop the job.
            self._process = subprocess.Popen(
                command,
                stdout=output,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                start_new_session=True,
            )
        # Not written in place: the server reads it from other threads, and a file written in place is
        # empty for a moment, which crashed `info()`.
        replace_text(self.directory / "background.pid", str(self._process.pid))
        return self

    def wait(self, timeout: float | None = None, *, poll: float = 0.2) -> Job:
        """Block until the job has finished (completed, failed or cancelled) or `timeout` seconds passed."""
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            if self._process is not None and self._process.poll() is not None:
                status = self.status()  # the process is gone: what it wrote last is final
                if status not in FINISHED:
                    self._update(
                        status="failed",
                        finished=_now(),
                        error=f"the background process exited with code {self._process.returncode} "
                        f"before finishing; see {self.directory / 'output.log'}",
                    )
                return self
            if self.status() in FINISHED:
                return self
            if deadline is not None and time.monotonic() >= deadline:
                return self
            time.sleep(poll)

    def cancel(self, *, timeout: float = 10.0) -> str:
        """Stop the job: SIGTERM to its process (which records `cancelled` and keeps its cache), or mark a
        job that has not started cancelled. Returns the status afterwards ("running" if the process has
        not stopped within `timeout` seconds)."""
        info = self.info()
        if info["status"] in FINISHED:
            return str(info["status"])
        pid = info.get("pid") if info["status"] == "running" else self._background_pid()
        if pid and pid != os.getpid() and info.get("host") == socket.gethostname() and _alive(pid):
            os.kill(pid, signal.SIGTERM)
            deadline = time.monotonic() + timeout
            while self._recorded() not in FINISHED and self._process_lives(pid):
                if time.monotonic() >= deadline:
                    return self._recorded()
                time.sleep(0.1)
        if self._recorded() not in FINISHED:  # stopped before it could record anything
            self._update(status="cancelled", finished=_now(), error="cancelled")
        return self._recorded()

    def _recorded(self) -> str:
        """The status as written, without the dead-process check of `info()`."""
        return str(self._record()["status"])

    def _background_pid(self) -> int | None:
        try:
            text = (self.directory / "background.pid").read_text(encoding="utf-8", errors="replace")
        except FileNotFoundError:
            return None
        # Empty: left by an older version that wrote it in place, or by a kill in the middle of that.
        # Anything but a pid (a file damaged from outside) is no process of ours either.
        return int(text) if text.strip().isdigit() else None

    def _process_lives(self, pid: int) -> bool:
        if self._process is not None and self._process.pid == pid:
            return self._process.poll() is None  # our own child: reap it, or it lingers as a zombie
        return _alive(pid)


def _check_runnable(job_id: str, info: dict[str, Any]) -> None:
    """Refuse to run a job whose status.json cannot be read: a run would overwrite the record (and its
    cache folder is only known from it)."""
    if info["status"] == DAMAGED:
        raise ConfigError(f"Job {job_id!r} cannot run: {info['error']}")


def cancel_on_sigterm() -> None:
    """Make SIGTERM (`ascend-eval job cancel`) stop a run in this process the way Ctrl-C does, so that the
    job records "cancelled" instead of dying silently."""

    def interrupt(signum: int, frame: Any) -> None:
        raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, interrupt)


def _check_some_scored(result: Any) -> None:
    """A job whose every score failed on a model call did not run: say why, instead of "completed"."""
    # From the NaN reasons' counts, not the outcomes: a streamed result would read its file per metric.
    total = len(result.samples) * len(result.metrics)
    failed = [
        (reason, count)
        for metric in result.metrics
        for reason, count in result.nan_reasons(metric).items()
        if reason.startswith(BACKEND_ERROR)
    ]
    if total and sum(count for _, count in failed) == total:
        raise BackendError(
            f"Every score failed on a model call, e.g. {failed[0][0]}. Check the endpoint URLs, that the "
            "servers are up, and the API key secrets; then run the job again (answers already received "
            "are cached)."
        )


class _JobLog(logging.FileHandler):
    """A run's job.log; remembers the library logger's level from before the run, to restore it after."""

    def __init__(self, path: Path, previous_level: int) -> None:
        super().__init__(path, encoding="utf-8")
        self.previous_level = previous_level


def _log_to(path: Path) -> _JobLog:
    """Send the library's log lines (INFO and up) to `path` for the duration of a run."""
    root = logging.getLogger("ascend_eval")
    handler = _JobLog(path, root.level)
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    handler.setLevel(logging.INFO)
    if root.getEffectiveLevel() > logging.INFO:
        root.setLevel(logging.INFO)
    root.addHandler(handler)
    return handler


def _stop_logging(handler: _JobLog) -> None:
    root = logging.getLogger("ascend_eval")
    root.removeHandler(handler)
    root.setLevel(handler.previous_level)
    handler.close()


class Jobs:
    """The jobs under one root folder (default `<cache root>/jobs`).

    Args:
        root: the folder holding one directory per job.
        secrets: where specs' secret names are resolved (default: the standard store).
    """

    def __init__(self, root: str | Path | None = None, *, secrets: SecretStore | None = None) -> None:
        self.root = Path(root) if root is not None else cache_root() / "jobs"
        self.secrets = secrets

    def create(
        self,
        spec: JobSpec | Mapping[str, Any] | str | Path,
        *,
        name: str | None = None,
        cache_dir: str | Path | None = None,
        job_id: str | None = None,
    ) -> Job:
        """Validate `spec` and make the job's directory; nothing runs yet.

        Args:
            spec: a `JobSpec`, a dict, or a JSON/YAML file.
            name: a label shown by `list`; also the start of a generated id.
            cache_dir: share this request cache folder (e.g. across the points of a sweep) instead of the
                job's own `cache/`.
            job_id: the id to use instead of a generated one.

        Raises:
            ConfigError: an invalid spec, id or name, or a job with this id exists.
        """
        validated = load_spec(spec)
        if job_id is None:
            prefix = re.sub(r"[^A-Za-z0-9._-]+", "-", name or "job").strip("-._")[:40] or "job"
            job_id = f"{prefix}-{datetime.now().strftime('%Y%m%d-%H%M%S')}-{random_tokens.token_hex(3)}"
        directory = self.root / _check_id(job_id)
        if directory.exists():
            raise ConfigError(f"Job {job_id!r} exists already in {self.root}. Choose another id.")
        directory.mkdir(parents=True)
        cache = Path(cache_dir).expanduser().absolute() if cache_dir is not None else directory / "cache"
        try:
            (directory / "spec.json").write_text(validated.to_json(), encoding="utf-8")
            _write_json(
                directory / "status.json",
                {
                    "id": job_id,
                    "name": name,
                    "status": "pending",
                    "created": _now(),
                    "cache_dir": str(cache),
                    "runs": 0,
                },
            )
        except BaseException:
            # All or nothing: a half-made job (a full disk, a name UTF-8 cannot write) would be listed
            # as a job that never runs.
            shutil.rmtree(directory, ignore_errors=True)
            raise
        return Job(directory, secrets=self.secrets)

    def get(self, job_id: str) -> Job:
        """The job with this id.

        Raises:
            ConfigError: no such job (with the closest ids).
        """
        directory = self.root / _check_id(job_id)
        if not (directory / "status.json").is_file():
            ids = [j.id for j in self.list()]
            raise ConfigError(
                f"No job {job_id!r} in {self.root}.{did_you_mean(job_id, ids)} "
                "`ascend-eval job list` shows the jobs."
            )
        return Job(directory, secrets=self.secrets)

    def list(self) -> list[Job]:
        """Every job, oldest first."""
        if not self.root.is_dir():
            return []
        jobs = [Job(d, secrets=self.secrets) for d in self.root.iterdir() if (d / "status.json").is_file()]
        return sorted(jobs, key=lambda j: (j.info().get("created", ""), j.id))
