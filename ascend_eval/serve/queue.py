"""The server's job queue: jobs of `ascend_eval.jobs` run by a fixed number of workers, each job in its
own background process (`Job.start`), with the server's record of the job kept next to the job's files.

A job directory made by the server holds, besides the runner's files, `server.json`: the request as the
client sent it (API keys removed), how its results are named in NeMo's shape, and the server's own
state (`done`, `cancel_requested`). That file is what makes a restart lossless: on startup every job
the server made and has not seen finish is queued again, and a rerun answers every request already in
the job's cache from there (the engine's SQLite cache), so it resumes where it stopped. A job whose
process is still running (the previous server was killed, not stopped) is waited for, not restarted.

Stopping the server stops its running jobs (SIGTERM: they record `cancelled`, keeping their cache)
without marking them done, so the next server resumes them.
"""

from __future__ import annotations

import contextlib
import json
import logging
import queue
import threading
import time
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from ascend_eval.errors import ConfigError
from ascend_eval.jobs import Job, Jobs
from ascend_eval.jobs.runner import DAMAGED, FINISHED, read_record
from ascend_eval.writing import replace_text

logger = logging.getLogger("ascend_eval.serve")

RECORD = "server.json"
# What the views read from a record, and the JSON type each must have: a record written by hand (or by
# anything but this server) is checked before a view trips over it.
_FIELDS: dict[str, tuple[type, str]] = {
    "api": (str, "a string"),
    "shape": (str, "a string"),
    "task": (str, "a string"),
    "request": (dict, "an object"),
    "metrics": (dict, "an object"),
    "secrets": (list, "an array"),
}


def now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


