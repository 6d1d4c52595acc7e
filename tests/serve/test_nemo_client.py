"""The real `nemo-microservices` client against `ascend-eval serve` on 127.0.0.1, with a scripted loopback
judge: a RAG evaluation job created, polled to completion and read back (equal to the CLI's results for
the same data), a restart mid-job that the job survives, and the 401/404/409/413/422 answers."""

from __future__ import annotations

import io
import json
import os
import signal
import subprocess
import sys
import zipfile

import httpx
import pytest

from tests.conftest import SUPPORT_RULE_YES
from tests.serve.conftest import ROOT, TOKEN, wait_for

nemo = pytest.importorskip("nemo_microservices")

SECRET = "sk-judge-5e6f7a8b-never-store-me"
JUDGE_NAME = "meta/llama-3.1-8b-instruct"
DATA = {
    "question": ["What is the capital of France?", "Who wrote Romeo and Juliet?"],
    "contexts": [["Paris is the capital city of France."], ["William Shakespeare wrote Romeo and Juliet."]],
    # one of the two first-sample claims occurs in its context (the rules judge supports it)
    "answer": ["Paris is the capital city of France. It has a big tower.", "Shakespeare wrote it."],
    "ground_truth": ["Paris", "William Shakespeare"],
}


def rag_config(judge_url: str, *, api_key: str | None = SECRET) -> dict:
    endpoint = {"url": judge_url, "model_id": JUDGE_NAME}
    if api_key:
        endpoint["api_key"] = api_key
    return {
        "type": "rag",
        "tasks": {
            "my-ragas-task": {
                "type": "ragas",
                "metrics": {"rag_faithfulness": {"type": "faithfulness"}},
                "params": {"judge_llm": {"api_endpoint": endpoint}, "judge_max_workers": 2},
            }
        },
    }


def cached_outputs(path) -> dict:
    return {"type": "cached_outputs", "cached_outputs": {"files_url": f"file://{path}"}}


def cli_results(tmp_path, data_path, judge_url) -> dict:
    """The same data and judge through `ascend-eval job run`, read back with `job results --json`."""
    spec = {
        "metric": "faithfulness",
        "dataset": str(data_path),
        "metric_params": {
            "judge_llm": {"model": {"url": judge_url, "name": JUDGE_NAME, "api_key_secret": "judge-key"}}
        },
    }
    (tmp_path / "spec.json").write_text(json.dumps(spec))
    env = {**os.environ, "ASCEND_EVAL_SECRET_JUDGE_KEY": SECRET, "HF_HUB_OFFLINE": "1"}
    env["ASCEND_EVAL_ENDPOINTS_JUDGE_KEY"] = judge_url  # where the variable's value may be sent
    base = [sys.executable, "-m", "ascend_eval.cli.main", "job", "--jobs-dir", str(tmp_path / "cli-jobs")]
    run = subprocess.run(
        [*base, "run", str(tmp_path / "spec.json"), "--id", "cli"],
        env=env,
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert run.returncode == 0, run.stderr
    out = subprocess.run(
        [*base, "results", "cli", "--json"], env=env, cwd=ROOT, capture_output=True, text=True, timeout=60
    )
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)


def finished(client, job_id: str):
    job = client.evaluation.jobs.retrieve(job_id)
    return job if job.status in ("completed", "failed", "cancelled") else None


