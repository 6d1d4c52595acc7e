"""Jobs run locally against a real loopback HTTP judge: results in NeMo's shape, secret hygiene, the job
directory, failures with clear errors, Hugging Face datasets, resume after a kill, and cancel."""

from __future__ import annotations

import copy
import json
import os
import signal
import socket
import threading
import time
from pathlib import Path

import pytest

import ascend_eval
from ascend_eval.jobs import Jobs, runner
from ascend_eval.models.errors import BackendError, ConfigError, DataError
from tests.conftest import CALIBRATION_REQUESTS, SUPPORT_RULE_NO, SUPPORT_RULE_YES
from tests.jobs.conftest import inline_spec_for, nemo_spec

SECRET = "sk-test-7f3a9c2e1b-never-store-me"


def _wait_for(predicate, timeout=60.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(0.05)
    raise AssertionError("timed out waiting")


def test_the_inline_example_runs_and_returns_nemo_shaped_results(jobs, judge_server):
    job = jobs.create(inline_spec_for(judge_server.url, secret=None), name="inline")
    assert job.status() == "pending"
    job.run()
    assert job.status() == "completed"
    results = job.results()
    # The rules judge: no answer sentence occurs verbatim in its context, so both score its calibrated "no".
    no = pytest.approx(SUPPORT_RULE_NO)
    assert results["aggregate_scores"] == [
        {"name": "faithfulness", "count": 2, "mean": no, "min": no, "max": no, "nan_count": 0}
    ]
    assert [r["user_input"] for r in results["rows"]] == [
        "What is the capital of France?",
        "Who wrote Romeo and Juliet?",
    ]
    names = {p.name for p in job.directory.iterdir()}
    assert {"spec.json", "status.json", "progress.json", "job.log", "cache", "results"} <= names
    assert {"results.json", "scores.csv", "summary.json", "summary.txt", "job_results.json"} <= {
        p.name for p in (job.directory / "results").iterdir()
    }
    progress = job.progress()
    assert progress["stage"] == "done" and progress["scores_done"] == progress["scores_total"] == 2
    # 2 statement lists, then 2 verdicts beside the verdict prompt's calibration requests
    assert progress["rounds"] == 2 and progress["sent"] == 4 + CALIBRATION_REQUESTS
    info = job.info()
    assert info["started"] and info["finished"] and info["error"] is None and info["runs"] == 1
    # the judge settings of the spec reached the endpoint
    assert judge_server.generate_bodies()[0]["model"] == "meta/llama-3.1-8b-instruct"


def test_job_scores_equal_evaluate_with_the_same_rules(jobs, judge_server, rule_judge):
    spec = inline_spec_for(judge_server.url, secret=None)
    data = spec["dataset"]["rows"][0]
    data["answer"][0] = "Paris is the capital city of France. It has a big tower."  # one claim supported
    job = jobs.create(spec).run()
    direct = ascend_eval.evaluate(data, ["faithfulness"], judge=rule_judge, cache_dir=False, progress=False)
    got = job.results()
    assert got["aggregate_scores"] == direct.aggregates()
    assert [r["faithfulness"] for r in got["rows"]] == [r["faithfulness"] for r in direct.rows()]
    assert 0 < got["aggregate_scores"][0]["mean"] < 1
    # Streamed: the samples were written to the results folder as they were scored, and the rows of
    # job_results.json (one per line) are those samples without their details.
    folder = job.directory / "results"
    samples = (folder / "samples.jsonl").read_text(encoding="utf-8").splitlines()
    assert [r["id"] for r in got["rows"]] == [json.loads(line)["id"] for line in samples]
    assert got["rows"] == json.loads(json.dumps(direct.rows()))
    lines = (folder / "job_results.json").read_text().splitlines()
    assert [json.loads(line.rstrip(",")) for line in lines if line.startswith('{"id"')] == got["rows"]


def test_a_secret_reaches_the_endpoint_and_nowhere_else(jobs, judge_server, secrets, tmp_path):
    secrets.set("judge-api-key", SECRET, endpoints=[judge_server.url])
    spec = inline_spec_for(judge_server.url)
    spec["metric_params"]["judge_llm"]["inference_params"] = {
        "max_tokens": 77,
        "temperature": 0.1,
        "top_p": 0.9,
    }
    job = jobs.create(spec).run()
    assert job.status() == "completed"
    seen = {r.headers.get("authorization") for r in judge_server.server.requests}
    assert seen == {f"Bearer {SECRET}"}
    # inference_params reach the judge's generation requests
    body = judge_server.generate_bodies()[0]
    assert (body["max_tokens"], body["temperature"], body["top_p"]) == (77, 0.1, 0.9)
    # every file of the job (spec, status, progress, log, cache, results) and all of tmp except the
    # secrets folder itself: the value is nowhere
    checked = 0
    for path in tmp_path.rglob("*"):
        if path.is_file() and secrets.directory not in path.parents:
            assert SECRET.encode() not in path.read_bytes(), path
            checked += 1
    assert checked >= 10
    assert '"api_key_secret": "judge-api-key"' in (job.directory / "spec.json").read_text()


def test_a_background_job_reads_secrets_from_its_jobs_store(jobs, judge_server, secrets):
    secrets.set("judge-api-key", SECRET, endpoints=[judge_server.url])  # the test's store, not the default
    job = jobs.create(inline_spec_for(judge_server.url)).start().wait(timeout=60)
    assert job.status() == "completed", job.info()
    assert {r.headers.get("authorization") for r in judge_server.server.requests} == {f"Bearer {SECRET}"}


def test_a_missing_secret_fails_before_any_request(jobs, judge_server):
    job = jobs.create(inline_spec_for(judge_server.url, secret="nobody-set-this"))
    with pytest.raises(ConfigError, match="Secret 'nobody-set-this' is not set"):
        job.run()
    assert job.status() == "failed" and "nobody-set-this" in job.info()["error"]
    assert judge_server.server.requests == []


def test_the_seed_spec_as_written_fails_clearly_when_run(jobs, secrets):
    # NeMo's endpoints are unreachable here: parsing works, running names the problem.
    job = jobs.create(nemo_spec("basic"))
    with pytest.raises(DataError) as info:
        job.run()
    message = str(info.value)
    assert "'ragas/amnesty_qa' is not a built-in dataset" in message
    assert "bilingual-example" in message and '"dataset": "/path/to/data.json"' in message
    if _has_pipeline():
        assert "ascend-eval/rag-mini-en" in message and "ascend-eval/rag-mini-zh" in message
    assert job.status() == "failed"
    with pytest.raises(ConfigError, match="has no results: it is failed"):
        job.results()


def _has_pipeline() -> bool:
    from ascend_eval.examples import BUILTIN_DATASETS

    return "ascend-eval/rag-mini-en" in BUILTIN_DATASETS


def test_an_unreachable_judge_endpoint_fails_the_job_with_the_reason(jobs, secrets):
    secrets.set("judge-api-key", SECRET, endpoints=["http://127.0.0.1:9"])
    spec = inline_spec_for("http://127.0.0.1:9/v1/chat/completions")
    spec["metric_params"]["judge_llm"].update(max_retries=0, request_timeout=2)
    job = jobs.create(spec)
    with pytest.raises(
        BackendError, match=r"Every score failed on a model call.*127\.0\.0\.1:9.*endpoint URLs"
    ):
        job.run()
    assert job.status() == "failed" and "127.0.0.1:9" in job.info()["error"]
    # the per-sample reasons are kept for inspection
    rows = json.loads((job.directory / "results" / "job_results.json").read_text())["rows"]
    assert all(r["faithfulness_reason"].startswith("backend_error") for r in rows)


def test_hugging_face_dataset_offline_gives_a_clear_error(jobs, judge_server, secrets, monkeypatch, tmp_path):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "empty-hub"))
    secrets.set("hf-token", SECRET, endpoints=["https://huggingface.co"])
    spec = nemo_spec("huggingface_private")
    spec["metric_params"]["judge_llm"]["model"] = {"url": judge_server.url}
    job = jobs.create(spec)
    with pytest.raises(DataError) as info:
        job.run()
    message = str(info.value)
    assert "'dataset.json' from the Hugging Face dataset repository 'my-org/private-dataset'" in message
    assert "HF_HUB_OFFLINE" in message and "local path" in message
    assert SECRET not in message and SECRET not in (job.directory / "job.log").read_text()


