"""The REST service tried as a hostile client would, issue 48: what a client names (a job's name, a local
model path, a log cursor, a timeout) and what a judge sends back must stay within bounds before it is
stored, printed or followed."""

from __future__ import annotations

import copy
import json
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from ascend_eval.cli.main import main
from ascend_eval.jobs import Jobs
from tests.jobs.conftest import inline_spec_for
from tests.models.loopback_server import CHAT, LoopbackServer, Reply
from tests.serve.conftest import TOKEN, Server, wait_for

pytest.importorskip("fastapi", reason="ascend-eval serve needs the serve extra")
pytest.importorskip("uvicorn", reason="ascend-eval serve needs the serve extra")

JUDGE = "http://127.0.0.1:9/v1/chat/completions"  # never called unless a test says so
ROWS = [
    {
        "question": "What is the capital of France?",
        "contexts": ["Paris is the capital city of France."],
        "answer": "Paris is the capital city of France.",
        "ground_truth": "Paris",
    }
]
ESCAPES = "\x1b]0;owned\x07\x1b[2J\x1b[31mFAKE ROW\r\n\x9b1m\u202e"
FINISHED = ("completed", "failed", "cancelled", "error")


def _has_controls(text: str) -> bool:
    return any((ord(c) < 0x20 and c != "\n") or 0x7F <= ord(c) < 0xA0 or c == "\u202e" for c in text)


def _config(judge_url: str = JUDGE) -> dict[str, Any]:
    endpoint = {"url": judge_url, "model_id": "judge"}
    params = {"judge_llm": {"api_endpoint": endpoint}, "judge_max_retries": 0}
    metrics = {"f": {"type": "faithfulness"}}
    return {"type": "rag", "tasks": {"t": {"type": "ragas", "metrics": metrics, "params": params}}}


def _v1(judge_url: str = JUDGE) -> dict[str, Any]:
    return {"config": _config(judge_url), "target": {"type": "rows", "rows": copy.deepcopy(ROWS)}}


def _post(server: Server, path: str, body: Any) -> httpx.Response:
    return httpx.post(server.url + path, json=body, headers=server.headers(), timeout=30)


def _finished(server: Server, job_id: str) -> dict | None:
    job = httpx.get(f"{server.url}/v2/evaluation/jobs/{job_id}", headers=server.headers()).json()
    return job if job["status"] in FINISHED else None