def test_a_rag_job_through_the_nemo_client_equals_the_cli(client, server, judge_server, tmp_path):
    data_path = tmp_path / "data.json"
    data_path.write_text(json.dumps(DATA))
    job = client.evaluation.jobs.create(
        config=rag_config(judge_server.url), target=cached_outputs(data_path), namespace="my-org"
    )
    assert job.id and job.status in ("pending", "running") and job.namespace == "my-org"
    assert job.config.tasks["my-ragas-task"].metrics["rag_faithfulness"].type == "faithfulness"
    done = wait_for(lambda: finished(client, job.id), what="the job to finish")
    assert done.status == "completed", done.status_details

    status = client.evaluation.jobs.status(job.id)
    assert status.progress == 100.0 and status.task_status == {"my-ragas-task": "completed"}
    result = client.evaluation.jobs.results(job.id)
    score = result.tasks["my-ragas-task"].metrics["rag_faithfulness"].scores["faithfulness"]
    assert result.job == job.id and 0 < score.value < 1 and score.stats.count == 2

    cli = cli_results(tmp_path, data_path, judge_server.url)
    assert result.custom_fields["aggregate_scores"] == cli["aggregate_scores"]
    assert score.value == cli["aggregate_scores"][0]["mean"] and score.stats.nan_count == 0
    archive = zipfile.ZipFile(io.BytesIO(client.evaluation.jobs.download_results(job.id).read()))
    assert {"spec.json", "status.json", "job.log", "results/job_results.json"} <= set(archive.namelist())
    assert json.loads(archive.read("results/job_results.json"))["rows"] == cli["rows"]

    # the key in the body reached the judge, and is in no file of the job (only in the secrets store)
    assert {r.headers.get("authorization") for r in judge_server.server.requests} == {f"Bearer {SECRET}"}
    for path in server.jobs_dir.rglob("*"):
        if path.is_file():
            assert SECRET.encode() not in path.read_bytes(), path
    assert client.evaluation.jobs.retrieve(job.id).target.cached_outputs.files_url.startswith("file://")
    assert "scores" in client.evaluation.jobs.download_logs(job.id)
    assert job.id in [j.id for j in client.evaluation.jobs.list().data]

    # the same job through the v2 API
    v2 = client.v2.evaluation.jobs.retrieve(job.id)
    assert v2.status == "completed" and v2.spec.config.type == "rag"
    assert client.v2.evaluation.jobs.status.retrieve(job.id).steps[0].tasks[0].id == "my-ragas-task"
    scores = client.v2.evaluation.jobs.results.evaluation_results.retrieve(job.id)
    assert (
        scores.tasks["my-ragas-task"].metrics["rag_faithfulness"].scores["faithfulness"].value == score.value
    )
    assert [r.result_name for r in client.v2.evaluation.jobs.results.list(job.id).data] == [
        "evaluation-results",
        "artifacts",
    ]
    logs = list(client.v2.evaluation.jobs.logs.list(job.id, limit=3))
    assert len(logs) > 3 and all(entry.job_id == job.id for entry in logs)  # paged through the cursor

    client.evaluation.jobs.delete(job.id)
    with pytest.raises(nemo.NotFoundError):
        client.evaluation.jobs.retrieve(job.id)
    assert not (server.secrets_dir / f"{job.id}.judge-llm").exists()


def test_a_v2_job_in_the_seed_shape_runs(client, judge_server):
    spec = {
        "metric": "system/rag-faithfulness",
        "dataset": {"rows": [DATA]},
        "metric_params": {"judge_llm": {"model": {"url": judge_server.url, "name": JUDGE_NAME}}},
    }
    job = client.v2.evaluation.jobs.create(spec=spec, name="seed-shaped")
    assert job.name == "seed-shaped"
    wait_for(lambda: client.v2.evaluation.jobs.retrieve(job.id).status == "completed", what="completion")
    scores = client.v2.evaluation.jobs.results.evaluation_results.retrieve(job.id)
    assert scores.tasks["rag"].metrics["system/rag-faithfulness"].scores["faithfulness"].stats.count == 2


def test_a_job_survives_a_server_restart_and_resumes_from_its_cache(client, server, judge_server):
    judge_server.hold_classify.set()  # round 2 (verdicts) hangs: the server is restarted there
    job = client.v2.evaluation.jobs.create(
        spec={
            "config": rag_config(judge_server.url, api_key=None),
            "target": {"type": "rows", "rows": [DATA]},
        }
    )
    # both samples' verdicts asked for, so both samples' statements were answered (and cached)
    wait_for(lambda: len(judge_server.classify_bodies()) >= 2, what="the verdict requests")
    assert client.v2.evaluation.jobs.retrieve(job.id).status == "active"
    statements = len(judge_server.generate_bodies())
    assert statements == 2

    assert server.stop() == 0  # SIGTERM: the server stops its job, which stays resumable
    status = json.loads((server.jobs_dir / job.id / "status.json").read_text())
    assert status["status"] == "cancelled"
    judge_server.hold_classify.clear()
    server.start()
    done = wait_for(lambda: finished(client, job.id), what="the resumed job")
    assert done.status == "completed", done.status_details
    assert len(judge_server.generate_bodies()) == statements  # answered from the cache, not re-sent
    info = json.loads((server.jobs_dir / job.id / "status.json").read_text())
    assert info["runs"] == 2
    result = client.evaluation.jobs.results(job.id)
    assert result.tasks["my-ragas-task"].metrics["rag_faithfulness"].scores["faithfulness"].stats.count == 2


def test_a_job_whose_server_was_killed_is_waited_for(client, server, judge_server):
    judge_server.hold_classify.set()
    job = client.evaluation.jobs.create(
        config=rag_config(judge_server.url, api_key=None), target={"type": "rows", "rows": [DATA]}
    )
    wait_for(lambda: judge_server.classify_bodies(), what="the verdict requests")
    server.stop(signal.SIGKILL)  # the job's process lives on, in a session of its own
    server.start()
    judge_server.hold_classify.clear()
    done = wait_for(lambda: finished(client, job.id), what="the job")
    assert done.status == "completed"
    info = json.loads((server.jobs_dir / job.id / "status.json").read_text())
    assert info["runs"] == 1  # the same process finished it


