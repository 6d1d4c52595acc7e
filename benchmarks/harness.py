"""The benchmark harness: ascend-eval against RAGAS 0.4.3 on the same judge, plus our own ablations.

One command runs every row in one process tree: it builds (or loads) the dataset, starts the judge server
from vLLM's own virtual environment when a server row is asked for, runs each row in a fresh worker
process (so that peak memory and load state are per row), stops the server (always), and writes
`bench.json` and `bench.md` to `--out`, printing the table.

Rows are named `SIDE:BACKEND[:OPTION=VALUE,...]`:

* `ragas:server`, `ours:server`: both tools through the same local OpenAI-compatible server (vLLM).
* `ragas:torch`: RAGAS with LangChain's HuggingFacePipeline in-process; `ours:torch`: our TorchJudge.
* `ours:vllm`: our VllmJudge in-process (run with the server's Python, where vLLM is installed).
* options for `ours`: `chunk=N` (requests per backend call; 1 = one at a time), `dedupe=0|1`,
  `mode=classify|generate` (judge_mode), `batch=N` (TorchJudge rows per forward pass; OpenAIJudge requests
  in flight), `replay=0|1` (also time the backend alone on the recorded trace),
  `layout=auto|task_first|sample_first` (evaluate's `prompt_layout`: one row before and after a relayout).

    python -m benchmarks harness                                    # every row, 10 samples, default judge
    python -m benchmarks harness --samples 50 --runs peers          # RAGAS vs us only
    python -m benchmarks harness --judge /models/qwen2.5-coder-1.5b-instruct-q4_k_m.gguf --samples 4
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import json
import os
import platform
import resource
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
PEERS = ["ragas:server", "ours:server", "ragas:torch", "ours:torch", "ours:vllm"]
ABLATIONS = [
    "ours:torch:chunk=1,dedupe=0",
    "ours:torch:dedupe=0",
    "ours:torch:mode=generate",
    "ours:torch:batch=4",
    "ours:torch:batch=16",
    "ours:server:chunk=1,dedupe=0",
]
PRESETS = {"all": PEERS + ABLATIONS, "peers": PEERS, "ablations": ["ours:torch", *ABLATIONS]}
SERVED_NAME = "judge"
SKIPPED_EXIT = 3
COUNTS_NOTE = (
    "server rows: requests and tokens from the server's /metrics counters read before and after the run "
    "(both tools alike; a classify request decodes one token there); where a server has no /metrics, from "
    "each response's usage. In-process rows: ours from the backend's results (a classify request is one "
    "forward pass, no generated token), RAGAS's by counting around the model's generate(). Peak RSS: the "
    "worker process tree plus, for server rows, the server's, sampled every 0.25 s. End-to-end / "
    "backend-only: the run's wall time over the time the backend needs for the same requests, replayed "
    "from the trace in the engine's batches."
)


@dataclass(frozen=True)
class Run:
    """One row of the benchmark."""

    side: str
    backend: str
    options: dict[str, str] = field(default_factory=dict)

    @property
    def name(self) -> str:
        base = f"{self.side}:{self.backend}"
        return base + (":" + ",".join(f"{k}={v}" for k, v in self.options.items()) if self.options else "")

    @property
    def chunk(self) -> int:
        return int(self.options.get("chunk", 1024))

    @property
    def dedupe(self) -> bool:
        return self.options.get("dedupe", "1") == "1"

    @property
    def mode(self) -> str:
        return self.options.get("mode", "classify")

    @property
    def batch(self) -> int | None:
        return int(self.options["batch"]) if "batch" in self.options else None

    @property
    def layout(self) -> str:
        return self.options.get("layout", "auto")

    @property
    def replay(self) -> bool:
        return self.options.get("replay", "0" if self.options else "1") == "1"

    def what(self) -> str:
        base = {
            "ragas:server": "RAGAS, ChatOpenAI -> vLLM server",
            "ours:server": "ours, OpenAIJudge -> vLLM server",
            "ragas:torch": "RAGAS, HuggingFacePipeline in-process",
            "ours:torch": "ours, TorchJudge in-process",
            "ours:vllm": "ours, VllmJudge in-process",
        }[f"{self.side}:{self.backend}"]
        notes = []
        if self.chunk == 1 and not self.dedupe:
            notes.append("one request at a time")
        else:
            notes += [f"chunk {self.chunk}"] if "chunk" in self.options else []
            notes += ["dedupe off"] if not self.dedupe else []
        notes += [f"judge_mode={self.mode}"] if "mode" in self.options else []
        notes += [f"prompt_layout={self.layout}"] if "layout" in self.options else []
        if self.batch is not None:
            notes.append(f"batch {self.batch}" if self.backend != "server" else f"{self.batch} in flight")
        return base + (f" ({', '.join(notes)})" if notes else "")


OPTIONS = {"chunk", "dedupe", "mode", "batch", "replay", "layout"}
LAYOUTS = ("auto", "task_first", "sample_first")


def parse_run(text: str) -> Run:
    """`SIDE:BACKEND[:k=v,...]` -> Run, with a clear error for anything else.

    >>> parse_run("ours:torch:chunk=1,dedupe=0").what()
    'ours, TorchJudge in-process (one request at a time)'
    >>> parse_run("ours:server:layout=sample_first").what()
    'ours, OpenAIJudge -> vLLM server (prompt_layout=sample_first)'
    """
    parts = text.split(":", 2)
    if len(parts) < 2 or f"{parts[0]}:{parts[1]}" not in (*PEERS,):
        raise ValueError(
            f"--runs {text!r}: a row starts with one of {PEERS} (or use a preset {list(PRESETS)})."
        )
    options: dict[str, str] = {}
    if len(parts) == 3:
        if parts[0] != "ours":
            raise ValueError(f"--runs {text!r}: options apply to ours:* rows only; RAGAS runs as documented.")
        for item in parts[2].split(","):
            key, _, value = item.partition("=")
            if key not in OPTIONS or not value:
                raise ValueError(f"--runs {text!r}: option {item!r}; valid: {sorted(OPTIONS)} as key=value.")
            if key == "layout" and value not in LAYOUTS:
                raise ValueError(f"--runs {text!r}: layout={value!r}; valid: {list(LAYOUTS)}.")
            options[key] = value
    return Run(parts[0], parts[1], options)


def expand_runs(items: list[str]) -> list[Run]:
    names: list[str] = []
    for item in items:
        for name in PRESETS.get(item, [item]):
            if name not in names:
                names.append(name)
    return [parse_run(n) for n in names]


# --------------------------------------------------------------------------------------------------------
# The worker: one row, in its own process.
# --------------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class RowConfig:
    """What a worker needs for its row, the same for every row but the last two: the parent writes it as
    JSON beside the row (`config-<row>.json`) and the worker reads it back (`RowConfig.read`)."""

    data: str
    metrics: tuple[str, ...]
    judge_dir: str
    embedder_dir: str
    max_tokens: int
    max_model_len: int
    parallelism: int | None
    timeout: float
    out: str
    server_url: str | None
    server_model: str
    server_pid: int | None = None
    run: str = ""  # the row's name
    result: str = ""  # where the worker writes the row's result

    def write(self, path: Path) -> None:
        path.write_text(json.dumps(dataclasses.asdict(self)))

    @classmethod
    def read(cls, path: Path) -> RowConfig:
        fields = json.loads(path.read_text())
        return cls(**{**fields, "metrics": tuple(fields["metrics"])})


def _ours_judge(run: Run, cfg: RowConfig) -> Any:
    """Our judge for the row, built from a `ModelSpec` like every other model of ours."""
    from ascend_eval.models.errors import MissingDependencyError
    from ascend_eval.models.factory import build
    from ascend_eval.models.spec import ModelSpec

    if run.backend == "server":
        spec = ModelSpec(
            model=cfg.server_url,
            role="judge",
            served_model_name=cfg.server_model,
            request_timeout=cfg.timeout,
            parallelism=run.batch or cfg.parallelism,
        )
    elif run.backend == "torch":
        spec = ModelSpec(
            model=cfg.judge_dir,
            role="judge",
            backend="torch",
            device="cpu",
            max_model_len=cfg.max_model_len,
            batch_size=run.batch or 64,
        )
    else:
        # An in-process engine. Its KV cache is the server row's 1 GiB: our vLLM runtime's CPU default
        # (`CPU_KV_CACHE_BYTES`), as the server gets VLLM_CPU_KVCACHE_SPACE=1.
        os.environ.setdefault("VLLM_ENABLE_V1_MULTIPROCESSING", "0")
        spec = ModelSpec(
            model=cfg.judge_dir,
            role="judge",
            backend="vllm",
            device="cpu",
            dtype="float32",
            max_model_len=cfg.max_model_len,
        )
    try:
        return build(spec)
    except MissingDependencyError as e:  # vLLM is not installed in the Python that runs the row
        raise SkipRow(str(e)) from e


class SkipRow(Exception):
    """The row cannot run in this environment; the reason goes into the report."""


def _server_counts(cfg: RowConfig) -> dict[str, float] | None:
    """The server's counters before or after a timed phase (whose prefix cache starts empty)."""
    from benchmarks.server import read_counters, reset_prefix_cache

    if not cfg.server_url:
        return None
    counters = read_counters(cfg.server_url)
    reset_prefix_cache(cfg.server_url)
    return counters