def test_hugging_face_dataset_from_a_prepared_hub_cache(jobs, judge_server, monkeypatch, tmp_path):
    # The hub cache layout huggingface_hub itself writes: refs/main names a snapshot folder.
    repo = tmp_path / "hub" / "datasets--NotYours--test_ragas_dataset"
    commit = "0123456789abcdef0123456789abcdef01234567"
    (repo / "snapshots" / commit).mkdir(parents=True)
    (repo / "refs").mkdir()
    (repo / "refs" / "main").write_text(commit)
    data = nemo_spec("inline")["dataset"]["rows"][0]
    (repo / "snapshots" / commit / "dataset.json").write_text(json.dumps(data), encoding="utf-8")
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hub"))
    spec = nemo_spec("huggingface_public")
    spec["metric_params"]["judge_llm"]["model"] = {"url": judge_server.url, "name": "judge"}
    job = jobs.create(spec).run()
    assert job.results()["aggregate_scores"][0]["count"] == 2


def test_a_file_dataset_with_long_contexts_is_truncated(jobs, judge_server, tmp_path):
    contexts = ["x" * 70_000 + " The capital of France is Paris."]
    path = tmp_path / "long.json"
    path.write_text(
        json.dumps(
            {"question": ["Capital?"], "contexts": [contexts], "answer": ["The capital of France is Paris."]}
        )
    )
    spec = inline_spec_for(judge_server.url, secret=None)
    spec["dataset"] = str(path)
    spec["metric_params"]["truncate_long_documents"] = "start"
    job = jobs.create(spec).run()
    [row] = job.results()["rows"]
    assert len(row["retrieved_contexts"][0]) == 65_535
    # the end survived, so the claim is still found in the context
    assert row["faithfulness"] == pytest.approx(SUPPORT_RULE_YES)
    verdicts = [b["messages"][-1]["content"] for b in judge_server.classify_bodies()]
    verdict = [c for c in verdicts if "x" * 1000 in c]  # the sample's, not the calibration requests
    assert len(verdict) == 1 and "x" * 65_536 not in verdict[0]


