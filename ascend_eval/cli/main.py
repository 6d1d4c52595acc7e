"""The `ascend-eval` command line."""

from __future__ import annotations

import argparse
import json
import logging
import os
import sys
from collections.abc import Sequence
from typing import Any

from ascend_eval.cli import compare as compare_cli
from ascend_eval.cli import experiments as experiments_cli
from ascend_eval.cli import jobs as jobs_cli
from ascend_eval.cli import report as report_cli
from ascend_eval.cli import testset as testset_cli
from ascend_eval.cli import tracing as tracing_cli
from ascend_eval.cli.about import EVALUATE_EPILOG, MAIN_EPILOG, METRIC_NAMES, HelpFormatter, VersionAction
from ascend_eval.cli.config import parse_column_map, parse_engine_settings, split_values
from ascend_eval.cli.flags import add_setting_flags, setting_groups
from ascend_eval.cli.process import run_command
from ascend_eval.errors import AscendEvalError
from ascend_eval.serve import cli as serve_cli

__all__ = ["build_parser", "main", "parse_column_map", "parse_engine_settings", "split_values"]


def _evaluate(args: argparse.Namespace) -> int:
    from ascend_eval.api import evaluate
    from ascend_eval.cli.config import check_run_folder, effective_config, evaluate_kwargs, write_config
    from ascend_eval.cli.progress import ProgressLines
    from ascend_eval.engine import Progress, RoundStats
    from ascend_eval.results import check_output_dir

    # Everything that can be wrong with the settings and the output folder is found before any model loads.
    args.trace = tracing_cli.configure_tracing(args)  # --trace [content] as evaluate()'s trace=
    config = effective_config(args)
    kwargs = evaluate_kwargs(config)
    dataset = config["dataset"]
    out = check_output_dir(
        config["out"], inputs=[dataset if isinstance(dataset, str) else None], what="--out"
    )
    check_run_folder(out)
    write_config(config, out)
    quiet, every = config["quiet"], config["progress_every"]

    def show(stats: RoundStats) -> None:
        if not quiet:
            from tqdm.auto import tqdm

            tqdm.write(stats.line(), file=sys.stderr)  # printed above the progress bar, not through it

    # A terminal gets tqdm's bar; a log or pipe gets a progress line every --progress-every seconds, and
    # while nothing moves one every STALLED_EVERY seconds at most.
    lines = ProgressLines(every)

    def progress_line(snapshot: Progress) -> None:
        if not quiet and not sys.stderr.isatty() and lines.due(snapshot):
            print(f"progress: {snapshot.line()}", file=sys.stderr, flush=True)

    result = evaluate(**kwargs, out=out, progress=not quiet, on_round=show, on_progress=progress_line)
    print(result.table())
    print(
        f"\n{len(result.samples)} samples in {result.wall_seconds:.1f}s; per-sample results: "
        f"{out / 'results.json'} and {out / 'scores.csv'}; to read them: {out / 'report.html'}"
    )
    for metric in result.metrics:
        reasons = result.nan_reasons(metric)
        if reasons:
            print(
                f"{metric}: NaN for {sum(reasons.values())} sample(s): "
                + ", ".join(f"{r} x{n}" for r, n in reasons.most_common())
            )
    failures = result.failures(max_backend_errors=config["max_backend_errors"])
    for failure in failures:
        print(f"error: {failure}", file=sys.stderr)
    return 3 if failures else 0


def _models(args: argparse.Namespace) -> int:
    from ascend_eval.base.paths import cache_root
    from ascend_eval.models.device import resolve_device
    from ascend_eval.models.weights.registry import DEFAULTS, SHIPPED

    rows = []
    for model in SHIPPED.values():
        default = " (default)" if DEFAULTS.get(model.role) == model.name else ""
        state = "installed" if model.installed else f"missing: {model.package}"
        rows.append(
            {
                "name": model.name,
                "role": model.role + default,
                "state": state,
                "description": model.description,
            }
        )
    try:
        device = resolve_device(args.device).describe()
    except AscendEvalError as e:
        device = f"unavailable: {e}"
    if args.json:
        print(json.dumps({"models": rows, "device": device, "cache": str(cache_root())}, indent=2))
        return 0
    for r in rows:
        print(f"{r['name']:<24} {r['role']:<20} {r['state']}\n{'':<24} {r['description']}")
    print(f"\ndevice: {device}\nmodel cache: {cache_root()}")
    return 0


def _add_evaluate(sub: Any) -> None:
    """`evaluate`'s flags: each setting's own flag made from `EvaluationConfig` (`ascend_eval.cli.flags`),
    in a group per setting group, and the command line's own flags beside them. Their defaults are None
    (or an `Unset`): a flag not given leaves the --config file's value, and the effective configuration
    fills in evaluate()'s defaults (`ascend_eval.cli.config`)."""
    ev = sub.add_parser(
        "evaluate",
        help="score a RAG dataset",
        description="Score a RAG dataset with the RAGAS metrics. Flags given override the --config file.",
        epilog=EVALUATE_EPILOG,
        formatter_class=HelpFormatter,
    )
    ev.add_argument(
        "--config",
        metavar="FILE",
        help="settings file (.yaml/.yml or .json) with evaluate()'s options as keys; flags given override it",
    )
    groups = setting_groups(ev)
    _add_evaluate_inputs(groups["data"])
    add_setting_flags(groups)
    _add_evaluate_models(groups["models"])
    groups["engine"].add_argument(
        "--no-cache", action="store_true", default=None, help="neither read nor write the request cache"
    )
    _add_evaluate_output(groups["output"])
    tracing_cli.add_trace_arguments(groups["output"])
    ev.set_defaults(func=_evaluate)


