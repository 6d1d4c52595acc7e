"""The service tried as a hostile user would, item 3: a stored secret could be pulled out through a job
whose judge URL points at the client's own server (which then received `Authorization: Bearer
<secret>`), and `POST /v1/secrets` could plant the service's own token. A secret now goes only to the
endpoints it is bound to; anything else is refused, naming the secret, the URL and how to bind it,
before any request; the server's own secret names are refused over REST."""

from __future__ import annotations

import io
import json
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from ascend_eval.cli.main import main
from ascend_eval.jobs import Jobs, SecretStore
from ascend_eval.jobs.secrets import endpoint_origin
from ascend_eval.models.errors import ConfigError, DataError
from tests.jobs.conftest import RuleJudgeServer, inline_spec_for, nemo_spec
from tests.models.loopback_server import CHAT, LoopbackServer
from tests.serve.conftest import Server, wait_for

SECRET = "sk-bound-9f8e7d6c5b4a3210"


@pytest.fixture
def judge() -> Iterator[RuleJudgeServer]:
    """The endpoint the secret is meant for: the job tests' rules judge."""
    with LoopbackServer() as server:
        yield RuleJudgeServer(server)


@pytest.fixture
def attacker() -> Iterator[LoopbackServer]:
    """The client's own server: it answers nothing and records whatever reaches it."""
    with LoopbackServer() as server:
        yield server


@pytest.fixture
def secrets(tmp_path: Path) -> SecretStore:
    return SecretStore(tmp_path / "secrets")


@pytest.fixture
def jobs(tmp_path: Path, secrets: SecretStore) -> Jobs:
    return Jobs(tmp_path / "jobs", secrets=secrets)


def _refused(job, *needles: str) -> str:
    with pytest.raises(ConfigError) as info:
        job.run()
    message = str(info.value)
    for needle in needles:
        assert needle in message, message
    assert SECRET not in message
    assert job.status() == "failed"
    return message


# --- origins ------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("url", "origin"),
    [
        ("https://Integrate.API.nvidia.com/v1/chat/completions", "https://integrate.api.nvidia.com:443"),
        ("http://127.0.0.1:8000", "http://127.0.0.1:8000"),
        ("HTTP://localhost/v1", "http://localhost:80"),
        ("http://[::1]:9000/v1", "http://[::1]:9000"),
    ],
)
def test_an_origin_is_scheme_host_and_port(url, origin):
    assert endpoint_origin(url) == origin


@pytest.mark.parametrize(
    "url",
    [
        "ftp://example.com",
        "local:default",
        "http://good.example@evil.example",  # userinfo: the host is evil.example
        "http://evil.example\\@good.example",  # parsers disagree on where the host ends
        "http://exa mple.com",
        "http://example.com:99999",
        "http://[::1",
    ],
)
def test_what_is_not_a_plain_http_origin_is_refused(url):
    with pytest.raises(ConfigError, match=r"not an http|port"):
        endpoint_origin(url)


# --- jobs ---------------------------------------------------------------------------------------------


def test_a_stored_secret_bound_to_nothing_is_sent_nowhere(jobs, secrets, attacker):
    secrets.set("judge-key", SECRET)  # stored without an endpoint, as every secret was before
    job = jobs.create(inline_spec_for(attacker.url + CHAT, secret="judge-key"))
    message = _refused(job, "'judge-key'", attacker.url + CHAT, "bound to no endpoint")
    assert f"ascend-eval secrets set judge-key --endpoint {attacker.url}" in message  # the fix
    assert "judge-key" in job.info()["error"]
    assert attacker.requests == []


def test_a_secret_goes_only_to_the_endpoint_it_was_stored_for(jobs, secrets, judge, attacker):
    secrets.set("judge-key", SECRET, endpoints=[judge.url])
    origin = endpoint_origin(judge.url)
    assert secrets.endpoints("judge-key") == (origin,)
    # the attacker is the same host on another port: another origin; so is the other scheme
    _refused(jobs.create(inline_spec_for(attacker.url + CHAT, secret="judge-key")), origin, attacker.url)
    https = judge.url.replace("http://", "https://")
    _refused(jobs.create(inline_spec_for(https, secret="judge-key")), "may not be sent")
    assert attacker.requests == [] and judge.server.requests == []

    job = jobs.create(inline_spec_for(judge.url, secret="judge-key")).run()
    assert job.status() == "completed"
    assert {r.headers.get("authorization") for r in judge.server.requests} == {f"Bearer {SECRET}"}
    # set again without endpoints: the old binding goes with the old value
    secrets.set("judge-key", SECRET)
    assert secrets.endpoints("judge-key") == ()
    secrets.delete("judge-key")
    assert not (secrets.directory / ".endpoints" / "judge-key").exists()