def test_get_list_and_unknown_ids(jobs, judge_server):
    a = jobs.create(inline_spec_for(judge_server.url, secret=None), name="first run")
    b = jobs.create(inline_spec_for(judge_server.url, secret=None), job_id="my-job")
    assert a.id.startswith("first-run-") and b.id == "my-job"
    assert [j.id for j in jobs.list()] == [a.id, b.id]
    with pytest.raises(ConfigError, match="Did you mean 'my-job'"):
        jobs.get("my-jb")
    with pytest.raises(ConfigError, match="exists already"):
        jobs.create(inline_spec_for(judge_server.url, secret=None), job_id="my-job")
    with pytest.raises(ConfigError, match="not valid"):
        jobs.create(inline_spec_for(judge_server.url, secret=None), job_id="../x")


def test_jobs_share_a_cache_dir(jobs, judge_server, tmp_path):
    shared = tmp_path / "shared-cache"
    spec = inline_spec_for(judge_server.url, secret=None)
    jobs.create(spec, cache_dir=shared).run()
    sent = len(judge_server.server.requests)
    second = jobs.create(spec, cache_dir=shared).run()
    assert len(judge_server.server.requests) == sent  # everything answered from the shared cache
    hits = 4 + CALIBRATION_REQUESTS
    assert second.progress()["cache_hits"] == hits and not (second.directory / "cache").exists()


