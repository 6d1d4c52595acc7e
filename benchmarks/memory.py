"""Peak memory of one `evaluate()` process against the number of samples.

Writes N synthetic bilingual samples (`benchmarks.datagen`, each made unique by its index) as JSONL, runs
`evaluate()` on them in a fresh subprocess per N against a rule-based in-process judge and embedder (no
model), with a temporary request cache and results folder (`out=`, the streamed path; `--in-memory` keeps
every result in memory instead), and reports each child's peak RSS (VmHWM) and wall time as
`memory.json` and `memory.md` under `--out`.

    python -m benchmarks memory --samples 1000 10000 100000          # streamed into a results folder
    python -m benchmarks memory --samples 1000 10000 --in-memory     # results kept in memory
    python -m benchmarks memory --samples 10000 --tracemalloc 15     # also the top allocations
    python -m benchmarks memory --samples 1000 10000 --job           # a job (`ascend-eval job run`)

`--job` runs a job instead (`Jobs.create(spec).run()`, the path of `ascend-eval job run` and of the REST
service) on the same file, faithfulness only, its judge the HTTP rule server of `benchmarks.rule_server`
in its own process, so that the server's memory is not counted.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from benchmarks.in_process import machine

BASE = 2000
"""Distinct generated samples; sample i is base sample i % BASE with its index written into its text."""


def write_dataset(n: int, path: Path) -> None:
    from benchmarks.datagen import generate

    base = generate(min(n, BASE), seed=0)
    with path.open("w", encoding="utf-8") as f:
        for i in range(n):
            j = i % len(base["question"])
            row = {
                "question": f"{base['question'][j]} (#{i})",
                "contexts": [f"[{i}] {c}" for c in base["contexts"][j]],
                "answer": f"Record {i}. {base['answer'][j]}",
                "ground_truth": base["ground_truth"][j],
            }
            f.write(json.dumps(row, ensure_ascii=False) + "\n")


def _judge():
    from ascend_eval.models.judge.replay import ReplayJudge
    from benchmarks.request_counts import LengthEmbedder, generate_rule

    return ReplayJudge(generate_rule, lambda r: [0.2] * (len(r.labels) - 1) + [0.8], model_id="rules"), (
        LengthEmbedder()
    )


def _peak_kib() -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1])
    import resource

    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss


def child(data: Path, metrics: list[str], cache: Path, top: int, stream: bool = True) -> dict:
    import ascend_eval

    if top:
        import tracemalloc

        tracemalloc.start(8)
    judge, embedder = _judge()
    before = _peak_kib()
    t0 = time.perf_counter()
    result = ascend_eval.evaluate(
        str(data), metrics, judge=judge, embedder=embedder, cache_dir=cache, progress=False, language="auto",
        out=cache.parent / "out" if stream else None,
    )  # fmt: skip
    out = {
        "wall_s": time.perf_counter() - t0,
        "peak_rss_mib": _peak_kib() / 1024,
        "rss_before_mib": before / 1024,
        "scores": {m: len(r) for m, r in result.results.items()},
        "means": {a["name"]: a["mean"] for a in result.aggregates()},
    }
    if top:
        snapshot = tracemalloc.take_snapshot()
        out["tracemalloc_peak_mib"] = tracemalloc.get_traced_memory()[1] / 2**20
        out["top"] = [
            f"{s.size / 2**20:.1f} MiB {s.count} blocks {s.traceback.format()[-1].strip()}"
            for s in snapshot.statistics("lineno")[:top]
        ]
    return out


def job_child(data: Path, metrics: list[str], root: Path, judge_url: str) -> dict:
    from ascend_eval.jobs import Jobs, SecretStore

    spec = {
        "metric": metrics if len(metrics) > 1 else metrics[0],
        "dataset": str(data),
        "metric_params": {"judge_llm": {"model": {"url": judge_url, "name": "rules"}}},
    }
    jobs = Jobs(root / "jobs", secrets=SecretStore(root / "secrets"))
    before = _peak_kib()
    t0 = time.perf_counter()
    job = jobs.create(spec, job_id="memory").run()
    wall, peak = time.perf_counter() - t0, _peak_kib()
    results = job.results()  # after the peak is read: what a reader of every row costs is not the job's
    return {
        "wall_s": wall,
        "peak_rss_mib": peak / 1024,
        "rss_before_mib": before / 1024,
        "scores": {a["name"]: a["count"] + a["nan_count"] for a in results["aggregate_scores"]},
        "means": {a["name"]: a["mean"] for a in results["aggregate_scores"]},
    }


def _rule_server() -> tuple[subprocess.Popen[str], str]:
    server = subprocess.Popen(
        [sys.executable, "-m", "benchmarks.rule_server"], stdout=subprocess.PIPE, text=True
    )
    assert server.stdout is not None
    return server, server.stdout.readline().strip()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--samples", type=int, nargs="+", default=[1000, 10000])
    parser.add_argument("--metrics", nargs="+", default=["faithfulness", "answer_similarity"])
    parser.add_argument("--tracemalloc", type=int, default=0, help="list this many top allocations")
    parser.add_argument(
        "--in-memory",
        action="store_true",
        help="keep the results in memory (no results folder), as a run without `out` does",
    )
    parser.add_argument("--job", action="store_true", help="run a job (faithfulness, an HTTP judge)")
    parser.add_argument("--out", type=Path, default=Path("benchmarks/results"))
    parser.add_argument("--child", nargs=2, metavar=("DATA", "CACHE"), help=argparse.SUPPRESS)
    parser.add_argument("--judge-url", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.job and args.metrics == parser.get_default("metrics"):
        args.metrics = ["faithfulness"]
    if args.child and args.job:
        data, root = Path(args.child[0]), Path(args.child[1])
        print(json.dumps(job_child(data, args.metrics, root, args.judge_url)))
        return 0
    if args.child:
        data, cache = Path(args.child[0]), Path(args.child[1])
        print(json.dumps(child(data, args.metrics, cache, args.tracemalloc, not args.in_memory)))
        return 0
    rows = []
    server, judge_url = _rule_server() if args.job else (None, "")
    try:
        for n in args.samples:
            rows.append(_measure(n, args, judge_url))
    finally:
        if server is not None:
            server.terminate()
            server.wait()
    if args.job:
        mode = "a job, its judge over HTTP"
    else:
        mode = "results kept in memory" if args.in_memory else "streamed into a results folder (out=)"
    report = {"machine": machine(), "metrics": args.metrics, "mode": mode, "rows": rows}
    what = "job" if args.job else "evaluate()"
    lines = [
        f"Peak RSS of one {what} process ({', '.join(args.metrics)}; rule judge; {mode})",
        "",
        f"| samples | peak RSS (MiB) | RSS before the {what.rstrip('()')} (MiB) | wall (s) |",
        "| ---: | ---: | ---: | ---: |",
    ]
    for r in rows:
        peak, before = r["peak_rss_mib"], r["rss_before_mib"]
        lines.append(f"| {r['samples']} | {peak:.0f} | {before:.0f} | {r['wall_s']:.1f} |")
    name = "memory-job" if args.job else "memory"
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / f"{name}.json").write_text(json.dumps(report, indent=2))
    (args.out / f"{name}.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))
    return 0


def _measure(n: int, args: argparse.Namespace, judge_url: str) -> dict:
    """One fresh child process on `n` samples: its peak RSS and wall time."""
    with tempfile.TemporaryDirectory() as tmp:
        data = Path(tmp) / f"data-{n}.jsonl"
        write_dataset(n, data)
        cmd = [sys.executable, "-m", "benchmarks.memory", "--child", str(data), str(Path(tmp) / "cache"),
               "--metrics", *args.metrics, "--tracemalloc", str(args.tracemalloc)]  # fmt: skip
        cmd += ["--in-memory"] if args.in_memory else []
        cmd += ["--job", "--judge-url", judge_url] if args.job else []
        done = subprocess.run(cmd, capture_output=True, text=True, check=True)
        row = {"samples": n, **json.loads(done.stdout.strip().splitlines()[-1])}
    print(json.dumps(row, indent=1), file=sys.stderr)
    return row


if __name__ == "__main__":
    sys.exit(main())
