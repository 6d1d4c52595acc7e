"""The server's job queue in this process: concurrency, a job that fails, cancel before a job starts, and a
job deleted while it runs."""

from __future__ import annotations

import shutil

import pytest

from ascend_eval.jobs import Jobs, SecretStore
from ascend_eval.serve.queue import JobQueue
from tests.jobs.conftest import inline_spec_for
from tests.serve.conftest import wait_for


@pytest.fixture
def jobs(tmp_path) -> Jobs:
    return Jobs(tmp_path / "jobs", secrets=SecretStore(tmp_path / "secrets"))


def _submit(queue: JobQueue, jobs: Jobs, spec: dict) -> str:
    job = jobs.create(spec)
    queue.update(job.id, task="rag")
    queue.submit(job.id)
    return job.id


def test_at_most_concurrency_jobs_run_at_once(jobs, judge_server):
    queue = JobQueue(jobs, concurrency=1, poll=0.1)
    judge_server.hold_classify.set()
    queue.start()
    try:
        first = _submit(queue, jobs, inline_spec_for(judge_server.url, secret=None))
        second = _submit(queue, jobs, inline_spec_for(judge_server.url, secret=None))
        wait_for(lambda: judge_server.classify_bodies(), what="the first job's verdicts")
        assert jobs.get(first).status() == "running" and jobs.get(second).status() == "pending"
        judge_server.hold_classify.clear()
        wait_for(lambda: queue.record(second).get("done"), what="both jobs")
        assert [jobs.get(i).status() for i in (first, second)] == ["completed", "completed"]
    finally:
        judge_server.hold_classify.clear()
        queue.stop()


def test_a_failed_job_is_done_and_a_queued_one_can_be_cancelled(jobs, judge_server):
    queue = JobQueue(jobs, concurrency=1, poll=0.1)
    spec = inline_spec_for("http://127.0.0.1:9/v1/chat/completions", secret=None)
    spec["metric_params"]["judge_llm"].update(max_retries=0, request_timeout=2)
    failing = _submit(queue, jobs, spec)
    waiting = _submit(queue, jobs, inline_spec_for(judge_server.url, secret=None))
    assert queue.cancel(waiting) == "cancelled"  # before any worker runs
    queue.start()
    try:
        wait_for(lambda: queue.record(failing).get("done"), what="the failing job")
        assert jobs.get(failing).status() == "failed" and "model call" in jobs.get(failing).info()["error"]
        assert jobs.get(waiting).status() == "cancelled" and judge_server.server.requests == []
    finally:
        queue.stop()


def test_a_job_deleted_while_it_runs_leaves_the_worker_working(jobs, judge_server):
    queue = JobQueue(jobs, concurrency=1, poll=0.1)
    judge_server.hold_classify.set()
    queue.start()
    try:
        doomed = _submit(queue, jobs, inline_spec_for(judge_server.url, secret=None))
        wait_for(lambda: judge_server.classify_bodies(), what="the verdicts")
        assert queue.cancel(doomed) == "cancelled"
        # The worker has let go of it: nothing writes into its folder any more while it is deleted.
        assert not queue.is_running(doomed)
        shutil.rmtree(jobs.root / doomed)
        judge_server.hold_classify.clear()
        after = _submit(queue, jobs, inline_spec_for(judge_server.url, secret=None))
        wait_for(lambda: queue.record(after).get("done"), what="the next job")
        assert jobs.get(after).status() == "completed"
    finally:
        judge_server.hold_classify.clear()
        queue.stop()
