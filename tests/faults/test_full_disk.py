"""A full disk (or one over quota, read-only or failing) under --out or under the request cache.

Issue 14, item 5: a full disk under `--out` ended `ascend-eval evaluate` with exit 1, a traceback and a
0-byte `config.yaml` or a `results.json.part`; a full disk when the cache was opened was reported as a
damaged cache. Now: exit 2 with one line that names the file and the way on (free space, or another
--out / --cache-dir), no traceback, no 0-byte or `.part` file left, and nothing answered lost: the
answers are in the request cache, so a re-run with space sends only what was never answered.

Two ways to fill a disk. A real one: a 64 KiB tmpfs mounted for the test (root only, where the sandbox
allows `mount`; skipped elsewhere). And one that always runs: `Path.open` in this process hands out files
under the results folder that fail with ENOSPC (or EDQUOT, EIO, EROFS) once the folder's byte budget is
spent, the way a write to a full device fails (the error names no file).
"""

from __future__ import annotations

import errno
import json
import os
import shutil
import sqlite3
import subprocess
import uuid
from pathlib import Path
from typing import Any

import pytest
import yaml

import ascend_eval
from ascend_eval.cli.main import main
from ascend_eval.engine import cache as cache_module
from ascend_eval.errors import CacheError
from ascend_eval.executors.local import CACHE_FILE
from tests.models.loopback_server import CHAT, LoopbackServer
from tests.test_api_endpoints import judge_route

OUTPUTS = ["config.yaml", "samples.jsonl", "results.json", "scores.csv", "summary.json", "report.html"]
"""What `evaluate --out` writes, in the order it writes them."""

ROWS = [
    {
        "user_input": f"What colour is widget {i}?",
        "response": f"Widget {i} is blue. Widget {i} was made in 2021.",
        "retrieved_contexts": [f"Widget {i} is blue. Widget {i} was made in 2020."],
    }
    for i in range(40)
]


@pytest.fixture
def judge():
    with LoopbackServer() as server:
        server.route(CHAT, judge_route)
        yield server


def _chats(server: LoopbackServer) -> list[str]:
    return [json.dumps(b, sort_keys=True) for b in server.bodies(CHAT)]


IN_FLIGHT = 4
"""Requests the judge client keeps in flight: when the disk fills mid-run, only these may be unanswered."""


def _argv(server: LoopbackServer, data: Path, out: Path, cache: Path) -> list[str]:
    return [
        "evaluate", str(data), "--metrics", "faithfulness", "-q", "--judge", server.url,
        "--judge-model", "served-judge", "--judge-set", f"parallelism={IN_FLIGHT}",
        "--out", str(out), "--cache-dir", str(cache),
    ]  # fmt: skip


def _resent(server: LoopbackServer, first: list[str]) -> int:
    """How many requests of the first run the run after it sent again."""
    return len(set(_chats(server)[len(first) :]) & set(first))


@pytest.fixture
def data(tmp_path: Path) -> Path:
    path = tmp_path / "data.json"
    path.write_text(json.dumps(ROWS), encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def reference(tmp_path_factory) -> tuple[dict[str, int], list[dict[str, Any]]]:
    """A clean run's file sizes (bytes, by name) and its aggregate scores."""
    folder = tmp_path_factory.mktemp("reference")
    data = folder / "data.json"
    data.write_text(json.dumps(ROWS), encoding="utf-8")
    with LoopbackServer() as server:
        server.route(CHAT, judge_route)
        assert main(_argv(server, data, folder / "out", folder / "cache")) == 0
    sizes = {name: (folder / "out" / name).stat().st_size for name in OUTPUTS}
    scores = json.loads((folder / "out" / "summary.json").read_text(encoding="utf-8"))["aggregate_scores"]
    return sizes, scores


class Disk:
    """A device with `free` bytes left for the files opened for writing under `root`: a write past them
    writes what fits and fails with `error`, as on a full disk (the OSError names no file)."""

    def __init__(self, root: Path, free: int, error: int = errno.ENOSPC) -> None:
        self.root = root.resolve()
        self.free = free
        self.error = error
        self.failures = 0

    def install(self, monkeypatch: pytest.MonkeyPatch) -> None:
        real = Path.open
        disk = self

        def open_(path: Path, mode: str = "r", *args: Any, **kwargs: Any) -> Any:
            f = real(path, mode, *args, **kwargs)
            writing = any(c in mode for c in "wax+")
            return _Metered(f, disk) if writing and disk.root in Path(path).resolve().parents else f

        monkeypatch.setattr(Path, "open", open_)

    def take(self, text: str) -> int:
        """How many characters of `text` fit; raises once the disk is full."""
        size = len(text.encode("utf-8"))
        if size <= self.free:
            self.free -= size
            return len(text)
        fits = len(text.encode("utf-8")[: self.free].decode("utf-8", "ignore"))
        self.free = 0
        return fits

    def fail(self) -> OSError:
        self.failures += 1
        return OSError(self.error, os.strerror(self.error))


class _Metered:
    """A text file whose writes draw on a `Disk`."""

    def __init__(self, f: Any, disk: Disk) -> None:
        self._f = f
        self._disk = disk

    def write(self, text: str) -> int:
        fits = self._disk.take(text)
        self._f.write(text[:fits])
        if fits < len(text):
            raise self._disk.fail()
        return len(text)

    def __enter__(self) -> _Metered:
        return self

    def __exit__(self, *exc: object) -> None:
        self._f.close()

    def __iter__(self) -> Any:
        return iter(self._f)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._f, name)