def _counted_by_server(out: dict[str, Any], run: Run, cfg: RowConfig, before: Any) -> bool:
    """Put the server's own request and token counters for this run into `out`; False where there are none
    (an in-process row, or a server without /metrics)."""
    from benchmarks.server import counter_delta

    delta = counter_delta(before, _server_counts(cfg)) if run.backend == "server" else None
    if delta is None:
        return False
    out.update(
        judge_requests=delta["requests"],
        prompt_tokens=delta["prompt_tokens"],
        completion_tokens=delta["completion_tokens"],
        prompt_tokens_cached=delta["prompt_tokens_cached"],
        count_source="server /metrics",
    )
    return True


@contextlib.contextmanager
def _server_timeline(run: Run, cfg: RowConfig) -> Iterator[dict[str, Any]]:
    """Around a server row's timed phase: the server's counters, queue and (for a server the harness
    started) CPU time every 2 s, written beside the report (`timeline-<row>.jsonl`); the dict it yields
    gets their sum, `server_time` (`server.timeline_summary`), for the row's result."""
    from benchmarks.server import ServerTimeline, timeline_summary

    timed: dict[str, Any] = {}
    if run.backend != "server" or not cfg.server_url:
        yield timed
        return
    with ServerTimeline(cfg.server_url, pid=cfg.server_pid) as timeline:
        yield timed
    timeline.write(Path(cfg.out) / f"timeline-{_slug(run.name)}.jsonl")
    timed["server_time"] = timeline_summary(timeline.samples)