def test_a_job_killed_mid_run_resumes_from_its_cache(jobs, judge_server):
    judge_server.hold_classify.set()  # round 2 (verdicts) hangs: the job is killed there
    job = jobs.create(inline_spec_for(judge_server.url, secret=None)).start()
    _wait_for(lambda: job.progress().get("rounds", 0) >= 1)  # round 1 answered and committed
    _wait_for(lambda: len(judge_server.classify_bodies()) >= 2)  # both samples' statements answered
    os.kill(job.info()["pid"], signal.SIGKILL)
    job.wait(timeout=30)
    assert job.status() == "failed" and "ended without finishing" in job.info()["error"]
    statements_sent = len(judge_server.generate_bodies())
    assert statements_sent == 2

    judge_server.hold_classify.clear()
    resumed = Jobs(jobs.root, secrets=jobs.secrets).get(job.id).run()
    assert resumed.status() == "completed" and resumed.info()["runs"] == 2
    assert len(judge_server.generate_bodies()) == statements_sent  # not re-sent
    progress = resumed.progress()
    # the calibration requests are verdict requests too: held, then sent on resume
    assert progress["cache_hits"] == 2 and progress["sent"] == 2 + CALIBRATION_REQUESTS
    assert resumed.results()["aggregate_scores"][0]["count"] == 2


def test_cancel_stops_a_background_job(jobs, judge_server):
    judge_server.hold_classify.set()
    job = jobs.create(inline_spec_for(judge_server.url, secret=None)).start()
    _wait_for(lambda: len(judge_server.classify_bodies()) >= 1)
    try:
        assert job.cancel(timeout=30) == "cancelled"
    finally:
        judge_server.hold_classify.clear()
    _wait_for(lambda: job.returncode is not None, timeout=30)
    assert job.returncode == 130
    assert job.info()["finished"] and "cancelled" in (job.directory / "job.log").read_text()
    assert job.cancel() == "cancelled"  # idempotent


def test_a_pending_job_can_be_cancelled(jobs, judge_server):
    job = jobs.create(inline_spec_for(judge_server.url, secret=None))
    assert job.cancel() == "cancelled"
    assert judge_server.server.requests == []


def test_a_dataset_without_contexts_needs_a_retriever(jobs, judge_server):
    spec = inline_spec_for(judge_server.url, secret=None)
    rows = copy.deepcopy(spec["dataset"]["rows"])
    del rows[0]["contexts"]
    spec["dataset"] = {"rows": rows}
    del spec["retriever_pipeline"]
    with pytest.raises(ConfigError, match=r"2 sample\(s\) have no contexts.*add `retriever_pipeline`"):
        jobs.create(spec).run()
    assert judge_server.server.requests == []


def test_a_job_being_started_reads_as_pending_from_other_threads(jobs, judge_server, monkeypatch):
    """The server answers status requests on other threads while a worker starts the job. The worker's
    files must never be seen half-written: an empty background.pid made `info()` crash (a 500)."""
    job = jobs.create(inline_spec_for(judge_server.url, secret=None))
    write_text = Path.write_text

    def slow_write_text(self, data, *args, **kwargs):
        with self.open("w", encoding=kwargs.get("encoding")):
            time.sleep(0.3)  # a slow disk: the file exists, empty, for a while
        return write_text(self, data, *args, **kwargs)

    seen, errors, started = [], [], threading.Event()

    def poll() -> None:
        reader = Jobs(jobs.root, secrets=jobs.secrets).get(job.id)
        while not started.is_set():
            try:
                seen.append(reader.info()["status"])
            except Exception as e:  # what a request thread would have turned into a 500
                errors.append(e)
                return

    thread = threading.Thread(target=poll)
    thread.start()
    monkeypatch.setattr(Path, "write_text", slow_write_text)
    try:
        job.start()
    finally:
        monkeypatch.undo()
        started.set()
        thread.join()
    assert errors == [] and set(seen) <= {"pending", "running"}
    assert job.wait(timeout=60).status() == "completed"


