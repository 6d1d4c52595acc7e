#!/usr/bin/env python3
"""What each part of TorchJudge's decode loop buys, on one loaded judge in one process.

The same generation-heavy metrics run four times on the same data, each time with one more part on:

- `concat_kv`: transformers' own KV cache (every step concatenates the whole cache), no loop guard, no
  drafts: how the decode loop ran before these parts;
- `in_place_kv`: the cache appends in place (`models/judge/torch/kv.py`);
- `loop_guard`: rows that keep repeating themselves stop (`TorchJudgeConfig.loop_guard`);
- `drafts`: greedy rows verify prompt-lookup drafts (`TorchJudgeConfig.speculative_tokens`); the default.

The prefix cache is cleared before each mode and nothing is cached between modes, so each does the same
work. Scores must be identical between the first two modes and between the last two (the guard turns
rows that would have reached max_tokens into NaN with another reason, which the means leave out anyway).

    python -m benchmarks torch-decode                      # default judge, 8 samples
    python -m benchmarks torch-decode --samples 16 --metrics faithfulness
"""

from __future__ import annotations

import dataclasses
import sys
import time
from typing import Any

import ascend_eval
from ascend_eval.models.factory import resolve
from ascend_eval.models.lazy import runtime_of
from benchmarks.in_process import arguments, dataset, judge_arg, machine, write

MODES: dict[str, dict[str, Any]] = {
    "concat_kv": {"in_place": False, "loop_guard": 0, "speculative_tokens": 0},
    "in_place_kv": {"in_place": True, "loop_guard": 0, "speculative_tokens": 0},
    "loop_guard": {"in_place": True, "loop_guard": 48, "speculative_tokens": 0},
    "drafts": {"in_place": True, "loop_guard": 48, "speculative_tokens": 64},
}


def configure(judge: Any, *, in_place: bool, loop_guard: int, speculative_tokens: int) -> None:
    runner = judge.runner
    runner.config = dataclasses.replace(
        runner.config, loop_guard=loop_guard, speculative_tokens=speculative_tokens
    )
    # The model's own cache kind (DynamicLayer) where in-place appends are off.
    runner.new_cache = type(runner).new_cache.__get__(runner) if in_place else runner.model_cache
    judge.clear_prefix_cache()


def run_mode(name: str, data: Any, metrics: list[str], judge: Any, embedder: Any) -> dict[str, Any]:
    configure(judge, **MODES[name])
    runner = judge.runner
    forwards, row_steps = runner.forward_batches, runner.decode_row_steps
    started = time.perf_counter()
    result = ascend_eval.evaluate(
        data, metrics, judge=judge, embedder=embedder, cache_dir=False, progress=False
    )
    seconds = time.perf_counter() - started
    return {
        "mode": name,
        "wall_seconds": round(seconds, 1),
        "tokens_in": sum(s.tokens_in for s in result.stages.values()),
        "tokens_out": sum(s.tokens_out for s in result.stages.values()),
        "forward_passes": runner.forward_batches - forwards,
        "decode_row_steps": runner.decode_row_steps - row_steps,
        "nan": {m: dict(result.nan_reasons(m)) for m in result.metrics},
        "means": {a["name"]: a["mean"] for a in result.aggregates()},
        "scores": {m: result[m] for m in result.metrics},
    }


def same(a: dict[str, Any], b: dict[str, Any]) -> bool:
    """Whether two modes gave the same score for every sample (NaN equal to NaN)."""
    return all(
        all(x == y or (x != x and y != y) for x, y in zip(a["scores"][m], b["scores"][m], strict=True))
        for m in a["scores"]
    )


def markdown(report: dict[str, Any]) -> str:
    first = report["runs"][0]["mode"]
    lines = [
        f"| mode | wall s | x {first} | tokens out | forward passes | decode row steps | NaN |",
        "| --- | ---: | ---: | ---: | ---: | ---: | --- |",
    ]
    base = report["runs"][0]["wall_seconds"]
    for r in report["runs"]:
        nan = ", ".join(f"{m}: {sum(v.values())}" for m, v in r["nan"].items())
        lines.append(
            f"| {r['mode']} | {r['wall_seconds']} | {base / r['wall_seconds']:.2f} | {r['tokens_out']} | "
            f"{r['forward_passes']} | {r['decode_row_steps']} | {nan} |"
        )
    same_scores = "; ".join(f"{pair}: {value}" for pair, value in report["identical"].items())
    lines.append(f"\nScores identical ({same_scores}); {report['machine']}.")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = arguments(__doc__, samples=8, metrics=["faithfulness", "context_entity_recall"])
    parser.add_argument("--modes", nargs="+", choices=list(MODES), default=list(MODES))
    args = parser.parse_args(argv)
    data = dataset(args)
    judge = runtime_of(resolve(judge_arg(args), "judge", backend="torch", device=args.device))
    embedder = resolve(args.embedder, "embedder", device=args.device)
    run_mode("drafts", data[:1], args.metrics, judge, embedder)  # load and warm up, untimed

    runs = []
    for mode in args.modes:
        runs.append(run_mode(mode, data, args.metrics, judge, embedder))
        done = runs[-1]
        print(f"{mode}: {done['wall_seconds']} s, {done['tokens_out']} tokens out", flush=True)
    by = {r["mode"]: r for r in runs}
    report = {
        "benchmark": "torch_decode",
        "samples": len(data),
        "metrics": args.metrics,
        "judge": judge.model_id,
        "machine": machine(),
        "runs": runs,
        "identical": {
            pair: same(by[a], by[b])
            for pair, (a, b) in {
                "kv": ("concat_kv", "in_place_kv"),
                "drafts": ("loop_guard", "drafts"),
            }.items()
            if a in by and b in by
        },
    }
    write(args.out, "torch_decode", report, markdown)
    return 0


if __name__ == "__main__":
    sys.exit(main())