def worker_ours(run: Run, cfg: RowConfig, data: dict[str, list]) -> dict[str, Any]:
    from ascend_eval.models.factory import build
    from ascend_eval.models.spec import ModelSpec
    from benchmarks.ours_side import replay, run_ours, warm_up
    from benchmarks.server import reset_prefix_cache

    started = time.perf_counter()
    judge = _ours_judge(run, cfg)
    embedder = build(ModelSpec(model=cfg.embedder_dir, role="embedder", device="cpu"))
    warm_up(judge, embedder)  # loads both: the load time is measured here, outside the timed run
    load = time.perf_counter() - started
    # The trace (every request's full prompt) is written only where it is replayed.
    trace = Path(cfg.out) / f"trace-{_slug(run.name)}.jsonl" if run.replay else None
    before = _server_counts(cfg) if run.backend == "server" else None
    with _server_timeline(run, cfg) as timed:
        out = run_ours(
            data,
            list(cfg.metrics),
            judge,
            embedder,
            max_tokens=cfg.max_tokens,
            trace_path=trace,
            chunk_size=run.chunk,
            dedupe=run.dedupe,
            judge_mode=run.mode,
            prompt_layout=run.layout,
        )
    out.update(timed)
    out["count_source"] = "backend results"
    if not _counted_by_server(out, run, cfg, before) and run.backend == "server":
        out["count_source"] = "response usage"
    if trace is not None:
        if run.backend == "server":
            reset_prefix_cache(cfg.server_url)  # the replay starts with an empty prefix cache too
        replayed = replay(trace, judge, embedder)
        out["replay_seconds"] = replayed["seconds"]
        out["replay_calls"] = replayed["calls"]
        out["trace"] = str(trace)
    out["load_seconds"] = load
    close = getattr(judge, "close", None)
    if close is not None:
        close()
    return out


