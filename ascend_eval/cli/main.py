"""The `ascend-eval` command line."""

from __future__ import annotations

import argparse
import json
import logging
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from ascend_eval.cli import compare as compare_cli
from ascend_eval.cli import experiments as experiments_cli
from ascend_eval.cli import jobs as jobs_cli
from ascend_eval.cli import report as report_cli
from ascend_eval.cli import tracing as tracing_cli
from ascend_eval.cli.process import run_command
from ascend_eval.models.errors import AscendEvalError, ConfigError
from ascend_eval.serve import cli as serve_cli

if TYPE_CHECKING:
    from ascend_eval.models.base import Role
    from ascend_eval.models.spec import ModelSpec


def split_values(values: Sequence[str] | None) -> list[str] | None:
    """Accept `--metrics a b` and `--metrics a,b` alike.

    >>> split_values(["faithfulness,answer_similarity", "x"])
    ['faithfulness', 'answer_similarity', 'x']
    """
    if not values:
        return None
    return [v for value in values for v in value.split(",") if v]


def parse_column_map(pairs: Sequence[str] | None) -> dict[str, str] | None:
    """`--column-map OURS=THEIRS ...` as a dict.

    >>> parse_column_map(["user_input=query"])
    {'user_input': 'query'}
    """
    if not pairs:
        return None
    out = {}
    for pair in pairs:
        ours, sep, theirs = pair.partition("=")
        if not sep or not ours or not theirs:
            raise AscendEvalError(f"--column-map {pair!r}: write OURS=THEIRS, e.g. user_input=query.")
        out[ours] = theirs
    return out


def parse_engine_settings(flag: str, pairs: Sequence[str] | None) -> dict[str, object]:
    """`--{flag}-engine NAME=VALUE ...` as `ModelSpec` engine settings, numbers as numbers.

    >>> parse_engine_settings("judge", ["gpu_memory_utilization=0.5", "max_model_len=4096", "dtype=float16"])
    {'gpu_memory_utilization': 0.5, 'max_model_len': 4096, 'dtype': 'float16'}
    """
    from ascend_eval.models.spec import ENGINE_FIELDS

    out: dict[str, object] = {}
    for pair in pairs or ():
        name, sep, text = pair.partition("=")
        if not sep or name not in ENGINE_FIELDS or not text:
            raise ConfigError(
                f"--{flag}-engine {pair!r}: write NAME=VALUE with NAME one of {', '.join(ENGINE_FIELDS)}, "
                "e.g. gpu_memory_utilization=0.5."
            )
        value: object = text
        for kind in (int, float):
            try:
                value = kind(text)
                break
            except ValueError:
                continue
        out[name] = value
    return out


def _model(args: argparse.Namespace, flag: str, role: Role) -> ModelSpec | None:
    """The `ModelSpec` of `--{flag}` and its `--{flag}-model` / `--{flag}-backend` / `--{flag}-engine` /
    `--api-key-env`; None when the model is not named and has no engine settings (evaluate() takes the
    role's default, on `--{flag}-backend`)."""
    from ascend_eval.models.http import is_url
    from ascend_eval.models.spec import ModelSpec

    attr = flag.replace("-", "_")
    engine = parse_engine_settings(flag, getattr(args, f"{attr}_engine", None))
    model, served = getattr(args, attr), getattr(args, f"{attr}_model")
    if model is None and engine:
        model = "local:default"  # the role's shipped default, with these settings
    endpoint = model is not None and is_url(model)
    if served and not endpoint:
        raise ConfigError(
            f"--{flag}-model names the model a server serves, but --{flag} is "
            + (f"the local model {model!r}" if model else "not given (the local default)")
            + f". Pass --{flag} URL, or drop --{flag}-model."
        )
    if model is None:
        return None
    # --api-key-env is for every server named; a local model has no key to read.
    key = {"api_key_env": args.api_key_env} if endpoint else {}
    return ModelSpec(
        model=model,
        role=role,
        backend=getattr(args, f"{attr}_backend"),
        served_model_name=served,
        **key,
        **engine,  # type: ignore[arg-type]
    )


def _evaluate(args: argparse.Namespace) -> int:
    from ascend_eval.api import evaluate
    from ascend_eval.engine import Progress, RoundStats

    def show(stats: RoundStats) -> None:
        if not args.quiet:
            from tqdm.auto import tqdm

            tqdm.write(stats.line(), file=sys.stderr)  # printed above the progress bar, not through it

    # A terminal gets tqdm's bar; a log or pipe gets a progress line every --progress-every seconds.
    last = [0.0]

    def progress_line(snapshot: Progress) -> None:
        if args.quiet or sys.stderr.isatty():
            return
        final = snapshot.scores_done >= snapshot.scores_total
        if final or snapshot.elapsed - last[0] >= args.progress_every:
            last[0] = snapshot.elapsed
            print(f"progress: {snapshot.line()}", file=sys.stderr, flush=True)

    # Everything about the output folder that can be wrong is found before any model loads.
    from ascend_eval.results import check_output_dir

    out = check_output_dir(args.out, inputs=[args.data], what="--out")
    result = evaluate(
        args.data,
        split_values(args.metrics),
        judge=_model(args, "judge", "judge"),
        embedder=_model(args, "embedder", "embedder"),
        cross_encoder=_model(args, "cross-encoder", "reranker"),
        judge_backend=args.judge_backend,
        embedder_backend=args.embedder_backend,
        cross_encoder_backend=args.cross_encoder_backend,
        device=args.device,
        memory_budget=args.memory_budget,
        cache_dir=False if args.no_cache else args.cache_dir,
        language=args.language,
        ragas_compat=args.ragas_compat,
        judge_mode=args.judge_mode,
        column_map=parse_column_map(args.column_map),
        progress=not args.quiet,
        on_round=show,
        on_progress=progress_line,
        trace=tracing_cli.configure_tracing(args),
    )
    paths = result.save(out)
    print(result.table())
    print(
        f"\n{len(result.samples)} samples in {result.wall_seconds:.1f}s; per-sample results: "
        f"{paths['results']} and {paths['scores']}"
    )
    for metric in result.metrics:
        reasons = result.nan_reasons(metric)
        if reasons:
            print(
                f"{metric}: NaN for {sum(reasons.values())} sample(s): "
                + ", ".join(f"{r} x{n}" for r, n in reasons.most_common())
            )
    failures = result.failures(max_backend_errors=args.max_backend_errors)
    for failure in failures:
        print(f"error: {failure}", file=sys.stderr)
    return 3 if failures else 0


