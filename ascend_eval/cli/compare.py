"""`ascend-eval compare OUT_A OUT_B`: two saved runs compared metric by metric, with paired bootstrap
intervals for each change (`ascend_eval.report.compare`)."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from ascend_eval.errors import ConfigError


def _write(path: Path, text: str, flag: str) -> None:
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    except OSError as e:
        raise ConfigError(
            f"{flag} {str(path)!r} cannot be written ({e.strerror or e}). Name a file in a folder you can "
            "write to."
        ) from None


def _run(args: argparse.Namespace) -> int:
    from ascend_eval.report.compare import compare_runs

    if args.top < 0:
        raise ConfigError(f"--top {args.top}: give 0 or more samples per metric, e.g. --top 5.")
    for flag, path in (("--markdown", args.markdown), ("--html", args.html)):
        if path is not None and path.is_dir():
            raise ConfigError(f"{flag} {str(path)!r} is a folder. Name a file, e.g. {flag} compare.out.")
    comparison = compare_runs(args.run_a, args.run_b, seed=args.seed, top=args.top)
    markdown = comparison.to_markdown()
    if args.markdown is not None:
        _write(args.markdown, markdown, "--markdown")
    if args.html is not None:
        _write(args.html, comparison.to_html(), "--html")
    if args.json:
        print(json.dumps(comparison.to_dict(), ensure_ascii=False, indent=2))
    else:
        print(markdown, end="")
    return 0


def add_parser(sub: Any) -> None:
    """Register `compare` on the top-level subcommands."""
    compare = sub.add_parser(
        "compare",
        help="compare two saved runs per metric, with paired bootstrap intervals",
        description="Compare run B with run A on the samples they share (matched by id): each metric's "
        "mean change B - A with a 95% paired bootstrap interval, how many samples moved up or down, and "
        "the samples that moved most. Prints Markdown unless --json.",
    )
    compare.add_argument("run_a", metavar="OUT_A", help="run A's folder (what `evaluate --out` wrote)")
    compare.add_argument("run_b", metavar="OUT_B", help="run B's folder")
    compare.add_argument("--markdown", type=Path, metavar="FILE", help="also write the Markdown here")
    compare.add_argument("--html", type=Path, metavar="FILE", help="write a self-contained HTML page here")
    compare.add_argument("--json", action="store_true", help="print the comparison as JSON instead")
    compare.add_argument("--seed", type=int, default=0, help="bootstrap seed (default 0)")
    compare.add_argument(
        "--top", type=int, default=5, metavar="K", help="largest changes listed per metric (default 5)"
    )
    compare.set_defaults(func=_run)