def worker_ragas(run: Run, cfg: RowConfig, data: dict[str, list]) -> dict[str, Any]:
    from benchmarks import ragas_side

    started = time.perf_counter()
    emb = ragas_side.embeddings(cfg.embedder_dir)
    counts = ragas_side.Counts()
    if run.backend == "server":
        llm = ragas_side.server_llm(cfg.server_url, cfg.server_model, cfg.max_tokens, counts)
        llm.langchain_llm.invoke("Say OK.")
    else:
        llm, pipe = ragas_side.pipeline_llm(cfg.judge_dir, cfg.max_tokens, counts)
        pipe("Say OK.", max_new_tokens=4)
    emb.embed_query("warm-up")
    counts.reset()
    load = time.perf_counter() - started
    before = _server_counts(cfg) if run.backend == "server" else None
    with _server_timeline(run, cfg) as timed:
        out = ragas_side.run_ragas(data, list(cfg.metrics), llm, emb, timeout=cfg.timeout)
    out.update(timed)
    if not _counted_by_server(out, run, cfg, before):
        out.update(
            judge_requests=counts.requests,
            prompt_tokens=counts.prompt_tokens,
            completion_tokens=counts.completion_tokens,
            count_source="response usage" if run.backend == "server" else "around model.generate",
        )
    out["load_seconds"] = load
    return out


def worker(config_path: Path) -> int:
    cfg = RowConfig.read(config_path)
    run = parse_run(cfg.run)
    data = json.loads(Path(cfg.data).read_text())
    result_path = Path(cfg.result)
    try:
        out = worker_ragas(run, cfg, data) if run.side == "ragas" else worker_ours(run, cfg, data)
    except SkipRow as e:
        result_path.write_text(json.dumps({"status": "skipped", "reason": str(e)}))
        return SKIPPED_EXIT
    out["status"] = "ok"
    out["worker_peak_rss_mib"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    result_path.write_text(json.dumps(out, ensure_ascii=False))
    return 0


# --------------------------------------------------------------------------------------------------------
# The parent: data, server, one worker per row, memory, report.
# --------------------------------------------------------------------------------------------------------


class PeakMemory:
    """Samples the summed RSS of some process trees every 0.25 s; `peak` in MiB."""

    def __init__(self, pids: list[int]) -> None:
        self.pids = pids
        self.peak = 0.0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, daemon=True)

    def _loop(self) -> None:
        from benchmarks.server import process_tree_sum

        while not self._stop.is_set():
            trees = (process_tree_sum(pid, lambda p: p.memory_info().rss) for pid in self.pids)
            self.peak = max(self.peak, sum(t or 0.0 for t in trees) / 2**20)
            self._stop.wait(0.25)

    def __enter__(self) -> PeakMemory:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()


def _slug(name: str) -> str:
    return "".join(c if c.isalnum() else "-" for c in name).strip("-")


def machine() -> str:
    cpu = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    import psutil

    text = f"{cpu}, {os.cpu_count()} cores, {psutil.virtual_memory().total / 2**30:.0f} GiB RAM"
    if shutil.which("nvidia-smi"):
        gpu = subprocess.run(
            ["nvidia-smi", "--query-gpu=name", "--format=csv,noheader"],
            capture_output=True,
            text=True,
            check=False,
        ).stdout.strip()
        text += f", GPU {gpu or 'none visible'}"
    return text


