"""The service tried as a hostile user would, two more items.

1. A lone surrogate in a REST body (JSON's "\\ud800" escape decodes to one) in `namespace`,
   `custom_fields`, v2 `name`, an `api_key` or a dataset row was a 500, and by then the job's folder (and
   the body's API key, as a secret) could already be on disk: GET and DELETE answered 404 for that job,
   `ascend-eval job list` showed it pending forever, and the key stayed stored. The whole body is now
   checked before anything is written (422 naming the field), and creating a job is all-or-nothing: what
   was made before a later step failed is removed again.
2. One damaged job record stopped the whole service: a torn `status.json` (JSONDecodeError) or one holding
   `[]` (AttributeError) made `ascend-eval serve` fail at startup and `ascend-eval job list` exit 1. A
   damaged record (status.json, server.json, spec.json) is now that job's error, naming the file and what
   is wrong with it; every other job stays listed and usable. A damaged progress.json only loses the
   progress counts.
"""

from __future__ import annotations

import copy
import json
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from ascend_eval.cli.main import main
from tests.jobs.conftest import RuleJudgeServer, inline_spec_for
from tests.models.loopback_server import LoopbackServer
from tests.serve.conftest import Server, wait_for

pytest.importorskip("fastapi", reason="ascend-eval serve needs the serve extra")
pytest.importorskip("uvicorn", reason="ascend-eval serve needs the serve extra")

LONE = "\ud800"
"""What JSON's "\\ud800" escape decodes to: half of a surrogate pair, which UTF-8 cannot encode."""
KEY = "sk-body-key-4c3b2a19"
ROWS = [
    {
        "question": "What is the capital of France?",
        "contexts": ["Paris is the capital city of France."],
        "answer": "Paris is the capital city of France.",
        "ground_truth": "Paris",
    }
]
FINISHED = ("completed", "failed", "cancelled", "error")


def _config(judge_url: str, api_key: str | None = KEY) -> dict[str, Any]:
    endpoint = {"url": judge_url, "model_id": "judge"}
    if api_key is not None:
        endpoint["api_key"] = api_key
    return {
        "type": "rag",
        "tasks": {
            "t": {
                "type": "ragas",
                "metrics": {"f": {"type": "faithfulness"}},
                "params": {"judge_llm": {"api_endpoint": endpoint}},
            }
        },
    }


def _post(server: Server, path: str, body: Any) -> httpx.Response:
    # json.dumps escapes the surrogate as "\ud800", as a client's JSON encoder would send it
    content = json.dumps(body).encode("ascii")
    headers = {**server.headers(), "Content-Type": "application/json"}
    return httpx.post(server.url + path, content=content, headers=headers, timeout=30)


def _files(folder: Path) -> list[str]:
    return sorted(str(p.relative_to(folder)) for p in folder.rglob("*")) if folder.is_dir() else []


def _job_list(jobs_dir: Path, capsys: pytest.CaptureFixture[str], *flags: str) -> str:
    capsys.readouterr()
    assert main(["job", "--jobs-dir", str(jobs_dir), "list", *flags]) == 0
    return capsys.readouterr().out


# --- 1. a lone surrogate in a REST body ----------------------------------------------------------------

JUDGE = "http://127.0.0.1:9/v1/chat/completions"  # never called: every body below is refused
ENDPOINT = ["config", "tasks", "t", "params", "judge_llm", "api_endpoint"]


def _v1(**extra: Any) -> dict[str, Any]:
    return {"config": _config(JUDGE), "target": {"type": "rows", "rows": copy.deepcopy(ROWS)}, **extra}


def _v2(**extra: Any) -> dict[str, Any]:
    return {"spec": _v1(), **extra}


def _seed() -> dict[str, Any]:
    return inline_spec_for(JUDGE, secret=None)


def _set(body: dict[str, Any], path: list[str | int], value: Any) -> dict[str, Any]:
    item = body
    for part in path[:-1]:
        item = item[part]
    item[path[-1]] = value
    return body