def assert_one_error_line(err: str) -> None:
    """The command said what went wrong in one `error:` line, without a traceback of ours (the loopback
    server, in this process, may print its own for a connection the client dropped)."""
    assert sum(line.startswith("error: ") for line in err.splitlines()) == 1, err
    assert f'File "{Path(ascend_eval.__file__).parent}' not in err, err


def assert_nothing_broken_left(out: Path, reference_sizes: dict[str, int]) -> None:
    """No 0-byte, partial or temporary file in `out`: each file there is whole."""
    for path in out.iterdir():
        assert path.name in OUTPUTS, f"{path.name} left behind"
        assert path.stat().st_size > 0, f"{path.name} is empty"
    if (out / "config.yaml").exists():
        assert yaml.safe_load((out / "config.yaml").read_text(encoding="utf-8"))["out"] == str(out)
    if (out / "samples.jsonl").exists():
        lines = (out / "samples.jsonl").read_text(encoding="utf-8").splitlines()
        assert all(json.loads(line)["id"] for line in lines)  # whole lines only
    for name in ("results.json", "summary.json"):
        if (out / name).exists():
            json.loads((out / name).read_text(encoding="utf-8"))
    if (out / "report.html").exists():
        assert (out / "report.html").stat().st_size == pytest.approx(reference_sizes["report.html"], rel=0.05)