def test_an_unused_pipeline_model_cannot_carry_a_secret_elsewhere(jobs, secrets, judge, attacker):
    # The data has contexts and answers, so the RAG model would never be called: still refused up front.
    secrets.set("judge-key", SECRET, endpoints=[judge.url])
    spec = inline_spec_for(judge.url, secret="judge-key")
    spec["model"]["url"], spec["model"]["api_key_secret"] = attacker.url + CHAT, "judge-key"
    _refused(jobs.create(spec), "'judge-key'", "model.url")
    assert attacker.requests == [] and judge.server.requests == []


def test_an_environment_secret_goes_only_where_its_allow_list_says(
    jobs, secrets, judge, attacker, monkeypatch
):
    monkeypatch.setenv("ASCEND_EVAL_SECRET_JUDGE_KEY", SECRET)
    to_judge = inline_spec_for(judge.url, secret="judge-key")
    to_attacker = inline_spec_for(attacker.url + CHAT, secret="judge-key")
    # no allow-list: the variable's value is sent nowhere, and the message names the variable to set
    message = _refused(jobs.create(to_judge), "environment variable ASCEND_EVAL_SECRET_JUDGE_KEY")
    assert f"export ASCEND_EVAL_ENDPOINTS_JUDGE_KEY={endpoint_origin(judge.url)}" in message

    monkeypatch.setenv("ASCEND_EVAL_ENDPOINTS_JUDGE_KEY", f"{judge.url}, https://other.example")
    _refused(jobs.create(to_attacker), attacker.url)
    # a stored binding (which a REST client can write) does not widen where the variable's value goes
    secrets.set("judge-key", "planted", endpoints=[attacker.url])
    _refused(jobs.create(to_attacker), attacker.url)
    assert attacker.requests == [] and judge.server.requests == []

    assert jobs.create(to_judge).run().status() == "completed"
    assert {r.headers.get("authorization") for r in judge.server.requests} == {f"Bearer {SECRET}"}


def test_a_bad_allow_list_entry_names_the_variable(jobs, judge, monkeypatch):
    monkeypatch.setenv("ASCEND_EVAL_SECRET_JUDGE_KEY", SECRET)
    monkeypatch.setenv("ASCEND_EVAL_ENDPOINTS_JUDGE_KEY", "judge.example.com")
    job = jobs.create(inline_spec_for(judge.url, secret="judge-key"))
    _refused(job, "ASCEND_EVAL_ENDPOINTS_JUDGE_KEY", "'judge.example.com'")


def test_a_hugging_face_token_goes_only_to_the_hub(jobs, secrets, monkeypatch, tmp_path):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "empty-hub"))
    secrets.set("hf-token", SECRET, endpoints=["https://judge.example.com"])
    spec = nemo_spec("huggingface_private")
    spec["metric_params"]["judge_llm"]["model"] = {"url": "http://127.0.0.1:9/v1"}
    _refused(jobs.create(spec), "'hf-token'", "https://huggingface.co", "Hugging Face hub")

    secrets.set("hf-token", SECRET, endpoints=["https://huggingface.co"])
    with pytest.raises(DataError, match="HF_HUB_OFFLINE"):  # past the check: the hub cache is empty
        jobs.create(spec).run()


def test_the_cli_binds_a_secret_to_its_endpoints(tmp_path, monkeypatch, capsys):
    folder = str(tmp_path / "cli-secrets")
    monkeypatch.setattr("sys.stdin", io.StringIO(SECRET + "\n"))
    urls = ["https://API.example.com/v1/chat/completions", "http://127.0.0.1:8001"]
    command = ["secrets", "--secrets-dir", folder, "set", "judge-key"]
    assert main([*command, "--endpoint", urls[0], "--endpoint", urls[1]]) == 0
    assert SecretStore(folder).resolve("judge-key").endpoints == (
        "http://127.0.0.1:8001",
        "https://api.example.com:443",
    )
    assert main(["secrets", "--secrets-dir", folder, "list"]) == 0
    out = capsys.readouterr().out
    assert "https://api.example.com:443" in out and SECRET not in out
    monkeypatch.setattr("sys.stdin", io.StringIO(SECRET))
    assert main(["secrets", "--secrets-dir", folder, "set", "other", "--endpoint", "ftp://x"]) == 2
    assert "not an http(s) URL" in capsys.readouterr().err
    assert not (tmp_path / "cli-secrets" / "other").exists()


# --- the REST service ---------------------------------------------------------------------------------


@pytest.fixture
def rest(tmp_path: Path, monkeypatch) -> Iterator[Server]:
    """`ascend-eval serve`, with an operator's key in its environment (`env-key`) and none allowed."""
    pytest.importorskip("fastapi", reason="ascend-eval serve needs the serve extra")
    monkeypatch.setenv("ASCEND_EVAL_SECRET_ENV_KEY", SECRET)
    state = tmp_path / "serve"
    state.mkdir()
    server = Server(state).start()
    try:
        yield server
    finally:
        server.stop()


