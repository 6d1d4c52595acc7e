"""Fixtures for the server tests: `ascend-eval serve` started as its own process on 127.0.0.1 (stopped,
killed and started again at will), the scripted loopback judge of the job tests, and the real
`nemo-microservices` client pointed at the server."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.jobs.conftest import judge_server  # noqa: F401  (the scripted loopback judge, as a fixture)

TOKEN = "serve-test-token-0b1c2d"
ROOT = Path(__file__).resolve().parents[2]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class Server:
    """`ascend-eval serve` in a child process, on a fixed port and state folder across restarts."""

    def __init__(self, state: Path, *args: str) -> None:
        self.state = state
        self.args = args
        self.port = free_port()
        self.process: subprocess.Popen[bytes] | None = None
        self.log = state / "server.log"

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def jobs_dir(self) -> Path:
        return self.state / "jobs"

    @property
    def secrets_dir(self) -> Path:
        return self.state / "secrets"

    def start(self) -> Server:
        env = {**os.environ, "ASCEND_EVAL_SERVE_TOKEN": TOKEN, "HF_HUB_OFFLINE": "1"}
        command = [sys.executable, "-m", "ascend_eval.cli.main", "serve", "--port", str(self.port)]
        command += ["--jobs-dir", str(self.jobs_dir), "--secrets-dir", str(self.secrets_dir), *self.args]
        with self.log.open("ab") as log:
            self.process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, cwd=ROOT, env=env)
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise AssertionError(f"the server exited: {self.log.read_text()}")
            try:
                if httpx.get(self.url + "/health", timeout=1).status_code == 200:
                    return self
            except httpx.TransportError:
                pass
            time.sleep(0.1)
        raise AssertionError(f"the server did not come up: {self.log.read_text()}")

    def stop(self, sig: int = signal.SIGTERM) -> int:
        assert self.process is not None
        if self.process.poll() is None:
            self.process.send_signal(sig)
        return self.process.wait(timeout=60)

    def headers(self, token: str = TOKEN) -> dict[str, str]:
        return {"Authorization": f"Bearer {token}"}


@pytest.fixture
def server(tmp_path: Path) -> Iterator[Server]:
    pytest.importorskip("fastapi", reason="ascend-eval serve needs the serve extra")
    pytest.importorskip("uvicorn", reason="ascend-eval serve needs the serve extra")
    state = tmp_path / "serve"
    state.mkdir()
    # --data-dir: the tests' data files are in their tmp_path, which the server's jobs may then read
    running = Server(state, "--concurrency", "2", "--max-body-mb", "1", "--data-dir", str(tmp_path)).start()
    try:
        yield running
    finally:
        running.stop()


@pytest.fixture
def client(server: Server):
    nemo = pytest.importorskip("nemo_microservices")
    return nemo.NeMoMicroservices(base_url=server.url, default_headers=server.headers(), max_retries=0)


def wait_for(predicate, timeout: float = 90.0, what: str = "the condition"):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.1)
    raise AssertionError(f"timed out waiting for {what}")


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item, call):
    """A failed server test shows the server's own log (a 500's traceback is there, not in the client)."""
    report = yield
    running = item.funcargs.get("server") if hasattr(item, "funcargs") else None
    if report.failed and isinstance(running, Server) and running.log.is_file():
        report.sections.append(("ascend-eval serve log", running.log.read_text(errors="replace")[-20000:]))
    return report
