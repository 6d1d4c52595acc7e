"""Wall time of the Ray executor against the local one, on N synthetic samples, one after the other.

Writes N samples (`benchmarks.memory.write_dataset`: bilingual, each made unique by its index) as JSONL and
scores them twice with the same rule judge and embedder (no model: statements are the answer's sentences,
verdicts lean "yes", embeddings are text lengths), each run with a fresh request cache:

* local: `evaluate(path, out=folder)` in this process;
* ray: `evaluate(path, out=folder, executor="ray", num_workers=--workers)`, on a local Ray it starts and
  stops; its aggregates must equal the local run's;
* ray, timed in parts: what that driver does, step by step: read and validate the file (`load_dataset`),
  then `score_on_ray` with `--workers` CPU actors, the scored samples consumed one by one as a sink would,
  to show where Ray's time goes. The judge and embedder travel to the actors pickled.

`ray.json` and `ray.md` under `--out` hold both walls, their ratio, Ray's overhead per sample
((ray - local) / N) and how long Ray took to start.

    python -m benchmarks ray-executor --samples 10000
    python -m benchmarks ray-executor --samples 2000 --workers 1 --batch-size 256
"""

from __future__ import annotations

import argparse
import logging
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from benchmarks.in_process import machine, write
from benchmarks.memory import write_dataset
from benchmarks.request_counts import LengthEmbedder, generate_rule


def lean_yes(request: Any) -> list[float]:
    """Verdicts: the last label at 0.8, the others at 0.2 (as `benchmarks.memory`'s rule judge)."""
    return [0.2] * (len(request.labels) - 1) + [0.8]


def models() -> dict[str, Any]:
    from ascend_eval.models.judge.replay import ReplayJudge

    return {"judge": ReplayJudge(generate_rule, lean_yes, model_id="rules"), "embedder": LengthEmbedder()}


def run_evaluate(data: Path, metrics: list[str], cache: Path, out: Path, **executor: Any) -> dict[str, Any]:
    """What a user runs: `evaluate(path, out=folder)`, the scores streamed into the folder."""
    import ascend_eval

    t0 = time.perf_counter()
    result = ascend_eval.evaluate(
        str(data), metrics, **models(), cache_dir=cache, progress=False, out=out, **executor
    )
    wall = time.perf_counter() - t0
    return {"wall_s": wall, "aggregates": result.aggregates(), "samples": len(result.samples)}


def run_ray(data: Path, metrics: list[str], cache: Path, workers: int, batch_size: int) -> dict[str, Any]:
    from ascend_eval.config import EvaluationConfig
    from ascend_eval.data import load_dataset
    from ascend_eval.executors import score_on_ray

    t0 = time.perf_counter()
    dataset = load_dataset(str(data))  # the driver validates before it hands the file to Ray
    validated = time.perf_counter()
    run = score_on_ray(
        str(data),
        roles=dict(dataset.column_roles),
        count=len(dataset),
        metrics=metrics,
        config=EvaluationConfig.of(**models(), cache_dir=cache),
        num_workers=workers,
        batch_size=batch_size,
    )
    del dataset  # a sink keeps nothing of the samples but their scores
    started = time.perf_counter()
    first: float | None = None
    scored = 0
    for _ in run:
        if first is None:
            first = time.perf_counter()
        scored += 1
    wall = time.perf_counter() - t0
    return {
        "wall_s": wall,
        "validate_s": validated - t0,
        "start_s": started - validated,
        "first_sample_s": (first or started) - t0,
        "scored": scored,
        "workers": run.workers,
        "nodes": len(run.nodes),
        "sent": sum(s.sent for s in run.stages.values()),
    }


def markdown(report: dict[str, Any]) -> str:
    local, on_ray, ray = report["local"], report["evaluate_ray"], report["ray"]
    n = report["samples"]
    title = f"Local executor vs Ray, {n} samples ({', '.join(report['metrics'])}; rule judge)"
    notes = (
        f"validate {ray['validate_s']:.1f} s, Ray start {ray['start_s']:.1f} s, first sample at "
        f"{ray['first_sample_s']:.1f} s, batches of {report['batch_size']}"
    )
    overhead = report["overhead_per_sample_ms"]
    same = "evaluate(path, out=..., executor='ray'): the same aggregates"

    def rate(run: dict[str, Any]) -> str:
        return f"{n / run['wall_s']:.0f}"

    lines = [
        f"{title}, {report['machine']}",
        "",
        "| executor | wall (s) | samples/s | notes |",
        "| --- | ---: | ---: | --- |",
        f"| local | {local['wall_s']:.1f} | {rate(local)} | evaluate(path, out=...) |",
        f"| ray, {report['workers']} CPU actors | {on_ray['wall_s']:.1f} | {rate(on_ray)} | {same} |",
        f"| ray, timed in parts | {ray['wall_s']:.1f} | {rate(ray)} | {notes} |",
        "",
        f"ray / local: {report['ratio']:.2f}; Ray's overhead per sample: {overhead:.2f} ms",
    ]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    formatter = argparse.RawDescriptionHelpFormatter
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=formatter)
    parser.add_argument("--samples", type=int, default=10000)
    parser.add_argument("--metrics", nargs="+", default=["faithfulness", "answer_similarity"])
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--out", type=Path, default=Path("benchmarks/results"))
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.WARNING)
    with tempfile.TemporaryDirectory() as tmp:
        data = Path(tmp) / f"data-{args.samples}.jsonl"
        write_dataset(args.samples, data)
        local = run_evaluate(data, args.metrics, Path(tmp) / "cache-local", Path(tmp) / "out-local")
        print(f"local: {local['wall_s']:.1f} s", file=sys.stderr)
        on_ray = run_evaluate(
            data, args.metrics, Path(tmp) / "cache-ray", Path(tmp) / "out-ray", executor="ray",
            num_workers=args.workers,
        )  # fmt: skip
        print(f"evaluate(executor='ray'): {on_ray['wall_s']:.1f} s", file=sys.stderr)
        if on_ray["aggregates"] != local["aggregates"]:
            raise SystemExit("the Ray run's aggregates differ from the local run's")
        ray = run_ray(data, args.metrics, Path(tmp) / "cache-ray-parts", args.workers, args.batch_size)
        print(f"ray, timed in parts: {ray['wall_s']:.1f} s", file=sys.stderr)
    report = {
        "machine": machine(),
        "samples": args.samples,
        "metrics": args.metrics,
        "workers": args.workers,
        "batch_size": args.batch_size,
        "local": local,
        "evaluate_ray": on_ray,
        "ray": ray,
        "same_aggregates": True,
        "ratio": on_ray["wall_s"] / local["wall_s"],
        "overhead_per_sample_ms": (on_ray["wall_s"] - local["wall_s"]) / args.samples * 1000,
    }
    write(args.out, "ray", report, markdown)
    return 0


if __name__ == "__main__":
    sys.exit(main())
