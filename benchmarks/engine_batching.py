#!/usr/bin/env python3
"""Batched engine vs one request at a time, on the same judge in the same process.

"One at a time" is how RAGAS (and the Ascend RAG SDK, which wraps it) sends work: every prompt of every
sample and metric is its own model call, and identical prompts are sent again. Here both modes run our own
metrics and prompts on one loaded model, so the ratio isolates what batching and deduplication buy.
Nothing is cached between modes (cache off), and the model is loaded and warmed up before timing.

    python -m benchmarks engine-batching                          # default judge and embedder, 16 samples
    python -m benchmarks engine-batching --judge /models/Qwen2.5-1.5B-Instruct --samples 8
"""

from __future__ import annotations

import resource
import sys
import time

import ascend_eval
from ascend_eval.models.factory import resolve
from benchmarks.in_process import arguments, dataset, judge_arg, machine, write

MODES = {
    "batched": {"chunk_size": 1024, "dedupe": True},
    "one_at_a_time": {"chunk_size": 1, "dedupe": False},
}


def run_mode(name, data, metrics, judge, embedder):
    started = time.perf_counter()
    result = ascend_eval.evaluate(
        data, metrics, judge=judge, embedder=embedder, cache_dir=False, progress=False, **MODES[name]
    )
    seconds = time.perf_counter() - started
    rounds = result.rounds
    return {
        "mode": name,
        "wall_seconds": round(seconds, 2),
        "samples_per_second": round(len(data) / seconds, 3),
        "requests": sum(r.requests for r in rounds),
        "sent": sum(r.sent for r in rounds),
        "tokens_in": sum(r.tokens_in for r in rounds),
        "tokens_out": sum(r.tokens_out for r in rounds),
        "nan": {m: dict(result.nan_reasons(m)) for m in result.metrics},
        "means": {a["name"]: a["mean"] for a in result.aggregates()},
    }


def markdown(report):
    lines = [
        "| mode | wall s | samples/s | requests | sent | tokens in | tokens out | NaN |",
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: | --- |",
    ]
    for r in report["runs"]:
        nan = ", ".join(f"{m}: {sum(v.values())}" for m, v in r["nan"].items())
        lines.append(
            f"| {r['mode']} | {r['wall_seconds']} | {r['samples_per_second']} | {r['requests']} | "
            f"{r['sent']} | {r['tokens_in']} | {r['tokens_out']} | {nan} |"
        )
    lines.append(f"\nbatched is **{report['speedup']}x** faster ({report['machine']}).")
    return "\n".join(lines)


def main(argv=None):
    args = arguments(__doc__, samples=16, metrics=["faithfulness", "answer_similarity"]).parse_args(argv)
    data = dataset(args)
    judge = resolve(judge_arg(args), "judge", device=args.device)
    embedder = resolve(args.embedder, "embedder", device=args.device)
    # Load and warm both models outside the timed runs.
    run_mode("batched", data[:1], args.metrics, judge, embedder)

    runs = [run_mode(mode, data, args.metrics, judge, embedder) for mode in ("one_at_a_time", "batched")]
    report = {
        "benchmark": "engine_batching",
        "samples": len(data),
        "metrics": args.metrics,
        "judge": judge.model_id,
        "embedder": embedder.model_id,
        "machine": machine(),
        "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024),
        "runs": runs,
        "speedup": round(runs[0]["wall_seconds"] / runs[1]["wall_seconds"], 2),
    }
    write(args.out, "engine_batching", report, markdown)
    return 0


if __name__ == "__main__":
    sys.exit(main())