def resolve_model(model: str, role: str) -> Path:
    """A shipped model name, a local HF directory or (judge) a GGUF file -> a local HF directory."""
    from ascend_eval.models.factory import local_path
    from ascend_eval.models.spec import ModelSpec

    return local_path(ModelSpec(model=model, role=role))


def model_length(model_dir: Path, wanted: int) -> int:
    """`wanted`, or the model's own context length where that is shorter (both tools get the same)."""
    config = json.loads((model_dir / "config.json").read_text())
    return min(wanted, int(config.get("max_position_embeddings") or wanted))


def load_data(args: argparse.Namespace, out: Path) -> tuple[Path, str]:
    from benchmarks.datagen import generate

    if args.data:
        from ascend_eval.examples import builtin_dataset

        source = builtin_dataset(args.data) or Path(args.data)
        data = json.loads(Path(source).read_text())
        data = {k: v[: args.samples] for k, v in data.items()}
        label = f"{args.data}, first {len(data['question'])}"
    else:
        data = generate(args.samples, seed=args.seed)
        label = f"benchmarks.datagen seed {args.seed}, en+zh, K=3/5"
    path = out / "data.json"
    path.write_text(json.dumps(data, ensure_ascii=False))
    return path, label


def run_worker(run: Run, cfg: RowConfig, python: str, extra_pids: list[int], out: Path) -> dict[str, Any]:
    slug = _slug(run.name)
    config_path, result_path = out / f"config-{slug}.json", out / f"result-{slug}.json"
    result_path.unlink(missing_ok=True)
    dataclasses.replace(cfg, run=run.name, result=str(result_path)).write(config_path)
    env = {
        **os.environ,
        "HF_HUB_OFFLINE": "1",
        "TRANSFORMERS_OFFLINE": "1",
        "RAGAS_DO_NOT_TRACK": "true",
        "TOKENIZERS_PARALLELISM": "false",
        "PYTHONPATH": str(REPO),
    }
    log_path = out / f"log-{slug}.txt"
    print(f"[bench] {run.name}: running", flush=True)
    with log_path.open("wb") as log:
        process = subprocess.Popen(
            [python, "-m", "benchmarks.harness", "--worker", str(config_path)],
            cwd=REPO,
            stdout=log,
            stderr=subprocess.STDOUT,
            env=env,
        )
        with PeakMemory([process.pid, *extra_pids]) as memory:
            try:
                code = process.wait()
            except BaseException:  # interrupted: the worker goes too, then the server (in main)
                process.kill()
                process.wait()
                raise
    base = {
        "name": run.name,
        "side": run.side,
        "backend": run.backend,
        "what": run.what(),
        "log": str(log_path),
    }
    if result_path.is_file():
        result = json.loads(result_path.read_text())
        result.update(base, peak_rss_mib=memory.peak)
        print(f"[bench] {run.name}: {result['status']}", flush=True)
        return result
    tail = log_path.read_text(errors="replace").strip().splitlines()[-1:] or ["no output"]
    print(f"[bench] {run.name}: failed (exit {code}): {tail[0]}", flush=True)
    return {**base, "status": "failed", "reason": f"exit {code}: {tail[0][:300]}"}


def skip_reason(run: Run, args: argparse.Namespace, server_python: str | None) -> str | None:
    if run.backend == "server" and not args.server_url and server_python is None:
        return (
            f"no server: {args.server_python} does not exist (make install-vllm), and no --server-url given"
        )
    if run.backend == "vllm" and server_python is None:
        return f"vLLM is not installed here: {args.server_python} does not exist (make install-vllm)"
    return None


def _not_run(run: Run, status: str, reason: str) -> dict[str, Any]:
    return {"name": run.name, "side": run.side, "backend": run.backend, "what": run.what(), "status": status,
            "reason": reason}  # fmt: skip