def _add_evaluate_inputs(data: Any) -> None:
    """`evaluate`'s dataset and metrics (evaluate()'s own arguments, no settings), in the `data` group."""
    data.add_argument(
        "data",
        nargs="?",
        help="a dataset file (JSON, JSONL, CSV, Parquet) or a built-in name (bilingual-example); "
        "may come from --config instead",
    )
    data.add_argument(
        "--metrics",
        nargs="+",
        help=f"metric names (or NeMo aliases), space- or comma-separated; default: all. {METRIC_NAMES}",
    )
    data.add_argument(
        "--metrics-file",
        metavar="FILE",
        help="a YAML or JSON file whose `metrics:` list holds built-in names and your own criteria and "
        "rubrics (`criterion: {name, definition, reads}`, `rubric: {name, levels, reads}`); added to "
        "--metrics",
    )


def _add_evaluate_models(models: Any) -> None:
    """The model flags that set fields of a model's `ModelSpec` rather than a setting: the served model's
    name, engine settings, any field, and the servers' key."""
    models.add_argument(
        "--judge-model", help="model name to send to a judge server (default: its first model)"
    )
    models.add_argument("--embedder-model", help="model name to send to an embedding server")
    models.add_argument("--cross-encoder-model", help="model name to send to a ranking server")
    for role in ("judge", "embedder", "cross-encoder"):
        models.add_argument(
            f"--{role}-engine",
            nargs="+",
            metavar="NAME=VALUE",
            help=f"engine settings of a local {role}, e.g. gpu_memory_utilization=0.5 "
            "kv_cache_memory_bytes=4294967296 dtype=float16 max_model_len=8192",
        )
    for role, example in (
        ("judge", "max_tokens=512 temperature=0 parallelism=64 request_timeout=120 max_retries=3"),
        ("embedder", "batch_size=64, or parallelism=8 send_input_type=true for a server"),
        ("cross-encoder", "batch_size=32"),
    ):
        models.add_argument(
            f"--{role}-set",
            nargs="+",
            metavar="NAME=VALUE",
            help=f"any ModelSpec field of the {role} (decoding, endpoint or engine setting; null unsets), "
            f"e.g. {example}",
        )
    models.add_argument("--api-key-env", help="environment variable holding the servers' API key")


def _add_evaluate_output(output: Any) -> None:
    """The command line's own keys (`CLI_DEFAULTS`): progress on the terminal or in a log, and the exit
    status's error tolerance."""
    output.add_argument(
        "-q", "--quiet", action=argparse.BooleanOptionalAction, help="no progress bar or round stats"
    )
    output.add_argument(
        "--progress-every",
        type=float,
        metavar="SECONDS",
        help="where stderr is not a terminal (a log, a pipe): print a progress line this often (default 2); "
        "while nothing moves, one every 10 s at most",
    )
    output.add_argument(
        "--max-backend-errors",
        type=float,
        metavar="FRACTION",
        help="exit 3 when more than this share of scores failed in a backend (default 0.1); "
        "a metric with no score at all exits 3 too. Results are saved either way",
    )


def build_parser() -> argparse.ArgumentParser:
    """The `ascend-eval` parser. Building it imports no model runtime (and not the metrics: their names
    are looked up when a help text is printed)."""
    parser = argparse.ArgumentParser(
        prog="ascend-eval", description=__doc__, epilog=MAIN_EPILOG, formatter_class=HelpFormatter
    )
    parser.add_argument(
        "--version", action=VersionAction, help="print the versions of ascend-eval, python and the runtimes"
    )
    parser.add_argument("-v", "--verbose", action="store_true", help="log engine and model details")
    sub = parser.add_subparsers(dest="command", required=True)
    _add_evaluate(sub)

    models = sub.add_parser("models", help="list the shipped default models and the device found")
    models.add_argument("--device", help="check this device instead of auto-detection")
    models.add_argument("--json", action="store_true")
    models.set_defaults(func=_models)
    jobs_cli.add_parser(sub)
    experiments_cli.add_parser(sub)
    report_cli.add_parser(sub)
    compare_cli.add_parser(sub)
    serve_cli.add_parser(sub)
    testset_cli.add_parser(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if not args.verbose:
        # The library leaves these to the user; the command line keeps its own output readable: our
        # progress bar and round stats, without the model libraries' loading bars and notices.
        os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
        os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
        os.environ.setdefault("VLLM_LOGGING_LEVEL", "WARNING")
    level = logging.INFO if args.verbose else logging.WARNING
    logging.basicConfig(level=level, format="%(levelname)s %(name)s: %(message)s")
    for handler in logging.getLogger().handlers:
        # The terminal shows `level` even when a job raises our loggers to INFO for its own log file.
        handler.setLevel(level)
    try:
        return run_command(args.func, args)
    except AscendEvalError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print(
            "interrupted; answered requests are cached, run the same command again to resume", file=sys.stderr
        )
        return 130


if __name__ == "__main__":
    sys.exit(main())