def test_cancel_a_running_job(client, judge_server):
    judge_server.hold_classify.set()
    try:
        job = client.evaluation.jobs.create(
            config=rag_config(judge_server.url, api_key=None), target={"type": "rows", "rows": [DATA]}
        )
        wait_for(lambda: judge_server.classify_bodies(), what="the verdict requests")
        client.evaluation.jobs.cancel(job.id)
    finally:
        judge_server.hold_classify.clear()
    assert wait_for(lambda: finished(client, job.id), what="cancelled").status == "cancelled"
    with pytest.raises(nemo.ConflictError) as error:
        client.evaluation.jobs.results(job.id)
    assert error.value.response.headers["x-should-retry"] == "false"  # the client does not retry it


def test_401_without_the_token_and_open_docs(server, judge_server):
    assert httpx.get(server.url + "/v1/evaluation/jobs").status_code == 401
    wrong = httpx.get(server.url + "/v1/evaluation/jobs", headers=server.headers("nope"))
    assert wrong.status_code == 401 and wrong.headers["www-authenticate"] == "Bearer"
    assert httpx.get(server.url + "/v1/no-such-path").status_code == 401  # nothing answers unauthenticated
    from nemo_microservices import NeMoMicroservices

    anonymous = NeMoMicroservices(base_url=server.url, max_retries=0)
    with pytest.raises(nemo.AuthenticationError):
        anonymous.evaluation.jobs.list()
    openapi = httpx.get(server.url + "/openapi.json").json()
    assert {"/v1/evaluation/jobs", "/v2/evaluation/jobs/{job_id}/status", "/v1/secrets"} <= set(
        openapi["paths"]
    )
    assert httpx.get(server.url + "/docs").status_code == 200


def test_404_for_an_unknown_job(client):
    with pytest.raises(nemo.NotFoundError):
        client.evaluation.jobs.retrieve("eval-nope")
    with pytest.raises(nemo.NotFoundError):
        client.v2.evaluation.jobs.status.retrieve("../etc")


def _detail(error) -> list[dict]:
    return error.value.response.json()["detail"]


def test_422_names_the_field(client, server, judge_server, tmp_path):
    config = rag_config(judge_server.url)
    config["tasks"]["my-ragas-task"]["metrics"]["m"] = {"type": "faithfullness"}
    with pytest.raises(nemo.UnprocessableEntityError) as error:
        client.evaluation.jobs.create(config=config, target={"type": "rows", "rows": [DATA]})
    [item] = _detail(error)
    assert item["loc"] == ["body", "config", "tasks", "my-ragas-task", "metrics", "m", "type"]
    assert "Did you mean 'faithfulness'" in item["msg"]

    config = rag_config(judge_server.url)
    del config["tasks"]["my-ragas-task"]["params"]
    with pytest.raises(nemo.UnprocessableEntityError) as error:
        client.evaluation.jobs.create(config=config, target={"type": "rows", "rows": [DATA]})
    assert _detail(error)[0]["loc"] == ["body", "config", "tasks", "my-ragas-task", "params"]
    assert _detail(error)[0]["msg"].startswith("judge_llm is required")

    with pytest.raises(nemo.UnprocessableEntityError) as error:
        client.evaluation.jobs.create(config=rag_config(judge_server.url), target={"type": "model"})
    assert _detail(error)[0]["loc"] == ["body", "target", "type"]

    spec = {
        "metric": "faithfulness",
        "dataset": {"rows": [DATA]},
        "metric_params": {"judge_llm": {"model": {"url": judge_server.url}, "paralelism": 2}},
    }
    reply = httpx.post(server.url + "/v1/evaluation/jobs", json=spec, headers=server.headers())
    assert reply.status_code == 422
    [item] = reply.json()["detail"]
    assert (
        item["loc"] == ["body", "metric_params", "judge_llm"] and "Did you mean 'parallelism'" in item["msg"]
    )
    reply = httpx.post(server.url + "/v2/evaluation/jobs", json={"spek": {}}, headers=server.headers())
    assert reply.status_code == 422 and reply.json()["detail"][0]["loc"] == ["body", "spek"]
    reply = httpx.post(server.url + "/v1/evaluation/jobs", content=b"{not json", headers=server.headers())
    assert reply.status_code == 422
    assert list(server.jobs_dir.glob("*")) == []  # no job was made by any of them


