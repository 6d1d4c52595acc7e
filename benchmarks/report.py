"""The harness's report: derived figures per run (per-sample rates, ratio against RAGAS, NaN disagreements)
and the markdown tables. Pure functions of the runs' JSON, so a saved report can be re-rendered.

    python -m benchmarks report benchmarks/results/bench.json     # print the tables again
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path
from typing import Any


def peer_of(row: dict[str, Any]) -> str:
    """The RAGAS run an ascend-eval run is compared with: the same server, or RAGAS in-process."""
    return "ragas:server" if row["backend"] == "server" else "ragas:torch"


def derive(runs: list[dict[str, Any]], samples: int) -> None:
    """Add per-sample figures, the ratio against RAGAS and NaN disagreements to each finished run."""
    by_name = {r["name"]: r for r in runs}
    for r in runs:
        if r["status"] != "ok":
            continue
        r["samples_per_second"] = samples / r["wall_seconds"]
        for key in ("judge_requests", "prompt_tokens", "completion_tokens"):
            r[f"{key}_per_sample"] = r[key] / samples
        if r.get("prompt_tokens_cached") is not None:  # the server's prefix cache: not computed again
            computed = r["prompt_tokens"] - r["prompt_tokens_cached"]
            r["prompt_tokens_computed_per_sample"] = computed / samples
        if r.get("replay_seconds"):
            r["end_to_end_over_backend"] = r["wall_seconds"] / r["replay_seconds"]
    for r in runs:
        peer = by_name.get(peer_of(r))
        if r["side"] != "ours" or r["status"] != "ok" or peer is None or peer["status"] != "ok":
            continue
        r["vs_ragas"] = r["samples_per_second"] / peer["samples_per_second"]
        r["vs_ragas_run"] = peer["name"]
        r["per_sample_vs_ragas"] = {
            key: r[key] / peer[key] if r.get(key) is not None and peer.get(key) else None
            for key in RATIO_KEYS
        }
        ragas_only, ours_only = 0, 0
        for metric, mask in r["nan_mask"].items():
            theirs = peer["nan_mask"].get(metric)
            if theirs is None:
                continue
            ragas_only += sum(t and not o for o, t in zip(mask, theirs, strict=True))
            ours_only += sum(o and not t for o, t in zip(mask, theirs, strict=True))
        r["nan_ragas_only"], r["nan_ours_only"] = ragas_only, ours_only


# Per-sample figures compared as ours / RAGAS (below 1: ours needs less).
RATIO_KEYS = (
    "judge_requests_per_sample",
    "prompt_tokens_per_sample",
    "prompt_tokens_computed_per_sample",
    "completion_tokens_per_sample",
)


TIME_NOTE = (
    "Where the server's time went (its /metrics every 2 s during the timed run, `timeline-<row>.jsonl`): "
    "prefill, intervals that computed prompt tokens or ran a step longer than 2 s; decode, intervals that "
    "only generated; idle, the server did nothing (the client's own time)."
)
TIME_HEAD = [
    (
        "| run | wall s | prefill s | decode s | idle s | computed tok/s in prefill | gen tok/s in decode "
        "| running while decoding |"
    ),
    "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
]


def _num(value: Any, digits: int = 2) -> str:
    if value is None:
        return "–"
    if isinstance(value, float):
        return f"{value:.{digits}f}"
    return str(value)


def _grouped(reasons: dict[str, int]) -> dict[str, int]:
    """NaN reasons that differ only in a quoted list (e.g. the tokens a judge put first) counted as one."""
    grouped: dict[str, int] = {}
    for reason, count in reasons.items():
        key = re.sub(r"\s*\[.*$", " [...]", reason)
        grouped[key] = grouped.get(key, 0) + count
    return grouped


def _nan_total(r: dict[str, Any]) -> int:
    return sum(sum(reasons.values()) for reasons in r.get("nan", {}).values())


def markdown(report: dict[str, Any]) -> str:
    """The main table, the NaN table per metric, skipped runs, and how each side was set up."""
    runs = report["runs"]
    lines = [
        (
            f"{report['samples']} samples ({report['data']}), {len(report['metrics'])} metrics, judge "
            f"`{report['judge']}`, embedder `{report['embedder']}`, max_tokens {report['max_tokens']}, "
            "each tool's own decoding (greedy or near-greedy; 0.3 for answer_relevancy's questions). "
            f"Machine: {report['machine']}."
        ),
        "",
        (
            "| run | what | samples/s | wall s | x RAGAS | judge req/sample | prompt tok/sample "
            "| gen tok/sample | NaN (RAGAS-only / ours-only) | peak RSS MiB | end-to-end / backend-only |"
        ),
        "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for r in runs:
        if r["status"] != "ok":
            continue
        disagree = f" ({r['nan_ragas_only']} / {r['nan_ours_only']})" if "nan_ragas_only" in r else ""
        lines.append(
            f"| {r['name']} | {r['what']} | {_num(r['samples_per_second'], 3)} "
            f"| {_num(r['wall_seconds'], 1)} "
            f"| {_num(r.get('vs_ragas'))} | {_num(r['judge_requests_per_sample'], 1)} "
            f"| {_num(r['prompt_tokens_per_sample'], 0)} | {_num(r['completion_tokens_per_sample'], 0)} "
            f"| {_nan_total(r)}{disagree} | {_num(r.get('peak_rss_mib'), 0)} "
            f"| {_num(r.get('end_to_end_over_backend'))} |"
        )
    compared = [r for r in runs if r.get("per_sample_vs_ragas")]
    if compared:
        lines += [
            "",
            (
                "Ours / RAGAS on the same backend (throughput: above 1 is faster; per sample: below 1 is "
                "less work). Prompt tokens computed: those the server did not take from its prefix cache."
            ),
            "",
            (
                "| run | against | throughput | judge req/sample | prompt tok/sample "
                "| prompt tok computed/sample | gen tok/sample |"
            ),
            "| --- | --- | ---: | ---: | ---: | ---: | ---: |",
        ]
        for r in compared:
            ratios = r["per_sample_vs_ragas"]
            lines.append(
                f"| {r['name']} | {r['vs_ragas_run']} | {_num(r['vs_ragas'])} | "
                + " | ".join(_num(ratios.get(key)) for key in RATIO_KEYS)
                + " |"
            )
    timed = [r for r in runs if r["status"] == "ok" and r.get("server_time")]
    if timed:
        lines += ["", TIME_NOTE, "", *TIME_HEAD]
        for r in timed:
            t = r["server_time"]
            seconds = [t[f"{k}_seconds"] for k in ("wall", "prefill", "decode", "idle")]
            rates = [t[k] for k in ("computed_per_prefill_second", "generated_per_decode_second",
                                    "running_while_decoding")]  # fmt: skip
            cells = [_num(v, 0) for v in seconds] + [_num(v, 1) for v in rates]
            lines.append(f"| {r['name']} | " + " | ".join(cells) + " |")
    ok = [r for r in runs if r["status"] == "ok"]
    if ok:
        lines += [
            "",
            "NaN per metric (count: reasons)",
            "",
            "| metric | " + " | ".join(r["name"] for r in ok) + " |",
            "| --- |" + " --- |" * len(ok),
        ]
        for metric in report["metrics"]:
            cells = []
            for r in ok:
                reasons = _grouped(r["nan"].get(metric, {}))
                total = sum(reasons.values())
                text = "; ".join(f"{k} x{v}" for k, v in sorted(reasons.items(), key=lambda kv: -kv[1]))
                cells.append(f"{total}: {text}" if total else "0")
            lines.append(f"| {metric} | " + " | ".join(c.replace("|", "/") for c in cells) + " |")
    skipped = [r for r in runs if r["status"] != "ok"]
    if skipped:
        unfinished = not report.get("complete", True)
        lines += ["", "Not run (yet: this run is not finished):" if unfinished else "Not run:", ""]
        lines += [f"* {r['name']} ({r['status']}): {r['reason']}" for r in skipped]
    lines += ["", "Counts: " + report["counts_note"], "", "RAGAS setup: " + report["ragas_setup"]]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("bench_json", type=Path, help="a harness run's bench.json")
    path = parser.parse_args(argv).bench_json
    print(markdown(json.loads(path.read_text())))
    return 0


if __name__ == "__main__":
    sys.exit(main())