# (route, body with one lone surrogate, where the 422 must say it is)
SURROGATES = {
    "v1 namespace": ("/v1/evaluation/jobs", _v1(namespace="team" + LONE), ["namespace"]),
    "v1 project": ("/v1/evaluation/jobs", _v1(project=LONE), ["project"]),
    "v1 description": ("/v1/evaluation/jobs", _v1(description="a" + LONE + "b"), ["description"]),
    "v1 custom_fields value": (
        "/v1/evaluation/jobs",
        _v1(custom_fields={"x": "ok" + LONE}),
        ["custom_fields", "x"],
    ),
    "v1 custom_fields key": (
        "/v1/evaluation/jobs",
        _v1(custom_fields={"k" + LONE: 1}),
        ["custom_fields", "k\\ud800"],
    ),
    "v1 api_key": (
        "/v1/evaluation/jobs",
        _set(_v1(), [*ENDPOINT, "api_key"], "sk-" + LONE),
        [*ENDPOINT, "api_key"],
    ),
    "v1 model_id": (
        "/v1/evaluation/jobs",
        _set(_v1(), [*ENDPOINT, "model_id"], "judge" + LONE),
        [*ENDPOINT, "model_id"],
    ),
    "v1 row": (
        "/v1/evaluation/jobs",
        _set(_v1(), ["target", "rows", 0, "question"], "Where" + LONE),
        ["target", "rows", 0, "question"],
    ),
    "v1 seed-shaped row": (
        "/v1/evaluation/jobs",
        _set(_seed(), ["dataset", "rows", 0, "answer", 1], LONE),
        ["dataset", "rows", 0, "answer", 1],
    ),
    "v2 name": ("/v2/evaluation/jobs", _v2(name="job" + LONE), ["name"]),
    "v2 namespace": ("/v2/evaluation/jobs", _v2(namespace=LONE), ["namespace"]),
    "v2 custom_fields": (
        "/v2/evaluation/jobs",
        _v2(custom_fields={"x": [LONE]}),
        ["custom_fields", "x", 0],
    ),
    "v2 api_key": (
        "/v2/evaluation/jobs",
        _set(_v2(), ["spec", *ENDPOINT, "api_key"], LONE),
        ["spec", *ENDPOINT, "api_key"],
    ),
    "v2 row": (
        "/v2/evaluation/jobs",
        _set(_v2(), ["spec", "target", "rows", 0, "contexts", 0], LONE),
        ["spec", "target", "rows", 0, "contexts", 0],
    ),
    "v2 seed-shaped row": (
        "/v2/evaluation/jobs",
        {"name": "seed", "spec": _set(_seed(), ["dataset", "rows", 0, "question", 0], LONE)},
        ["spec", "dataset", "rows", 0, "question", 0],
    ),
}