@pytest.fixture(scope="module")
def rest(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    state = tmp_path_factory.mktemp("bounds")
    (state / "data").mkdir()
    server = Server(state, "--data-dir", str(state / "data")).start()
    try:
        yield server
    finally:
        server.stop()


# --- names and what the terminal shows -----------------------------------------------------------------

BAD_NAMES = {
    "escape codes": "ok\x1b[2J\x1b]0;owned\x07",
    "a line break": "nightly\n" + "eval-0000 completed 2030-01-01 forged row",
    "a carriage return": "a\rb",
    "a C1 control": "a\x9bb",
    "a bidi override": "invoice\u202egnp.exe",
    "a number": 5,
    "a list": ["x"],
    "an object": {"a": 1},
    "257 characters": "x" * 257,
}


@pytest.mark.parametrize("case", list(BAD_NAMES))
def test_a_job_name_that_is_not_one_line_of_text_is_a_422(rest, case):
    name = BAD_NAMES[case]
    before = sorted(p.name for p in rest.jobs_dir.glob("*"))
    for path, body in (
        ("/v2/evaluation/jobs", {"spec": _v1(), "name": name}),
        ("/v1/evaluation/jobs", {"spec": inline_spec_for(JUDGE, secret=None), "name": name}),
    ):
        reply = _post(rest, path, body)
        assert reply.status_code == 422, (path, reply.text)
        [error] = reply.json()["detail"]
        assert error["loc"] == ["body", "name"], error
        assert not _has_controls(reply.text)
    assert sorted(p.name for p in rest.jobs_dir.glob("*")) == before  # nothing was written


def test_a_printable_name_is_still_a_name(rest):
    name = "nightly run ✓ 中文 (v2) " + "x" * 200
    reply = _post(rest, "/v2/evaluation/jobs", {"spec": _v1(), "name": name})
    assert reply.status_code == 200, reply.text
    assert reply.json()["name"] == name
    job_id = reply.json()["id"]
    wait_for(lambda: _finished(rest, job_id), what="the job")
    assert httpx.delete(f"{rest.url}/v2/evaluation/jobs/{job_id}", headers=rest.headers()).status_code == 200


def test_job_list_and_status_never_print_control_characters_from_a_record(tmp_path, capsys):
    jobs = Jobs(tmp_path / "jobs")
    job = jobs.create(inline_spec_for(JUDGE, secret=None), job_id="plain-job")
    record = json.loads((job.directory / "status.json").read_text(encoding="utf-8"))
    # A record written by hand, or by an older server that took any name.
    record.update(name=f"forged{ESCAPES}", created=f"2030{ESCAPES}", error=f"boom{ESCAPES}", status="failed")
    (job.directory / "status.json").write_text(json.dumps(record), encoding="utf-8")
    capsys.readouterr()
    assert main(["job", "--jobs-dir", str(jobs.root), "list"]) == 0
    listed = capsys.readouterr().out
    assert main(["job", "--jobs-dir", str(jobs.root), "status", "plain-job"]) == 0
    status = capsys.readouterr().out
    for out in (listed, status):
        assert not _has_controls(out), repr(out)
        assert "forged\\x1b]0;owned\\x07\\x1b[2J" in out and "\\r\\n" in out and "\\u202e" in out
    assert len(listed.splitlines()) == 1  # one job, one line
    assert "boom\\x1b" in status


def test_a_judges_error_body_reaches_the_rest_job_log_without_control_characters(rest):
    with LoopbackServer() as judge:
        reply = Reply(f"bad request {ESCAPES} end", status=400, content_type="text/plain")
        judge.route(CHAT, lambda body: reply)
        created = _post(rest, "/v2/evaluation/jobs", {"spec": _v1(judge.url + "/v1/chat/completions")})
        assert created.status_code == 200, created.text
        job_id = created.json()["id"]
        wait_for(lambda: _finished(rest, job_id), what="the job")
    text = httpx.get(f"{rest.url}/v1/evaluation/jobs/{job_id}/logs", headers=rest.headers()).text
    paged = httpx.get(f"{rest.url}/v2/evaluation/jobs/{job_id}/logs", headers=rest.headers()).json()
    assert "bad request" in text and "HTTP 400" in text
    assert not _has_controls(text), repr(text)
    assert "\\x1b]0;owned" in text
    assert not any(_has_controls(entry["message"]) for entry in paged["data"])
    assert not _has_controls((rest.state / "server.log").read_text(encoding="utf-8", errors="replace"))


# --- local models -----------------------------------------------------------------------------------------


def _local_judge(path: str) -> dict[str, Any]:
    return inline_spec_for(f"local:{path}", secret=None)


def _refusal(rest: Server, spec: dict[str, Any]) -> str:
    reply = _post(rest, "/v1/evaluation/jobs", spec)
    assert reply.status_code == 422, reply.text
    [error] = reply.json()["detail"]
    return str(error["msg"])


def test_a_rest_jobs_local_model_must_be_inside_the_data_folders(rest, tmp_path):
    outside = tmp_path / "models"
    (outside / "judge").mkdir(parents=True)
    (outside / "judge" / "config.json").write_text("{}", encoding="utf-8")
    (rest.state / "data" / "link").symlink_to(outside / "judge")
    before = sorted(p.name for p in rest.jobs_dir.glob("*"))
    for path in (
        str(outside / "judge"),  # exists
        str(outside / "judge" / "config.json"),
        str(rest.state / "data" / ".." / "jobs"),
        str(rest.state / "data" / "link"),  # a link out of the folder
        "/etc",
        "/proc/self/environ",
        "~/models/judge",
        "~nobody-at-all/judge",
        "models/judge",  # relative: the server's working folder
        "gpt-4o",  # no shipped model: taken for a path
    ):
        message = _refusal(rest, _local_judge(path))
        assert f"'local:{path}' is not a shipped model" in message, message
        assert "is not inside the folders jobs may read from" in message and "--data-dir" in message
    for role, spec in (
        ("retriever_pipeline.embedding_model.url", _with_pipeline(str(outside))),
        ("model.url", _with_rag_model(str(outside))),
    ):
        assert _refusal(rest, spec).startswith(role), role
    assert sorted(p.name for p in rest.jobs_dir.glob("*")) == before  # nothing made, nothing loaded


def test_an_existing_and_a_missing_path_outside_are_refused_in_the_same_words(rest, tmp_path):
    (tmp_path / "there").mkdir()
    (tmp_path / "there" / "config.json").write_text("{}", encoding="utf-8")
    messages = {
        name: _refusal(rest, _local_judge(str(tmp_path / name))).replace(name, "NAME")
        for name in ("there", "not-there")
    }
    assert messages["there"] == messages["not-there"]
    file_and_folder = {
        _refusal(rest, _local_judge(p)).replace(p, "P") for p in ("/etc/passwd", "/etc/no-such-file")
    }
    assert len(file_and_folder) == 1


def test_a_job_process_refuses_a_local_model_outside_the_data_folders(tmp_path, monkeypatch):
    from ascend_eval.jobs.datasets import DATA_DIRS_ENV
    from ascend_eval.jobs.runtimes import check_local_models
    from ascend_eval.jobs.spec import load_spec
    from ascend_eval.models.errors import ConfigError

    (tmp_path / "data").mkdir()
    outside = tmp_path / "models" / "judge"
    outside.mkdir(parents=True)
    monkeypatch.setenv(DATA_DIRS_ENV, str(tmp_path / "data"))
    job = Jobs(tmp_path / "jobs").create(_local_judge(str(outside)))  # a spec made outside the service
    with pytest.raises(ConfigError, match="is not inside the folders jobs may read from"):
        job.run()
    assert job.status() == "failed"
    roots = (tmp_path / "data",)
    for fine in ("local:default", "smollm2-135m-instruct", f"local:{tmp_path / 'data' / 'judge'}"):
        check_local_models(load_spec(_local_judge(fine.removeprefix("local:"))), roots)
    check_local_models(load_spec(_local_judge(str(outside))), None)  # no folders set: any path


def _with_pipeline(outside: str) -> dict[str, Any]:
    spec = inline_spec_for(JUDGE, secret=None)
    spec["retriever_pipeline"] = {"embedding_model": {"url": f"local:{outside}/embedder"}}
    spec["dataset"]["corpus"] = [{"id": "d1", "text": "Paris is the capital city of France."}]
    return spec


def _with_rag_model(outside: str) -> dict[str, Any]:
    spec = inline_spec_for(JUDGE, secret=None)
    spec["model"] = {"url": f"local:{outside}/generator"}
    return spec


# --- smaller bounds ---------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def a_job(rest) -> str:
    created = _post(rest, "/v2/evaluation/jobs", {"spec": _v1()})
    assert created.status_code == 200, created.text
    job_id = created.json()["id"]
    wait_for(lambda: _finished(rest, job_id), what="the job")
    return job_id


@pytest.mark.parametrize("cursor", ["²", "١٢", "9" * 5000, "-1", "1e3", "abc", " 1", "9" * 19])
def test_a_log_cursor_that_is_not_a_line_number_is_a_422(rest, a_job, cursor):
    url = f"{rest.url}/v2/evaluation/jobs/{a_job}/logs"
    reply = httpx.get(url, params={"page_cursor": cursor}, headers=rest.headers())
    assert reply.status_code == 422, (cursor, reply.status_code, reply.text[:200])
    assert "page_cursor must be the next_page of an earlier page" in reply.text


def test_a_log_cursor_from_next_page_still_pages(rest, a_job):
    url = f"{rest.url}/v2/evaluation/jobs/{a_job}/logs"
    first = httpx.get(url, params={"limit": 2}, headers=rest.headers()).json()
    assert first["next_page"] is not None
    second = httpx.get(url, params={"limit": 2, "page_cursor": first["next_page"]}, headers=rest.headers())
    assert second.status_code == 200 and second.json()["data"] != first["data"]
    empty = httpx.get(url, params={"page_cursor": ""}, headers=rest.headers())
    assert empty.status_code == 200 and empty.json()["data"][0] == first["data"][0]
    past = httpx.get(url, params={"page_cursor": "9" * 18}, headers=rest.headers())
    assert past.status_code == 200 and past.json()["data"] == []


@pytest.mark.parametrize("timeout", ["Infinity", "-Infinity", "NaN"])
def test_a_judge_timeout_that_is_not_a_finite_number_is_a_422(rest, timeout):
    nemo = _v1()
    nemo["config"]["tasks"]["t"]["params"]["judge_timeout"] = f"@{timeout}@"
    seed = inline_spec_for(JUDGE, secret=None)
    seed["metric_params"]["judge_llm"]["request_timeout"] = f"@{timeout}@"
    for body, field in ((nemo, "judge_timeout"), (seed, "request_timeout")):
        # json.dumps writes float("inf") as Infinity, which Python's JSON reader (and FastAPI's) accepts
        content = json.dumps(body).replace(f'"@{timeout}@"', timeout)
        headers = {**rest.headers(), "Content-Type": "application/json"}
        reply = httpx.post(rest.url + "/v1/evaluation/jobs", content=content, headers=headers)
        assert reply.status_code == 422, reply.text
        assert field in reply.text  # the field as the body names it


def test_an_endpoint_refuses_an_infinite_request_timeout_before_any_request():
    from ascend_eval.models.errors import ConfigError
    from ascend_eval.models.http import EndpointConfig

    for value in (float("inf"), float("nan"), 0.0, -1.0):
        with pytest.raises(ConfigError, match="request_timeout must be finite and > 0 seconds"):
            EndpointConfig(url="http://127.0.0.1:9/v1", model="m", request_timeout=value)


@pytest.mark.parametrize("token", ["pässwort-123", "токен-123", "two words", "tab\there", "esc\x1b[2J"])
def test_a_serve_token_that_is_not_printable_ascii_is_refused_at_start(tmp_path, token):
    import os
    import subprocess
    import sys

    from tests.serve.conftest import ROOT, free_port

    env = {**os.environ, "ASCEND_EVAL_SERVE_TOKEN": token, "HF_HUB_OFFLINE": "1"}
    command = [sys.executable, "-m", "ascend_eval.cli.main", "serve", "--port", str(free_port())]
    command += ["--jobs-dir", str(tmp_path / "jobs"), "--secrets-dir", str(tmp_path / "secrets")]
    try:
        done = subprocess.run(command, env=env, cwd=ROOT, capture_output=True, text=True, timeout=60)
    except subprocess.TimeoutExpired:
        pytest.fail(f"serve started with the token {token!r} instead of refusing it")
    assert done.returncode == 2, done.stderr
    assert (
        "holds a character other than printable ASCII" in done.stderr
        and "ASCEND_EVAL_SERVE_TOKEN" in done.stderr
    )
    assert token not in done.stderr  # the message never shows the token


@pytest.mark.parametrize(
    ("flag", "value"),
    [
        ("--max-body-mb", "nan"),
        ("--max-body-mb", "inf"),
        ("--max-body-mb", "0"),
        ("--max-body-mb", "-1"),
        ("--max-body-mb", "1e-9"),
        ("--port", "99999"),
        ("--port", "-1"),
        ("--port", "0"),
        ("--port", "http"),
    ],
)
def test_serve_flags_out_of_range_are_usage_errors(flag, value, capsys):
    from ascend_eval.cli.main import build_parser

    with pytest.raises(SystemExit) as stopped:
        build_parser().parse_args(["serve", flag, value])
    assert stopped.value.code == 2
    err = capsys.readouterr().err
    assert f"argument {flag}: {value!r} is not a" in err and "usage:" in err
    args = build_parser().parse_args(["serve", "--port", "8080", "--max-body-mb", "0.5"])
    assert (args.port, args.max_body_mb) == (8080, 0.5)


# --- what one job's body gives, another job cannot use ---------------------------------------------------


def test_a_key_from_one_job_body_cannot_be_used_by_another_job_at_the_same_url(rest):
    from tests.jobs.conftest import RuleJudgeServer

    key = "sk-first-body-key-7a6b5c"
    with LoopbackServer() as server:
        judge = RuleJudgeServer(server)
        body = _v1(judge.url)
        body["config"]["tasks"]["t"]["params"]["judge_llm"]["api_endpoint"]["api_key"] = key
        first = _post(rest, "/v1/evaluation/jobs", body)
        assert first.status_code == 200, first.text
        first_id = first.json()["id"]
        assert wait_for(lambda: _finished(rest, first_id), what="the first job")["status"] == "completed"
        sent = len(server.requests)
        assert sent and all(r.headers.get("authorization") == f"Bearer {key}" for r in server.requests)
        for name in (f"{first_id}.judge-llm", f"{first_id}.JUDGE-LLM", "serve-token"):
            reply = _post(rest, "/v1/evaluation/jobs", inline_spec_for(judge.url, secret=name))
            assert reply.status_code == 422, (name, reply.text)
            assert "is this server's own" in reply.text and "no other job may use" in reply.text
        assert len(server.requests) == sent  # the key went nowhere again


# --- slow clients -----------------------------------------------------------------------------------------

READ_TIMEOUT = 2.0


@pytest.fixture(scope="module")
def strict(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    """A server that gives each request READ_TIMEOUT seconds."""
    server = Server(tmp_path_factory.mktemp("slow"), "--read-timeout", str(READ_TIMEOUT)).start()
    try:
        yield server
    finally:
        server.stop()


def _closed_after(server: Server, trickle: list[bytes], limit: float = 4 * READ_TIMEOUT) -> float | None:
    """Seconds until the server closes a connection that sends `trickle` one piece every 0.4 s (and then
    nothing); None when it is still open after `limit` seconds."""
    import socket
    import time

    started = time.monotonic()
    with socket.create_connection(("127.0.0.1", server.port)) as conn:
        conn.settimeout(0.4)
        pieces = iter(trickle)
        while time.monotonic() - started < limit:
            try:
                piece = next(pieces, b"")
                if piece:
                    conn.sendall(piece)
                if conn.recv(4096) == b"":
                    return time.monotonic() - started
            except TimeoutError:
                continue
            except (ConnectionResetError, BrokenPipeError):
                return time.monotonic() - started
    return None


def test_a_connection_that_sends_nothing_or_a_request_slowly_is_closed(strict):
    slowloris = [b"GET /health HTTP/1.1\r\n", b"Host: x\r\n"] + [b"X-a: b\r\n"] * 100
    auth = f"Authorization: Bearer {TOKEN}\r\n".encode()
    slow_body = [
        b"POST /v1/evaluation/jobs HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n" + auth + b"\r\n{"
    ] + [b" "] * 90
    for trickle in ([], slowloris, slow_body):
        closed = _closed_after(strict, trickle)
        assert closed is not None, f"still open after {4 * READ_TIMEOUT:.0f} s: {trickle[:2]}"
        assert READ_TIMEOUT * 0.9 <= closed < READ_TIMEOUT + 2.0, closed


def test_a_request_sent_in_time_is_answered_and_the_connection_kept(strict):
    import socket
    import time

    with socket.create_connection(("127.0.0.1", strict.port)) as conn:
        conn.settimeout(5)
        for _ in range(2):  # two requests on one kept-alive connection, each sent over a second
            for piece in (b"GET /health HTTP/1.1\r\n", b"Host: x\r\n", b"\r\n"):
                conn.sendall(piece)
                time.sleep(0.4)
            assert conn.recv(4096).startswith(b"HTTP/1.1 200")
            time.sleep(1.0)  # idle between requests: uvicorn's keep-alive (5 s) holds the connection
    with httpx.Client(base_url=strict.url, headers=strict.headers()) as client:
        assert client.get("/v1/evaluation/jobs").status_code == 200