def test_413_for_a_body_over_the_limit(server):
    big = {"metric": "faithfulness", "dataset": {"rows": [{"question": "q" * 1_100_000}]}}
    reply = httpx.post(server.url + "/v1/evaluation/jobs", json=big, headers=server.headers())
    assert reply.status_code == 413

    def chunks():  # no Content-Length: the bytes that arrive are counted
        yield b'{"metric": "faithfulness", "x": "'
        for _ in range(12):
            yield b"y" * 100_000

    reply = httpx.post(server.url + "/v1/evaluation/jobs", content=chunks(), headers=server.headers())
    assert reply.status_code == 413
    assert list(server.jobs_dir.glob("*")) == []


def test_secrets_create_list_delete(server):
    headers = server.headers()
    url = server.url + "/v1/secrets"
    body = {"name": "judge-api-key", "data": SECRET, "endpoints": ["https://integrate.api.nvidia.com"]}
    assert httpx.post(url, json=body, headers=headers).status_code == 200
    listed = httpx.get(url, headers=headers).json()["data"]
    assert {"name": "judge-api-key", "source": "file"} in listed and SECRET not in json.dumps(listed)
    assert (server.secrets_dir / "judge-api-key").stat().st_mode & 0o777 == 0o600
    bad = httpx.post(url, json={"name": "../x", "data": "v"}, headers=headers)
    assert bad.status_code == 422 and bad.json()["detail"][0]["loc"] == ["body", "name"]
    missing = httpx.post(url, json={"name": "k"}, headers=headers)
    assert missing.status_code == 422 and missing.json()["detail"][0]["loc"] == ["body", "data"]
    assert httpx.delete(url + "/judge-api-key", headers=headers).status_code == 204
    assert httpx.delete(url + "/judge-api-key", headers=headers).status_code == 404
    assert httpx.get(url, headers=headers).json()["data"] == []


def test_the_server_needs_a_token(tmp_path):
    env = {k: v for k, v in os.environ.items() if k != "ASCEND_EVAL_SERVE_TOKEN"}
    run = subprocess.run(
        [sys.executable, "-m", "ascend_eval.cli.main", "serve", "--secrets-dir", str(tmp_path / "s")],
        env=env,
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert run.returncode == 2 and "ascend-eval secrets set serve-token" in run.stderr
    assert TOKEN not in run.stderr


def test_the_example_script_runs(server, judge_server):
    env = {
        **os.environ,
        "NEMO_MICROSERVICES_BASE_URL": server.url,
        "NEMO_API_TOKEN": TOKEN,
        "JUDGE_URL": judge_server.url,
    }
    run = subprocess.run(
        [sys.executable, str(ROOT / "examples" / "nemo_client.py")],
        env=env,
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert run.returncode == 0, run.stdout + run.stderr
    assert "status: completed" in run.stdout and "faithfulness" in run.stdout


def test_a_rag_pipeline_target_retrieves_generates_and_judges(client, judge_server, tmp_path):
    pytest.importorskip("ascend_eval.pipeline")
    from tests.jobs.test_pipeline_jobs import CORPUS

    questions = tmp_path / "questions.json"
    questions.write_text(json.dumps({"question": DATA["question"], "ground_truth": DATA["ground_truth"]}))
    config = rag_config(judge_server.url, api_key=None)
    config["tasks"]["my-ragas-task"]["dataset"] = {"files_url": f"file://{questions}"}
    config["tasks"]["my-ragas-task"]["params"]["corpus"] = CORPUS  # ours: what the retriever searches
    embedder = {"api_endpoint": {"url": judge_server.server.url + "/v1", "model_id": "e5", "format": "nim"}}
    target = {
        "type": "rag",
        "rag": {
            "pipeline": {
                "model": {"api_endpoint": {"url": judge_server.url, "model_id": "rag-model"}},
                "retriever": {
                    "pipeline": {
                        "query_embedding_model": embedder,
                        "index_embedding_model": embedder,
                        "top_k": 1,
                    }
                },
            }
        },
    }
    job = client.evaluation.jobs.create(config=config, target=target)
    done = wait_for(lambda: finished(client, job.id), what="the pipeline job")
    assert done.status == "completed", done.status_details
    score = client.evaluation.jobs.results(job.id).tasks["my-ragas-task"].metrics["rag_faithfulness"]
    # each answer is its retrieved passage: the rule judge's calibrated "yes" (tests/conftest.py)
    assert score.scores["faithfulness"].value == pytest.approx(SUPPORT_RULE_YES)
    assert judge_server.server.bodies("/v1/embeddings")
    assert {b["model"] for b in judge_server.generate_bodies()} >= {"rag-model", JUDGE_NAME}