def _job(rest: Server, url: str, secret: str) -> httpx.Response:
    spec = inline_spec_for(url, secret=secret)
    return httpx.post(rest.url + "/v1/evaluation/jobs", json=spec, headers=rest.headers(), timeout=30)


def _refused_422(reply: httpx.Response, *needles: str) -> None:
    assert reply.status_code == 422, reply.text
    message = reply.json()["detail"][0]["msg"]
    for needle in needles:
        assert needle in message, message
    assert SECRET not in reply.text


def test_a_rest_job_cannot_send_a_secret_to_the_clients_server(rest, judge, attacker):
    secrets_url = rest.url + "/v1/secrets"
    body = {"name": "judge-key", "data": SECRET, "endpoints": [judge.url]}
    assert httpx.post(secrets_url, json=body, headers=rest.headers()).status_code == 200
    _refused_422(_job(rest, attacker.url + CHAT, "judge-key"), "'judge-key'", attacker.url, "--endpoint")
    # the operator's environment variable: no allow-list, no sending; a planted file does not change that
    _refused_422(_job(rest, attacker.url + CHAT, "env-key"), "ASCEND_EVAL_ENDPOINTS_ENV_KEY")
    planted = {"name": "env-key", "data": "mine", "endpoints": [attacker.url]}
    assert httpx.post(secrets_url, json=planted, headers=rest.headers()).status_code == 200
    _refused_422(_job(rest, attacker.url + CHAT, "env-key"), "environment variable")
    assert list(rest.jobs_dir.glob("*")) == []  # nothing was created for a refused body

    reply = _job(rest, judge.url, "judge-key")
    assert reply.status_code == 200, reply.text
    done = wait_for(lambda: _finished(rest, reply.json()["id"]), what="the job to finish")
    assert done["status"] == "completed", done
    assert {r.headers.get("authorization") for r in judge.server.requests} == {f"Bearer {SECRET}"}
    assert attacker.requests == []


def test_a_key_given_in_one_job_body_cannot_be_borrowed_by_another(rest, judge, attacker):
    endpoint = {"url": judge.url, "model_id": "judge", "api_key": SECRET}
    config = {
        "type": "rag",
        "tasks": {
            "t": {
                "type": "ragas",
                "metrics": {"f": {"type": "faithfulness"}},
                "params": {"judge_llm": {"api_endpoint": endpoint}},
            }
        },
    }
    target = {"type": "rows", "rows": nemo_spec("inline")["dataset"]["rows"]}
    reply = httpx.post(
        rest.url + "/v1/evaluation/jobs", json={"config": config, "target": target}, headers=rest.headers()
    )
    assert reply.status_code == 200, reply.text
    first = reply.json()["id"]
    assert wait_for(lambda: _finished(rest, first), what="the first job")["status"] == "completed"
    key = f"{first}.judge-llm"
    assert json.loads((rest.secrets_dir / ".endpoints" / key).read_text()) == [endpoint_origin(judge.url)]
    _refused_422(_job(rest, attacker.url + CHAT, key), repr(key), attacker.url)
    assert attacker.requests == []


def test_the_servers_own_secret_names_are_refused_over_rest(rest):
    url = rest.url + "/v1/secrets"
    names = ("serve-token", "SERVE-TOKEN", "serve_token", "serve.token", "eval-0123456789abcdef.judge-llm")
    for name in names:
        body = {"name": name, "data": "planted", "endpoints": ["http://x"]}
        reply = httpx.post(url, json=body, headers=rest.headers())
        assert reply.status_code == 403, (name, reply.text)
        assert "this server's own" in reply.json()["detail"]
        assert httpx.delete(f"{url}/{name}", headers=rest.headers()).status_code == 403
    assert not rest.secrets_dir.exists() or not any(rest.secrets_dir.iterdir())


def test_a_secret_posted_without_endpoints_is_refused(rest):
    url = rest.url + "/v1/secrets"
    reply = httpx.post(url, json={"name": "judge-key", "data": SECRET}, headers=rest.headers())
    assert reply.status_code == 422 and reply.json()["detail"][0]["loc"] == ["body", "endpoints"]
    assert "sent to" in reply.json()["detail"][0]["msg"]
    body = {"name": "judge-key", "data": SECRET, "endpoints": ["file:///etc"]}
    bad = httpx.post(url, json=body, headers=rest.headers())
    assert bad.status_code == 422 and bad.json()["detail"][0]["loc"] == ["body", "endpoints"]
    assert not (rest.secrets_dir / "judge-key").exists()


def _finished(rest: Server, job_id: str) -> dict | None:
    job = httpx.get(f"{rest.url}/v1/evaluation/jobs/{job_id}", headers=rest.headers()).json()
    return job if job["status"] in ("completed", "failed", "cancelled") else None
