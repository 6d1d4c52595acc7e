"""What the in-process benchmarks (`engine_batching`, `torch_decode`) share: their command line, the data
they read and how they write a report. Each compares modes on one loaded judge in one process."""

from __future__ import annotations

import argparse
import json
import os
import platform
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ascend_eval.data import load_dataset
from ascend_eval.examples import builtin_dataset


def arguments(doc: str | None, *, samples: int, metrics: list[str]) -> argparse.ArgumentParser:
    """The options every in-process benchmark takes; a caller may add its own."""
    parser = argparse.ArgumentParser(description=doc, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", default="bilingual-example", help="dataset file or built-in name")
    parser.add_argument("--samples", type=int, default=samples)
    parser.add_argument("--metrics", nargs="+", default=metrics)
    parser.add_argument("--judge", default=None, help="judge spec (default: the shipped default)")
    parser.add_argument("--embedder", default=None)
    parser.add_argument("--device", default=None)
    parser.add_argument(
        "--dtype",
        choices=["auto", "float32", "bfloat16", "float16"],
        default=None,
        help="local judge's dtype (default auto: bfloat16 on a CPU with AMX/AVX512-BF16, else float32)",
    )
    parser.add_argument("--out", type=Path, default=Path("benchmarks/results"))
    return parser


def dataset(args: argparse.Namespace) -> list[Any]:
    """The first `--samples` samples of `--data`."""
    source = builtin_dataset(args.data) or args.data
    return load_dataset(source)[: args.samples]


def machine() -> str:
    return f"{platform.machine()}, {platform.processor() or 'cpu'}, {os.cpu_count()} cores"


def write(out: Path, name: str, report: dict[str, Any], markdown: Callable[[dict[str, Any]], str]) -> None:
    """`name.json` and `name.md` (the table) under `out`; the table is printed too."""
    out.mkdir(parents=True, exist_ok=True)
    (out / f"{name}.json").write_text(json.dumps(report, indent=2, ensure_ascii=False))
    table = markdown(report)
    (out / f"{name}.md").write_text(table + "\n")
    print(table)


def judge_arg(args: argparse.Namespace) -> Any:
    """`--judge`, with `--dtype` when given (a local judge's spec)."""
    if args.dtype is None:
        return args.judge
    from ascend_eval.models.spec import ModelSpec

    if args.judge is None:
        from ascend_eval.models.weights.registry import DEFAULTS

        return ModelSpec(model=DEFAULTS["judge"], role="judge", dtype=args.dtype)
    return ModelSpec(model=args.judge, role="judge", dtype=args.dtype)