def _models(args: argparse.Namespace) -> int:
    from ascend_eval.models.device import resolve_device
    from ascend_eval.models.weights.paths import cache_root
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


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="ascend-eval", description=__doc__)
    parser.add_argument("-v", "--verbose", action="store_true", help="log engine and model details")
    sub = parser.add_subparsers(dest="command", required=True)

    ev = sub.add_parser("evaluate", help="score a RAG dataset")
    ev.add_argument(
        "data", help="a dataset file (JSON, JSONL, CSV, Parquet) or a built-in name (bilingual-example)"
    )
    ev.add_argument("--metrics", nargs="+", help="metric names or NeMo aliases (default: all available)")
    ev.add_argument("--judge", help="shipped judge name, local HF directory or .gguf file, or server URL")
    ev.add_argument("--judge-model", help="model name to send to a judge server (default: its first model)")
    ev.add_argument(
        "--embedder", help="shipped embedder name, sentence-transformers directory, or server URL"
    )
    ev.add_argument("--embedder-model", help="model name to send to an embedding server")
    ev.add_argument("--cross-encoder", help="CrossEncoder directory or /v1/ranking server URL")
    ev.add_argument("--cross-encoder-model", help="model name to send to a ranking server")
    for role in ("judge", "embedder", "cross-encoder"):
        ev.add_argument(
            f"--{role}-backend",
            default="auto",
            choices=["auto", "torch", "vllm"],
            help=f"runtime for a local {role}: torch (auto) or vllm (vLLM, vllm-ascend on NPUs)",
        )
    for role in ("judge", "embedder", "cross-encoder"):
        ev.add_argument(
            f"--{role}-engine",
            nargs="+",
            metavar="NAME=VALUE",
            help=f"engine settings of a local {role}, e.g. gpu_memory_utilization=0.5 "
            "kv_cache_memory_bytes=4294967296 dtype=float16 max_model_len=8192",
        )
    ev.add_argument("--api-key-env", help="environment variable holding the servers' API key")
    ev.add_argument("--device", help="auto, cpu, cuda[:N] or npu[:N]")
    ev.add_argument(
        "--memory-budget",
        type=float,
        metavar="FRACTION",
        help="share of each NPU's or GPU's memory the local models may take together (default 0.9), split "
        "between the vLLM engines after each torch model's reserve",
    )
    ev.add_argument("--language", default="auto", choices=["auto", "en", "zh"])
    ev.add_argument(
        "--ragas-compat", action="store_true", help="reproduce RAGAS's scores exactly, quirks included"
    )
    ev.add_argument(
        "--judge-mode",
        default="classify",
        choices=["classify", "generate"],
        help="verdicts from next-token probabilities (classify) or as JSON with reasons (generate)",
    )
    ev.add_argument("--column-map", nargs="+", metavar="OURS=THEIRS", help="e.g. user_input=query")
    ev.add_argument("--out", required=True, help="folder for results.json, scores.csv, summary.json")
    ev.add_argument(
        "--max-backend-errors",
        type=float,
        default=0.1,
        metavar="FRACTION",
        help="exit 3 when more than this share of scores failed in a backend (default 0.1); "
        "a metric with no score at all exits 3 too. Results are saved either way",
    )
    ev.add_argument(
        "--cache-dir", type=Path, help="request cache folder (default ~/.cache/ascend-eval/requests)"
    )
    ev.add_argument("--no-cache", action="store_true", help="neither read nor write the request cache")
    ev.add_argument("-q", "--quiet", action="store_true", help="no progress bar or round stats")
    ev.add_argument(
        "--progress-every",
        type=float,
        default=2.0,
        metavar="SECONDS",
        help="where stderr is not a terminal (a log, a pipe): print a progress line this often (default 2)",
    )
    tracing_cli.add_trace_arguments(ev)
    ev.set_defaults(func=_evaluate)

    models = sub.add_parser("models", help="list the shipped default models and the device found")
    models.add_argument("--device", help="check this device instead of auto-detection")
    models.add_argument("--json", action="store_true")
    models.set_defaults(func=_models)
    jobs_cli.add_parser(sub)
    experiments_cli.add_parser(sub)
    report_cli.add_parser(sub)
    compare_cli.add_parser(sub)
    serve_cli.add_parser(sub)
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