class JobQueue:
    """Runs the server's jobs, `concurrency` at a time.

    Args:
        jobs: the jobs folder (and the secrets store their specs resolve in).
        concurrency: how many jobs run at once.
        poll: seconds between looks at a running job's status.
    """

    def __init__(self, jobs: Jobs, *, concurrency: int = 1, poll: float = 0.2) -> None:
        if concurrency < 1:
            raise ValueError(f"concurrency must be at least 1, got {concurrency}")
        self.jobs = jobs
        self.concurrency = concurrency
        self.poll = poll
        self._queue: queue.Queue[str | None] = queue.Queue()
        self._lock = threading.Lock()
        self._running: dict[str, Job] = {}
        self._stopping = threading.Event()
        self._workers: list[threading.Thread] = []
        self._stopped: set[str] = set()

    # ------------------------------------------------------------------------------------- records

    def record(self, job_id: str) -> dict[str, Any]:
        """The job's server record; {} for a job the server did not make. A record that cannot be read
        is `{"damaged": why}`, `why` naming the file, what is wrong with it and the fix: the job is
        shown with that as its error and never run, and every other job is unaffected."""
        path = self.jobs.root / job_id / RECORD
        with self._lock:
            try:
                record = read_record(path)
                _check_fields(record, path)
            except ConfigError as e:
                return {
                    "damaged": f"{e} The server neither shows nor runs the job until the file is restored; "
                    f"DELETE /v1/evaluation/jobs/{job_id} drops it."
                }
            return record

    def update(self, job_id: str, **fields: Any) -> dict[str, Any]:
        """Merge `fields` into the job's server record, replacing the file in one step.

        Raises:
            ConfigError: the record is damaged (it is left as it is).
        """
        path = self.jobs.root / job_id / RECORD
        with self._lock:
            if not path.parent.is_dir():  # deleted meanwhile
                return {}
            record = read_record(path)
            record.update(fields, updated_at=now())
            replace_text(path, json.dumps(record, ensure_ascii=False, indent=2))
            return record

    def ids(self) -> list[str]:
        """The server's jobs (those with a record), oldest first."""
        return [job.id for job in self.jobs.list() if (job.directory / RECORD).is_file()]

    # ------------------------------------------------------------------------------------- running

    def start(self) -> None:
        """Queue again what the last server left unfinished, then start the workers."""
        for job_id in self.ids():
            record = self.record(job_id)
            if record.get("damaged"):
                logger.warning("job %s not resumed: %s", job_id, record["damaged"])
                continue
            if record.get("done") or record.get("cancel_requested"):
                continue
            info = self.jobs.get(job_id).info()
            status = info["status"]
            if status == DAMAGED:
                logger.warning("job %s not resumed: %s", job_id, info["error"])
                continue
            if status == "completed":
                self.update(job_id, done=True)
                continue
            logger.info("job %s (%s when the server stopped) queued again", job_id, status)
            self._queue.put(job_id)
        for i in range(self.concurrency):
            worker = threading.Thread(target=self._work, name=f"ascend-eval-serve-{i}", daemon=True)
            worker.start()
            self._workers.append(worker)

    def submit(self, job_id: str) -> None:
        self.update(job_id, done=False, queued_at=now())
        self._queue.put(job_id)

    def is_running(self, job_id: str) -> bool:
        with self._lock:
            return job_id in self._running

    def _work(self) -> None:
        while not self._stopping.is_set():
            try:
                job_id = self._queue.get(timeout=0.2)
            except queue.Empty:
                continue
            if job_id is None or self._stopping.is_set():
                return
            try:
                self._run(job_id)
            except Exception as e:  # a worker survives anything one job does (deleted under it, ...)
                if (self.jobs.root / job_id / RECORD).is_file():
                    logger.error("job %s: the server could not run it: %s: %s", job_id, type(e).__name__, e)
                    with contextlib.suppress(OSError, ConfigError):  # ConfigError: a damaged record
                        self.update(job_id, done=True, server_error=f"{type(e).__name__}: {e}")

    def _run(self, job_id: str) -> None:
        record = self.record(job_id)
        if not record or record.get("damaged") or record.get("done") or record.get("cancel_requested"):
            return
        job = self.jobs.get(job_id)
        if job.status() != "running":  # "running": a process the last server started lives on
            job.start()
        with self._lock:
            self._running[job_id] = job
        try:
            while True:
                job.wait(timeout=self.poll, poll=min(self.poll, 0.1))
                if self._stopping.is_set():
                    # Stopped with the server (by `stop`), not finished: the next server resumes it.
                    if job.id not in self._stopped:
                        job.cancel()
                    return
                if job.status() in FINISHED:
                    self.update(job_id, done=True)
                    return
        finally:
            with self._lock:
                self._running.pop(job_id, None)

    def cancel(self, job_id: str) -> str:
        """Cancel a queued or running job; the job's status afterwards."""
        self.update(job_id, cancel_requested=True)
        job = self.jobs.get(job_id)
        status = job.status()
        if status in FINISHED and not self.is_running(job_id):
            # Waiting in the queue to be resumed: its last run's status stays, the server's record says
            # it will not run again.
            self.update(job_id, done=True)
            return "cancelled" if status != "completed" else status
        status = job.cancel()
        if status in FINISHED:
            # The worker that ran it writes the job's record once more as it lets go; wait for that, so
            # that the caller may delete the job's folder without racing it.
            deadline = time.monotonic() + max(10.0, 20 * self.poll)
            while self.is_running(job_id) and time.monotonic() < deadline:
                time.sleep(0.02)
        return status

    def stop(self, *, timeout: float = 15.0) -> None:
        """Stop the workers and the jobs they run (which stay resumable: not marked done)."""
        self._stopping.set()
        with self._lock:
            running = list(self._running.values())
            self._stopped.update(job.id for job in running)
        for job in running:
            logger.info("job %s stopped with the server; the next server resumes it", job.id)
            job.cancel(timeout=timeout)
        for _ in self._workers:
            self._queue.put(None)
        for worker in self._workers:
            worker.join(timeout=timeout)


def _check_fields(record: dict[str, Any], path: Path) -> None:
    """Raise `ConfigError` for a record field of the wrong type, or a NeMo-shaped request without its
    config and target, naming the file and the field."""
    for name, (kind, what) in _FIELDS.items():
        if name in record and not isinstance(record[name], kind):
            held = json.dumps(record[name])[:80]
            raise ConfigError(f"{path} is damaged: {name!r} holds {held}, not {what}.")
    if not all(isinstance(v, str) for v in record.get("metrics", {}).values()):
        raise ConfigError(f"{path} is damaged: 'metrics' must map each NeMo metric key to a metric name.")
    if not all(isinstance(v, str) for v in record.get("secrets", [])):
        raise ConfigError(f"{path} is damaged: 'secrets' must be a list of secret names.")
    if record.get("shape") == "nemo":
        request = record.get("request", {})
        inner = request.get("spec", request) if record.get("api") == "v2" else request
        parts = ("config", "target")
        if not isinstance(inner, dict) or not all(isinstance(inner.get(k), dict) for k in parts):
            raise ConfigError(f"{path} is damaged: its 'request' lacks the job's config and target objects.")


def job_log_lines(directory: Path) -> list[str]:
    """The job's log lines (every run), without the trailing newline."""
    path = directory / "job.log"
    return path.read_text(encoding="utf-8", errors="replace").splitlines() if path.is_file() else []