@pytest.fixture(scope="module")
def rest(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    state = tmp_path_factory.mktemp("surrogates")
    server = Server(state).start()
    try:
        yield server
    finally:
        server.stop()


@pytest.mark.parametrize("case", list(SURROGATES))
def test_a_lone_surrogate_anywhere_in_a_job_body_is_a_422_naming_the_field(rest, case, capsys):
    route, body, where = SURROGATES[case]
    jobs_before, secrets_before = _files(rest.jobs_dir), _files(rest.secrets_dir)
    listed_before = _job_list(rest.jobs_dir, capsys, "--json")

    reply = _post(rest, route, body)

    assert reply.status_code == 422, reply.text
    [error] = reply.json()["detail"]
    assert error["loc"] == ["body", *where], error
    dotted = ".".join(map(str, where))
    assert dotted in error["msg"] and "lone surrogate" in error["msg"], error["msg"]
    assert "'\\ud800'" in error["msg"] and "encode('utf-8', 'replace')" in error["msg"]  # what, and the fix
    assert KEY not in reply.text
    # nothing was written: no job folder, no secret, and every listing is as it was
    assert _files(rest.jobs_dir) == jobs_before
    assert _files(rest.secrets_dir) == secrets_before
    assert _job_list(rest.jobs_dir, capsys, "--json") == listed_before
    for api in ("v1", "v2"):
        listed = httpx.get(f"{rest.url}/{api}/evaluation/jobs", headers=rest.headers(), timeout=30)
        assert listed.status_code == 200
        assert listed.json()["pagination"]["total_results"] == len(json.loads(listed_before))


def test_the_same_bodies_without_the_surrogate_are_jobs(rest):
    """The bodies above are refused for their surrogate alone: without it, each is a job."""
    for route, body in (
        ("/v1/evaluation/jobs", _v1(namespace="team", custom_fields={"x": "ok"})),
        ("/v2/evaluation/jobs", _v2(name="job", custom_fields={"x": ["ok"]})),
        ("/v1/evaluation/jobs", _seed()),
    ):
        reply = _post(rest, route, body)
        assert reply.status_code == 200, reply.text
        job_id = reply.json()["id"]
        assert (rest.jobs_dir / job_id / "server.json").is_file()
        cancelled = _post(rest, f"/v1/evaluation/jobs/{job_id}/cancel", {})
        assert cancelled.status_code == 200, cancelled.text
        deleted = httpx.delete(f"{rest.url}/v1/evaluation/jobs/{job_id}", headers=rest.headers())
        assert deleted.status_code == 204, deleted.text
        assert not (rest.jobs_dir / job_id).exists()
    assert [p for p in _files(rest.secrets_dir) if "eval-" in p] == []


def test_a_lone_surrogate_in_a_posted_secret_is_a_422(rest):
    before = _files(rest.secrets_dir)
    for body, where in (
        ({"name": "k", "data": "sk-" + LONE, "endpoints": [JUDGE]}, "data"),
        ({"name": "k", "data": "sk", "endpoints": ["http://127.0.0.1:9/" + LONE]}, "endpoints.0"),
    ):
        reply = _post(rest, "/v1/secrets", body)
        assert reply.status_code == 422, reply.text
        message = reply.json()["detail"][0]["msg"]
        assert "lone surrogate" in message and where in message, message
        assert "sk-" not in reply.text  # the value is not echoed back
    assert _files(rest.secrets_dir) == before


def test_a_job_that_fails_after_its_folder_was_made_leaves_nothing_behind(tmp_path, monkeypatch):
    """All or nothing: a write that fails after the job's folder and its key exist (a full disk) removes
    both again, instead of leaving a job no route can see and a key no job deletes."""
    from ascend_eval.serve.service import Service, Settings

    service = Service(Settings(jobs_dir=tmp_path / "jobs", token="t", secrets_dir=tmp_path / "secrets"))

    def full(job_id: str) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(service.queue, "submit", full)
    with pytest.raises(OSError, match="No space left"):
        service.create(_v1(), "v1")
    assert _files(tmp_path / "jobs") == []
    assert [p for p in _files(tmp_path / "secrets") if "eval-" in p] == []


def test_a_job_whose_status_cannot_be_written_leaves_no_folder(tmp_path, monkeypatch):
    from ascend_eval.jobs import Jobs, runner

    def full(path: Path, data: Any) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(runner, "_write_json", full)
    with pytest.raises(OSError, match="No space left"):
        Jobs(tmp_path / "jobs").create(_seed(), job_id="full")
    assert _files(tmp_path / "jobs") == []


# --- 2. one damaged job record -------------------------------------------------------------------------


@pytest.fixture(scope="module")
def made(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, str, str]]:
    """Two completed jobs of a server, which is stopped again: `good` (NeMo's config + target) and `bad`
    (a seed-shaped spec, so that its spec.json is read too). Each test damages a copy."""
    state = tmp_path_factory.mktemp("two-jobs")
    with LoopbackServer() as loopback:
        judge = RuleJudgeServer(loopback)
        server = Server(state).start()
        try:
            good = _post(server, "/v1/evaluation/jobs", {**_v1(), "config": _config(judge.url, None)})
            bad = _post(server, "/v1/evaluation/jobs", inline_spec_for(judge.url, secret=None))
            for reply in (good, bad):
                assert reply.status_code == 200, reply.text
            ids = [reply.json()["id"] for reply in (good, bad)]
            for job_id in ids:
                done = wait_for(lambda job_id=job_id: _finished(server, job_id), what=f"job {job_id}")
                assert done["status"] == "completed", done
        finally:
            server.stop()
    yield state, ids[0], ids[1]


def _finished(server: Server, job_id: str) -> dict | None:
    job = httpx.get(f"{server.url}/v1/evaluation/jobs/{job_id}", headers=server.headers(), timeout=30).json()
    return job if job["status"] in FINISHED else None


TORN = '{"id": "eval-0", "status": "compl'
# (file, what is written there, what the message says is wrong)
DAMAGES = {
    "torn status.json": ("status.json", TORN, "not valid JSON"),
    "status.json holding []": ("status.json", "[]", "an array"),
    "status.json holding null": ("status.json", "null", "null"),
    "status.json holding a number": ("status.json", "42", "a number"),
    "status.json with an unknown status": ("status.json", '{"status": "done"}', "'done'"),
    "status.json not UTF-8": ("status.json", b'{"status": "\xff"}', "UTF-8"),
    "torn server.json": ("server.json", TORN, "not valid JSON"),
    "server.json holding []": ("server.json", "[]", "an array"),
    "server.json with a list of metrics": ("server.json", '{"shape": "spec", "metrics": []}', "'metrics'"),
    "torn spec.json": ("spec.json", TORN, "not valid JSON"),
    "spec.json holding []": ("spec.json", "[]", "object"),
}


@pytest.fixture
def damaged(made, tmp_path, request) -> tuple[Path, str, str]:
    pristine, good, bad = made
    state = tmp_path / "serve"
    shutil.copytree(pristine, state)
    return state, good, bad


def _damage(state: Path, job_id: str, file: str, content: str | bytes) -> Path:
    path = state / "jobs" / job_id / file
    assert path.is_file()
    if isinstance(content, bytes):
        path.write_bytes(content)
    else:
        path.write_text(content, encoding="utf-8")
    return path