def _run_row(
    run: Run, cfg: RowConfig, args: argparse.Namespace, server_python: str | None, server: Any
) -> dict[str, Any]:
    """One row's result: skipped with the reason, or run in a worker."""
    reason = skip_reason(run, args, server_python)
    if reason is not None:
        print(f"[bench] {run.name}: skipped: {reason}", flush=True)
        return _not_run(run, "skipped", reason)
    python = server_python if run.backend == "vllm" and server_python else sys.executable
    extra = [server.process.pid] if server is not None and server.process and run.backend == "server" else []
    return run_worker(run, cfg, python, extra, args.out)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks harness",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--samples", type=int, default=10, help="dataset size (default 10)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--data",
        default=None,
        help="a built-in dataset name or columnar JSON file instead of "
        "generated data (its first --samples rows)",
    )
    parser.add_argument("--metrics", nargs="+", default=None, help="default: all twelve")
    parser.add_argument(
        "--runs", nargs="+", default=["all"], help=f"rows or presets {list(PRESETS)} (default all)"
    )
    parser.add_argument(
        "--judge", default="smollm2-135m-instruct", help="shipped name, HF directory or .gguf"
    )
    parser.add_argument(
        "--embedder", default="all-minilm-l6-v2", help="shipped name or sentence-transformers dir"
    )
    parser.add_argument(
        "--max-tokens", type=int, default=256, help="generation cap, both tools (default 256)"
    )
    parser.add_argument("--max-model-len", type=int, default=4096)
    parser.add_argument(
        "--parallelism",
        type=int,
        default=None,
        help="OpenAIJudge requests in flight (default: ours, 128; RAGAS keeps its own max_workers=16)",
    )
    parser.add_argument(
        "--timeout",
        type=float,
        default=3600.0,
        help="RAGAS's per-job timeout and our per-request timeout, seconds",
    )
    parser.add_argument(
        "--server-python",
        default=str(REPO / ".venv-vllm" / "bin" / "python"),
        help="the Python of vLLM's venv: starts the server and runs ours:vllm",
    )
    parser.add_argument(
        "--server-dtype",
        default="bfloat16",
        help="the dtype the started server computes in (default bfloat16: on CPUs with AVX512-BF16/AMX "
        "about 3x the prefill of float32; both tools share the server)",
    )
    parser.add_argument(
        "--server-block-size",
        type=int,
        default=None,
        help="the started server's KV block, the prefix cache's unit (default: the smallest the backend "
        "takes, 32 on vllm-cpu and 16 on GPUs; 0: vLLM's own default, 128 on vllm-cpu). Both tools share "
        "the server; a small block is what a user tunes a judge server to, and it is the fairer setting: "
        "RAGAS's requests of a sample share long prefixes too",
    )
    parser.add_argument(
        "--server-kv-gib",
        type=int,
        default=1,
        help="the started server's KV cache in GiB (default 1), which its prefix cache lives in: a cache too "
        "small for the prefixes a run shares evicts them, and both tools compute them again",
    )
    parser.add_argument("--server-url", default=None, help="use this running server instead of starting one")
    parser.add_argument("--server-model", default=SERVED_NAME, help="model name at --server-url")
    parser.add_argument("--out", type=Path, default=REPO / "benchmarks" / "results")
    parser.add_argument("--worker", type=Path, default=None, help=argparse.SUPPRESS)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if args.worker is not None:
        return worker(args.worker)
    from ascend_eval.metrics import metric_names

    runs = expand_runs(args.runs)  # bad input fails here, before any model loads
    metrics = args.metrics or metric_names()
    unknown = sorted(set(metrics) - set(metric_names()))
    if unknown:
        raise SystemExit(f"--metrics: unknown {unknown}; valid: {metric_names()}")
    if not 1 <= args.samples <= 10_000:
        raise SystemExit("--samples: between 1 and 10,000")
    args.out.mkdir(parents=True, exist_ok=True)
    # SIGTERM unwinds like Ctrl-C, so that the worker and the judge server are always stopped.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    judge_dir = resolve_model(args.judge, "judge")
    embedder_dir = resolve_model(args.embedder, "embedder")
    data_path, data_label = load_data(args, args.out)
    n = len(json.loads(data_path.read_text())["question"])
    max_model_len = model_length(judge_dir, args.max_model_len)
    server_python = args.server_python if Path(args.server_python).is_file() else None
    cfg = RowConfig(
        data=str(data_path),
        metrics=tuple(metrics),
        judge_dir=str(judge_dir),
        embedder_dir=str(embedder_dir),
        max_tokens=args.max_tokens,
        max_model_len=max_model_len,
        parallelism=args.parallelism,
        timeout=args.timeout,
        out=str(args.out),
        server_url=args.server_url,
        server_model=args.server_model,
    )
    results: list[dict[str, Any]] = [{} for _ in runs]
    server = None
    need_server = any(r.backend == "server" for r in runs) and not args.server_url and server_python
    try:
        if need_server:
            from ascend_eval.models.device import resolve_device
            from benchmarks.server import JudgeServer

            if args.server_block_size is None:
                args.server_block_size = 32 if resolve_device(None).type == "cpu" else 16
            server = JudgeServer(
                server_python,
                str(judge_dir),
                SERVED_NAME,
                max_model_len=max_model_len,
                dtype=args.server_dtype,
                log=args.out / "log-server.txt",
                block_size=args.server_block_size or None,
                kv_cache_gib=args.server_kv_gib,
                ready_timeout=args.timeout,
            )
            print(f"[bench] starting the judge server ({server_python})", flush=True)
            server.start()
            print(f"[bench] server ready in {server.ready_seconds:.0f}s at {server.url}", flush=True)
            cfg = dataclasses.replace(
                cfg, server_url=server.url, server_model=SERVED_NAME, server_pid=server.process.pid
            )
        header = {
            "benchmark": "ascend-eval vs RAGAS 0.4.3",
            "samples": n,
            "data": data_label,
            "metrics": metrics,
            "judge": str(args.judge),
            "judge_dir": str(judge_dir),
            "embedder": str(args.embedder),
            "max_tokens": args.max_tokens,
            "machine": machine(),
            "command": " ".join(
                ["python -m benchmarks.harness", *(argv if argv is not None else sys.argv[1:])]
            ),
            "counts_note": COUNTS_NOTE,
            "server_dtype": args.server_dtype if server is not None else None,
            "server_block_size": (args.server_block_size or "vllm default") if server is not None else None,
            "server_kv_gib": args.server_kv_gib if server is not None else None,
            "server_ready_seconds": server.ready_seconds if server is not None else None,
        }
        # Server rows first, so that the server is stopped (and its memory freed) before in-process rows.
        order = sorted(range(len(runs)), key=lambda i: runs[i].backend != "server")
        for position, i in enumerate(order):
            results[i] = _run_row(runs[i], cfg, args, server_python, server)
            # The report so far is on disk after every row: a run stopped early keeps what it measured.
            write_report(args.out, header, runs, results, final=False)
            if server is not None and all(runs[j].backend != "server" for j in order[position + 1 :]):
                server.stop()
    finally:
        if server is not None:
            server.stop()
    print(write_report(args.out, header, runs, results, final=True))
    return 0 if all(r["status"] != "failed" for r in results) else 1


def write_report(
    out: Path, header: dict[str, Any], runs: list[Run], results: list[dict[str, Any]], *, final: bool
) -> str:
    """Write bench.json and bench.md for the rows finished so far (the others listed as not run yet) and
    return the markdown."""
    from benchmarks.ragas_side import __doc__ as ragas_doc
    from benchmarks.report import derive, markdown

    rows = [
        dict(r) if r else _not_run(run, "pending", "not run yet")
        for run, r in zip(runs, results, strict=True)
    ]
    derive(rows, header["samples"])
    report = {
        **header,
        "created": time.strftime("%Y-%m-%d %H:%M:%S"),
        "ragas_setup": " ".join((ragas_doc or "").split("\n\n")[1].split()),
        "complete": final,
        "runs": rows,
    }
    (out / "bench.json").write_text(json.dumps(report, indent=1, ensure_ascii=False))
    table = markdown(report)
    (out / "bench.md").write_text(table + "\n")
    return table


if __name__ == "__main__":
    sys.exit(main())