def test_a_job_started_again_never_reads_as_failed_by_its_last_process(jobs, judge_server, monkeypatch):
    """A job run in the background before (a server restart resumes it so) has the last process's pid on
    file. Another thread reading the job while it is started again, before the new pid is written, saw
    "pending" beside that dead pid and failed the job ("ended before the job started")."""
    job = jobs.create(inline_spec_for(judge_server.url, secret=None)).start().wait(timeout=60)
    assert job.status() == "completed"
    status = job.directory / "status.json"  # cancelled, as a server stopped mid-run leaves it to resume
    status.write_text(json.dumps({**json.loads(status.read_text()), "status": "cancelled"}))
    seen = []
    popen = runner.subprocess.Popen

    def read_then_spawn(*args, **kwargs):
        seen.append(Jobs(jobs.root, secrets=jobs.secrets).get(job.id).info()["status"])
        return popen(*args, **kwargs)

    monkeypatch.setattr(runner.subprocess, "Popen", read_then_spawn)
    job.start()
    monkeypatch.undo()
    assert seen == ["pending"]
    assert job.wait(timeout=60).status() == "completed" and job.info()["runs"] == 2


def test_an_empty_background_pid_reads_as_not_started_yet(jobs, judge_server):
    job = jobs.create(inline_spec_for(judge_server.url, secret=None))
    status = job.directory / "status.json"
    status.write_text(json.dumps({**json.loads(status.read_text()), "host": socket.gethostname()}))
    (job.directory / "background.pid").write_text("")
    assert job.status() == "pending"


def test_a_file_dataset_is_read_as_the_evaluation_goes_with_the_inline_results(jobs, judge_server, tmp_path):
    """A data file that needs nothing done to it is not loaded whole: evaluate() streams it, and the job's
    results equal those of the same rows given inline."""
    spec = inline_spec_for(judge_server.url, secret=None)
    columns = spec["dataset"]["rows"][0]
    path = tmp_path / "data.jsonl"
    with path.open("w", encoding="utf-8") as f:
        for i in range(len(columns["question"])):
            f.write(json.dumps({key: values[i] for key, values in columns.items()}) + "\n")
    inline = jobs.create(spec).run()
    streamed = jobs.create({**spec, "dataset": str(path)}).run()
    assert "(read as the evaluation goes)" in (streamed.directory / "job.log").read_text()
    assert "(read as the evaluation goes)" not in (inline.directory / "job.log").read_text()
    assert streamed.results() == inline.results()
    assert streamed.progress()["scores_done"] == streamed.progress()["scores_total"] == 2


def test_a_job_scores_the_users_criterion_beside_a_built_in_metric(jobs, judge_server, rule_judge):
    spec = inline_spec_for(judge_server.url, secret=None)
    data = spec["dataset"]["rows"][0]
    data["answer"][0] = "The Eiffel Tower is 330 metres tall."  # a digit: the rule judge's criterion holds
    figures = {"name": "gives_figures", "definition": "Does the answer give a figure?", "reads": ["answer"]}
    spec["metrics"] = [{"criterion": figures}]
    got = jobs.create(spec).run().results()
    criterion = ascend_eval.metrics.Criterion(**figures)
    metrics = [spec["metric"], criterion]
    direct = ascend_eval.evaluate(data, metrics, judge=rule_judge, cache_dir=False, progress=False)
    assert [a["name"] for a in got["aggregate_scores"]] == direct.metrics == ["faithfulness", "gives_figures"]
    assert got["rows"] == json.loads(json.dumps(direct.rows()))
    expected = [0.8 if any(c.isdigit() for c in answer) else 0.3 for answer in data["answer"]]
    assert [r["gives_figures"] for r in got["rows"]] == pytest.approx(expected)


def test_a_bad_criterion_in_a_spec_is_refused_before_the_job_runs(jobs, judge_server):
    spec = inline_spec_for(judge_server.url, secret=None)
    spec["metrics"] = [{"criterion": {"name": "x", "definition": ""}}]
    with pytest.raises(ConfigError, match="definition must be a non-empty string"):
        jobs.create(spec)
    assert judge_server.generate_bodies() == []
