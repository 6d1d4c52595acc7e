"""Without a terminal (a log, a pipe), `evaluate` prints a `progress:` line every `--progress-every`
seconds instead of tqdm's bar, the last one when the run ends; the round stats still come."""

from __future__ import annotations

import itertools
import re
import subprocess
import sys

import pytest

from tests.models.loopback_server import CHAT, LoopbackServer, Reply
from tests.test_api_endpoints import judge_route

LINE = r"progress: \d+/16 scores, \d+ requests answered \(\d+ by a backend, \d+ in flight\), .* eta \S+"


def run_in_a_pipe(out, every: str, delay: float = 0.3) -> subprocess.CompletedProcess:
    with LoopbackServer() as server:
        server.route(CHAT, lambda body: Reply(judge_route(body), delay=delay))  # a run of a few seconds
        return subprocess.run(
            [sys.executable, "-m", "ascend_eval", "evaluate", "bilingual-example",
             "--metrics", "faithfulness",
             "--judge", server.url + "/v1", "--judge-model", "j", "--judge-set", "parallelism=8",
             "--no-cache", "--progress-every", every, "--out", str(out)],
            capture_output=True, text=True, timeout=300,
        )  # fmt: skip


@pytest.mark.parametrize("every", ["0", "1000"])
def test_a_pipe_gets_progress_lines(tmp_path, every):
    run = run_in_a_pipe(tmp_path, every)
    assert run.returncode == 0, run.stderr[-3000:]
    lines = [line for line in run.stderr.splitlines() if line.startswith("progress: ")]
    assert lines and all(re.fullmatch(LINE, line) for line in lines), run.stderr[-3000:]
    assert lines[-1].startswith("progress: 16/16 scores")
    if every == "0":
        assert len(lines) >= 2  # every snapshot (about one a second), not only the last
    else:
        assert len(lines) == 1  # none more often than asked: only the final one
    assert "round 1:" in run.stderr  # the round stats still come


def test_a_stalled_run_repeats_its_line_once_in_ten_seconds_at_most(tmp_path):
    """Every request waits 6 s at the judge: the snapshots in between all say the same, and a log gets
    none of them (before, a line a second with --progress-every 0)."""
    run = run_in_a_pipe(tmp_path, "0", delay=6.0)
    assert run.returncode == 0, run.stderr[-3000:]
    lines = [line for line in run.stderr.splitlines() if line.startswith("progress: ")]
    states = [
        (re.search(r"^progress: (\d+)/16 scores, (\d+) requests", line).groups(),
         int(re.search(r"(\d+)s elapsed", line).group(1)))
        for line in lines
    ]  # fmt: skip
    assert lines[-1].startswith("progress: 16/16 scores")
    for (state, at), (next_state, next_at) in itertools.pairwise(states):
        if state == next_state:
            assert next_at - at >= 9, lines  # 10 s apart, each rounded to a second