@pytest.mark.parametrize("case", list(DAMAGES))
def test_one_damaged_job_record_is_that_jobs_error_and_the_rest_still_works(damaged, case, capsys):
    state, good, bad = damaged
    file, content, wrong = DAMAGES[case]
    path = _damage(state, bad, file, content)

    # `ascend-eval job list`: exit 0, both jobs, the damaged one as an error that says where and what
    # (server.json and spec.json are the server's: the runner's own record is intact, so list shows it)
    jobs_dir = state / "jobs"
    lines = {line.split()[0]: line for line in _job_list(jobs_dir, capsys).splitlines()}
    assert set(lines) == {good, bad}
    assert lines[good].split()[1] == "completed"
    listed = {job["id"]: job for job in json.loads(_job_list(jobs_dir, capsys, "--json"))}
    if file == "status.json":
        assert lines[bad].split()[1] == "error"
        assert str(path) in listed[bad]["error"] and wrong in listed[bad]["error"], listed[bad]
        capsys.readouterr()
        assert main(["job", "--jobs-dir", str(jobs_dir), "status", bad]) == 0
        assert str(path) in capsys.readouterr().out
        assert main(["job", "--jobs-dir", str(jobs_dir), "results", bad]) == 2
        assert wrong in capsys.readouterr().err
        assert main(["job", "--jobs-dir", str(jobs_dir), "run", "--resume", bad]) == 2  # refused, not run
        assert str(path) in capsys.readouterr().err
        assert path.read_bytes() == (content if isinstance(content, bytes) else content.encode())

    # `ascend-eval serve` starts, lists both, and the good job is usable as before
    server = Server(state).start()
    try:
        headers = server.headers()
        for api in ("v1", "v2"):
            page = httpx.get(f"{server.url}/{api}/evaluation/jobs", headers=headers, timeout=30)
            assert page.status_code == 200, page.text
            shown = {job["id"]: job for job in page.json()["data"]}
            assert set(shown) == {good, bad}
            assert shown[good]["status"] == "completed"
            assert shown[bad]["status"] == ("failed" if api == "v1" else "error")
        v1 = httpx.get(f"{server.url}/v1/evaluation/jobs/{bad}", headers=headers, timeout=30).json()
        message = v1["status_details"]["message"]
        assert path.name in message and wrong in message, message
        v2 = httpx.get(f"{server.url}/v2/evaluation/jobs/{bad}", headers=headers, timeout=30).json()
        assert v2["error_details"]["message"] == message
        results = httpx.get(f"{server.url}/v1/evaluation/jobs/{bad}/results", headers=headers, timeout=30)
        assert results.status_code == 409 and path.name in results.json()["detail"]
        cancelled = httpx.post(f"{server.url}/v1/evaluation/jobs/{bad}/cancel", headers=headers, timeout=30)
        assert cancelled.status_code == 200 and cancelled.json()["status"] == "failed", cancelled.text

        scores = httpx.get(f"{server.url}/v1/evaluation/jobs/{good}/results", headers=headers, timeout=30)
        assert scores.status_code == 200, scores.text
        assert scores.json()["tasks"]["t"]["metrics"]["f"]["scores"]
        artifacts = f"{server.url}/v2/evaluation/jobs/{good}/results/artifacts/download"
        zipped = httpx.get(artifacts, headers=headers, timeout=30)
        assert zipped.status_code == 200 and zipped.content[:2] == b"PK"

        # the damaged job can be deleted (its folder goes), and so can the good one
        for job_id in (bad, good):
            deleted = httpx.delete(f"{server.url}/v1/evaluation/jobs/{job_id}", headers=headers, timeout=30)
            assert deleted.status_code == 204, deleted.text
            assert not (jobs_dir / job_id).exists()
    finally:
        assert server.stop() == 0
    assert "Traceback" not in server.log.read_text(errors="replace")


@pytest.mark.parametrize("content", [TORN, "[]", '{"scores_total": "many", "scores_done": []}'])
def test_a_damaged_progress_file_only_loses_the_progress(damaged, content, capsys):
    state, good, bad = damaged
    _damage(state, bad, "progress.json", content)
    assert main(["job", "--jobs-dir", str(state / "jobs"), "status", bad]) == 0
    assert f"{bad}: completed" in capsys.readouterr().out
    server = Server(state).start()
    try:
        job = httpx.get(f"{server.url}/v1/evaluation/jobs/{bad}", headers=server.headers(), timeout=30)
        assert job.status_code == 200 and job.json()["status"] == "completed", job.text
        results = httpx.get(f"{server.url}/v1/evaluation/jobs/{bad}/results", headers=server.headers())
        assert results.status_code == 200, results.text
        page = httpx.get(f"{server.url}/v2/evaluation/jobs", headers=server.headers(), timeout=30)
        assert {job["id"] for job in page.json()["data"]} == {good, bad}
    finally:
        assert server.stop() == 0