@pytest.mark.parametrize("at", OUTPUTS)
def test_a_disk_that_fills_while_a_file_is_written_exits_2_and_loses_nothing(
    judge, data, tmp_path, reference, at, monkeypatch, capsys
):
    sizes, scores = reference
    out, cache = tmp_path / "out", tmp_path / "cache"
    out.mkdir()
    before = sum(sizes[name] for name in OUTPUTS[: OUTPUTS.index(at)])
    disk = Disk(out, free=before + sizes[at] // 2)
    disk.install(monkeypatch)
    assert main(_argv(judge, data, out, cache)) == 2
    err = capsys.readouterr().err
    assert disk.failures >= 1
    assert_one_error_line(err)
    assert f"No space left on the device holding {out / at}" in err, err
    assert "--out" in err
    assert_nothing_broken_left(out, sizes)
    first = _chats(judge)
    if at == "config.yaml":
        assert first == []  # found before the run: nothing was asked
    monkeypatch.undo()
    # With space, the same command sends only what the first run had not had answered: the requests in
    # flight when the disk filled mid-run (at most IN_FLIGHT), none when it filled after the run.
    assert main(_argv(judge, data, out, cache)) == 0
    assert _resent(judge, first) <= (IN_FLIGHT if at == "samples.jsonl" else 0)
    if at not in ("config.yaml", "samples.jsonl"):
        assert len(_chats(judge)) == len(first)  # every answer was in hand: it only wrote the files
    assert json.loads((out / "summary.json").read_text(encoding="utf-8"))["aggregate_scores"] == scores


@pytest.mark.parametrize(
    ("error", "says"),
    [
        (errno.ENOSPC, "No space left on the device holding"),
        (errno.EDQUOT, "Disk quota exceeded on the device holding"),
        (errno.EROFS, "is on a read-only file system"),
        (errno.EIO, "I/O error while writing"),
    ],
    ids=["ENOSPC", "EDQUOT", "EROFS", "EIO"],
)
def test_each_device_failure_is_named_with_the_file_and_the_way_on(
    judge, data, tmp_path, reference, error, says, monkeypatch, capsys
):
    sizes, _ = reference
    out = tmp_path / "out"
    out.mkdir()
    Disk(out, free=sizes["config.yaml"] + sizes["samples.jsonl"] // 3, error=error).install(monkeypatch)
    assert main(_argv(judge, data, out, tmp_path / "cache")) == 2
    err = capsys.readouterr().err
    assert f"{says}" in err and str(out / "samples.jsonl") in err and "--out" in err, err
    assert_one_error_line(err)
    assert_nothing_broken_left(out, sizes)


# ---- a real full file system: a 64 KiB tmpfs ---------------------------------------------------------


@pytest.fixture
def tiny_disk(tmp_path: Path):
    """A 64 KiB tmpfs mounted at a fresh folder (unmounted after the test); skipped where mount is not
    allowed (not root, or a sandbox without CAP_SYS_ADMIN)."""
    if os.name != "posix" or os.geteuid() != 0 or shutil.which("mount") is None:
        pytest.skip("mounting a tmpfs needs root")
    where = tmp_path / f"disk-{uuid.uuid4().hex[:8]}"
    where.mkdir()
    done = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", str(where)], capture_output=True, text=True
    )
    if done.returncode != 0:
        pytest.skip(f"mount is not allowed here: {done.stderr.strip()}")
    try:
        yield where
    finally:
        subprocess.run(["umount", "-l", str(where)], capture_output=True)


def fill(disk: Path) -> None:
    """Take every free byte of `disk`."""
    with (disk / "filler").open("wb", buffering=0) as f:
        try:
            while f.write(b"\0" * 4096):
                pass
        except OSError as e:
            assert e.errno == errno.ENOSPC


def test_a_real_full_disk_under_out_exits_2_and_a_rerun_elsewhere_sends_only_the_rest(
    judge, tmp_path, reference, tiny_disk, capsys
):
    sizes, _ = reference
    rows = ROWS * 4  # samples.jsonl outgrows 64 KiB
    data = tmp_path / "data.json"
    data.write_text(json.dumps([{**r, "user_input": f"{r['user_input']} ({i})"} for i, r in enumerate(rows)]))
    out, cache = tiny_disk / "out", tmp_path / "cache"
    assert main(_argv(judge, data, out, cache)) == 2
    err = capsys.readouterr().err
    assert f"No space left on the device holding {out}" in err and "--out" in err, err
    assert_one_error_line(err)
    assert_nothing_broken_left(out, sizes)
    first = _chats(judge)
    assert main(_argv(judge, data, tmp_path / "roomy", cache)) == 0
    assert _resent(judge, first) <= IN_FLIGHT


def test_a_real_full_disk_before_the_run_leaves_no_empty_config(judge, data, tmp_path, tiny_disk, capsys):
    out = tiny_disk / "out"
    out.mkdir()
    fill(tiny_disk)
    assert main(_argv(judge, data, out, tmp_path / "cache")) == 2
    err = capsys.readouterr().err
    assert f"No space left on the device holding {out / 'config.yaml'}" in err, err
    assert list(out.iterdir()) == [] and judge.requests == []


def test_a_real_full_disk_at_cache_open_is_no_space_not_damage(tmp_path, tiny_disk):
    from tests.faults.test_cache_corruption import DATA, fresh_judge

    source = tmp_path / "made"
    ascend_eval.evaluate(DATA[:2], ["faithfulness"], judge=fresh_judge(), cache_dir=source, progress=False)
    folder = tiny_disk / "cache"
    folder.mkdir()
    shutil.copy(source / CACHE_FILE, folder / CACHE_FILE)  # no -wal or -shm yet: opening must make them
    fill(tiny_disk)
    judge = fresh_judge()
    with pytest.raises(CacheError) as caught:
        ascend_eval.evaluate(DATA, ["faithfulness"], judge=judge, cache_dir=folder, progress=False)
    message = str(caught.value)
    assert f"No space left on the device holding the request cache {folder / CACHE_FILE}" in message
    assert "damaged" not in message and "--cache-dir" in message and "--no-cache" in message
    assert judge.calls == []


def test_an_io_error_at_cache_open_on_a_device_with_no_space_says_so(tmp_path, monkeypatch):
    """The same without a mount: SQLite reports a full device it cannot grow its shared-memory file on as
    a plain I/O error; the cache asks the device how much space is left before it calls the file damaged."""
    real = sqlite3.connect

    class FullDevice:
        def __init__(self, db: sqlite3.Connection) -> None:
            self.db = db

        def execute(self, sql: str, *args: Any) -> Any:
            if sql.startswith("PRAGMA journal_mode"):
                error = sqlite3.OperationalError("disk I/O error")
                error.sqlite_errorname = "SQLITE_IOERR_SHMSIZE"
                raise error
            return self.db.execute(sql, *args)

        def __getattr__(self, name: str) -> Any:
            return getattr(self.db, name)

    monkeypatch.setattr(sqlite3, "connect", lambda *args, **kwargs: FullDevice(real(*args, **kwargs)))
    monkeypatch.setattr(cache_module, "free_bytes", lambda path: 0)
    with pytest.raises(CacheError) as caught:
        cache_module.RequestCache(tmp_path / CACHE_FILE)
    message = str(caught.value)
    assert f"No space left on the device holding the request cache {tmp_path / CACHE_FILE}" in message
    assert "damaged" not in message
    monkeypatch.setattr(cache_module, "free_bytes", lambda path: 10 << 30)
    with pytest.raises(CacheError) as caught:
        cache_module.RequestCache(tmp_path / CACHE_FILE)
    assert "I/O error" in str(caught.value) and "damaged" not in str(caught.value)
