"""`ascend-eval report OUT`: (re)draw a run's report.html from the results.json that `evaluate --out OUT`
saved, e.g. for runs saved before the report existed or after the report changed."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from ascend_eval.errors import ConfigError


def _report(args: argparse.Namespace) -> int:
    from ascend_eval.results import EvaluationResult
    from ascend_eval.results.page import REPORT_FILE, render_run_report

    result = EvaluationResult.load(args.run)
    given = Path(args.run).expanduser()
    folder = given if given.is_dir() else given.parent
    target = Path(args.output).expanduser() if args.output else folder / REPORT_FILE
    if target.is_dir():
        target = target / REPORT_FILE
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(render_run_report(result), encoding="utf-8")
    except OSError as e:
        raise ConfigError(
            f"Cannot write the report to {str(target)!r} ({e.strerror or e}). "
            "Pass --output with a file or folder you can write to."
        ) from None
    print(target)
    return 0


def add_parser(sub: Any) -> None:
    """Register `report` on the top-level subcommands."""
    report = sub.add_parser("report", help="draw a saved run's report.html from its results.json")
    report.add_argument("run", help="a run folder (what `evaluate --out` wrote) or its results.json")
    report.add_argument(
        "--output", help="where to write the page: a file, or a folder for report.html (default: the run's)"
    )
    report.set_defaults(func=_report)
