"""The service tried as a hostile user would, item 4: a job's corpus path was read with no type or size
check (`"corpus": "/dev/zero"` read without end, a FIFO blocked the job for ever), and a job could read
any file the server's user can. A corpus must now be a regular file within the size limit, every local
file a job names must be a regular file inside the operator's data folders (`ascend-eval serve
--data-dir`), and each is refused at once with a `DataError` (a 422 over REST) that names the path and
the fix, before anything is read."""

from __future__ import annotations

import json
import os
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import httpx
import pytest

from ascend_eval.data.corpus import CORPUS_LIMIT_ENV, MAX_CORPUS_MB, corpus_limit, read_corpus
from ascend_eval.jobs import Jobs, SecretStore
from ascend_eval.jobs.datasets import DATA_DIRS_ENV
from ascend_eval.models.errors import ConfigError, DataError
from tests.jobs.conftest import inline_spec_for, nemo_spec
from tests.serve.conftest import Server

DEVICE = Path("/dev/zero")
DOCUMENTS = [{"id": "d1", "text": "Paris is the capital city of France."}]
JUDGE = {"url": "http://127.0.0.1:9/v1", "model_id": "judge"}
FAST = 10.0  # seconds: a refusal comes at once; reading /dev/zero or waiting on a FIFO never ends


def within(call: Callable[[], object]) -> BaseException | object:
    """What `call` raised or returned, which it must do within FAST seconds (run in a daemon thread, so
    that a call that blocks on a FIFO or reads a device fails the test instead of hanging it)."""
    outcome: dict[str, object] = {}

    def run() -> None:
        try:
            outcome["returned"] = call()
        except BaseException as e:
            outcome["raised"] = e

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    thread.join(FAST)
    assert not thread.is_alive(), f"still waiting after {FAST:.0f} s: the file was opened and read"
    return outcome.get("raised", outcome.get("returned"))


def _refused_fast(call: Callable[[], object]) -> str:
    """The message of the DataError `call` raises, within FAST seconds (`within`)."""
    started = time.monotonic()
    error = within(call)
    assert isinstance(error, DataError), f"expected a DataError, got {error!r}"
    assert time.monotonic() - started < FAST
    return str(error)


@pytest.fixture
def fifo(tmp_path: Path) -> Path:
    if not hasattr(os, "mkfifo"):
        pytest.skip("no FIFOs on this platform")
    path = tmp_path / "corpus.jsonl"
    os.mkfifo(path)
    return path


