"""`ascend-eval experiment run SWEEP_FILE --out DIR`: one job per point of a parameter grid, compared in
report.html (plots embedded) and summary.md."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any


def _run(args: argparse.Namespace) -> int:
    from ascend_eval.experiments import run_experiment

    def say(line: str) -> None:
        if not args.quiet:
            print(line, file=sys.stderr, flush=True)

    result = run_experiment(args.sweep_file, args.out, limit=args.limit, progress=say)
    print(result.table())
    failed = [p for p in result.points if p.status != "completed"]
    print(
        f"\n{len(result.points)} points in {result.wall_seconds:.1f}s ({len(failed)} failed); "
        f"report: {result.paths['report']}, summary: {result.paths['summary']}"
    )
    return 1 if failed else 0


def add_parser(sub: Any) -> None:
    """Register `experiment run` on the top-level subcommands."""
    experiment = sub.add_parser("experiment", help="sweep pipeline parameters and compare the runs")
    actions = experiment.add_subparsers(dest="experiment_command", required=True)
    run = actions.add_parser("run", help="run one job per sweep point and write the comparison report")
    run.add_argument("sweep_file", type=Path, help="YAML/JSON: a job spec plus `sweep` (and `name`, `limit`)")
    run.add_argument(
        "--out", type=Path, required=True, help="folder for report.html, summary.md, points.json"
    )
    run.add_argument("--limit", type=int, help="only the first N samples of the dataset (overrides the file)")
    run.add_argument("-q", "--quiet", action="store_true", help="no per-point progress lines")
    run.set_defaults(func=_run)