def _big_corpus(path: Path, size: int) -> Path:
    documents = [{"id": str(i), "text": "x" * 100} for i in range(size // 100 + 1)]
    path.write_text(json.dumps(documents), encoding="utf-8")
    assert path.stat().st_size > size
    return path


# --- read_corpus --------------------------------------------------------------------------------------


def test_a_device_as_corpus_is_refused_unread():
    message = _refused_fast(lambda: read_corpus(DEVICE))
    assert "'/dev/zero'" in message and "a character device, not a regular file" in message
    assert "Point dataset.corpus at a JSON or JSONL file" in message


def test_a_fifo_as_corpus_is_refused_without_waiting_for_a_writer(fifo):
    message = _refused_fast(lambda: read_corpus(fifo))
    assert str(fifo) in message and "a FIFO (named pipe), not a regular file" in message


def test_a_folder_as_corpus_is_refused(tmp_path):
    message = _refused_fast(lambda: read_corpus(tmp_path))
    assert str(tmp_path) in message and "a folder, not a regular file" in message


def test_a_corpus_over_the_size_limit_is_refused_unread(tmp_path, monkeypatch):
    assert corpus_limit() == MAX_CORPUS_MB * 1024 * 1024  # the documented default
    monkeypatch.setenv(CORPUS_LIMIT_ENV, "0.01")  # 10 KiB
    big = _big_corpus(tmp_path / "big.json", 20_000)
    message = _refused_fast(lambda: read_corpus(big))
    assert str(big) in message and f"{big.stat().st_size:,} bytes" in message
    assert "over the corpus limit of 10,485 bytes" in message and f"export {CORPUS_LIMIT_ENV}=" in message
    small = tmp_path / "small.json"
    small.write_text(json.dumps(DOCUMENTS), encoding="utf-8")
    assert read_corpus(small)[0]["text"] == DOCUMENTS[0]["text"]  # under the limit: read as before
    assert len(read_corpus(big, max_bytes=10_000_000)) > 100  # the limit can be raised per call


def test_a_bad_limit_setting_names_the_variable(monkeypatch):
    monkeypatch.setenv(CORPUS_LIMIT_ENV, "lots")
    with pytest.raises(ConfigError, match=CORPUS_LIMIT_ENV):
        corpus_limit()


# --- jobs ---------------------------------------------------------------------------------------------


@pytest.fixture
def jobs(tmp_path: Path) -> Jobs:
    return Jobs(tmp_path / "jobs", secrets=SecretStore(tmp_path / "secrets"))


def _spec(**dataset: object) -> dict:
    spec = inline_spec_for("http://127.0.0.1:9/v1/chat/completions", secret=None)
    spec["dataset"] = {**spec["dataset"], **dataset}
    return spec


@pytest.mark.parametrize("field", ["corpus", "path"])
def test_a_job_refuses_a_device_or_fifo_before_reading_it(jobs, fifo, field):
    extra = {"rows": None} if field == "path" else {}
    for path, kind in ((DEVICE, "a character device"), (fifo, "a FIFO")):
        job = jobs.create(_spec(**extra, **{field: str(path)}))
        message = _refused_fast(job.run)
        assert f"dataset.{field} file {str(path)!r} is {kind}" in message
        assert job.status() == "failed"


def test_a_job_reads_only_inside_the_data_folders_when_they_are_set(jobs, tmp_path, monkeypatch):
    allowed, outside = tmp_path / "data", tmp_path / "outside"
    allowed.mkdir()
    outside.mkdir()
    (outside / "corpus.json").write_text(json.dumps(DOCUMENTS), encoding="utf-8")
    (allowed / "link.json").symlink_to(outside / "corpus.json")
    monkeypatch.setenv(DATA_DIRS_ENV, str(allowed))
    for path in (outside / "corpus.json", allowed / ".." / "outside" / "corpus.json", allowed / "link.json"):
        message = _refused_fast(jobs.create(_spec(corpus=str(path))).run)
        assert f"dataset.corpus {str(path)!r} is outside the folders jobs may read data from" in message
        assert str(allowed) in message and "--data-dir" in message


# --- the REST service ---------------------------------------------------------------------------------


@pytest.fixture
def rest(tmp_path: Path, monkeypatch) -> Iterator[Server]:
    """`ascend-eval serve --data-dir <tmp>/data`, with a corpus limit of 10 KiB."""
    pytest.importorskip("fastapi", reason="ascend-eval serve needs the serve extra")
    monkeypatch.setenv(CORPUS_LIMIT_ENV, "0.01")
    monkeypatch.delenv(DATA_DIRS_ENV, raising=False)
    (tmp_path / "data").mkdir()
    state = tmp_path / "serve"
    state.mkdir()
    server = Server(state, "--data-dir", str(tmp_path / "data")).start()
    try:
        yield server
    finally:
        server.stop()


def _create(rest: Server, spec: dict) -> httpx.Response:
    return httpx.post(rest.url + "/v1/evaluation/jobs", json=spec, headers=rest.headers(), timeout=FAST)


def test_rest_jobs_read_only_regular_files_inside_the_data_folders(rest, tmp_path):
    data, outside = tmp_path / "data", tmp_path / "outside"
    outside.mkdir()
    os.mkfifo(data / "fifo.jsonl")
    (data / "folder").mkdir()
    big = _big_corpus(data / "big.json", 20_000)
    (outside / "corpus.json").write_text(json.dumps(DOCUMENTS), encoding="utf-8")
    (outside / "data.json").write_text(
        json.dumps(nemo_spec("inline")["dataset"]["rows"][0]), encoding="utf-8"
    )
    (data / "escape.json").symlink_to(outside / "corpus.json")
    cases = [
        ({"corpus": "/dev/zero"}, "dataset.corpus '/dev/zero' is outside the folders"),
        ({"corpus": str(data / "fifo.jsonl")}, "is a FIFO (named pipe), not a regular file"),
        ({"corpus": str(data / "folder")}, "is a folder, not a regular file"),
        ({"corpus": str(big)}, "over the corpus limit of 10,485 bytes"),
        ({"corpus": str(outside / "corpus.json")}, "is outside the folders jobs may read data from"),
        ({"corpus": str(data / "escape.json")}, "is outside the folders"),  # a link out of the folder
        ({"rows": None, "path": str(outside / "data.json")}, "dataset.path"),
        ({"rows": None, "path": "/etc/passwd"}, "'/etc/passwd' is outside the folders"),
    ]
    for dataset, expected in cases:
        started = time.monotonic()
        reply = _create(rest, _spec(**dataset))
        assert time.monotonic() - started < FAST
        assert reply.status_code == 422, (dataset, reply.text)
        message = reply.json()["detail"][0]["msg"]
        assert expected in message, message
        assert str(next(iter(v for v in dataset.values() if v))) in message  # names the path
    # NeMo's body: a files_url outside the folders, the same answer
    body = {
        "config": {
            "type": "rag",
            "tasks": {
                "t": {
                    "type": "ragas",
                    "metrics": {"f": {"type": "faithfulness"}},
                    "params": {
                        "judge_llm": {"api_endpoint": {"url": "http://127.0.0.1:9/v1", "model_id": "j"}}
                    },
                }
            },
        },
        "target": {"type": "cached_outputs", "cached_outputs": {"files_url": f"file://{outside}/data.json"}},
    }
    reply = httpx.post(rest.url + "/v1/evaluation/jobs", json=body, headers=rest.headers(), timeout=FAST)
    assert reply.status_code == 422 and "is outside the folders" in reply.text, reply.text
    assert list(rest.jobs_dir.glob("*")) == []  # nothing was created, nothing read

    (data / "corpus.json").write_text(json.dumps(DOCUMENTS), encoding="utf-8")
    assert _create(rest, _spec(corpus=str(data / "corpus.json"))).status_code == 200  # inside: accepted
