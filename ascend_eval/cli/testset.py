"""`ascend-eval testset CORPUS --size N --out FILE`: a test set from your documents (docs/testset.md)."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from ascend_eval.choices import BACKENDS, LANGUAGE_SETTINGS
from ascend_eval.cli.about import HelpFormatter
from ascend_eval.errors import ConfigError, DataError
from ascend_eval.writing import replaced

EPILOG = """\
examples:
  # 50 rows from a folder of .txt / .md / .jsonl / .pdf files, judged by a local checkpoint
  ascend-eval testset docs/ --size 50 --judge /models/Qwen2.5-7B-Instruct --out testset.jsonl

  # only single- and multi-hop questions, asked by personas, in Chinese whatever the documents' language
  ascend-eval testset docs/ --size 20 --kinds single_hop=0.7,multi_hop=0.3 --personas personas.txt \\
      --language zh --judge http://127.0.0.1:8000/v1 --out testset-zh.jsonl

  # the built-in corpus, and the documents written out for a job spec's dataset.corpus
  ascend-eval testset ascend-eval/rag-mini-en --size 10 --out mini.jsonl --corpus-out mini.corpus.jsonl

The same seed, corpus and models give the same rows; a run stopped part way resumes from the request cache.
Exit status: 0 when --size rows passed, 3 when the corpus's candidates ran out first (the rows that passed
are written), 2 on bad input.
"""


def read_personas(path: Path) -> list[str]:
    """Personas from a file: a JSON list of strings (.json), else one persona per line (blank lines and
    lines starting with # skipped).

    Raises:
        DataError: the file cannot be read, is not UTF-8, or holds no persona.
    """
    try:
        text = path.read_text(encoding="utf-8-sig")
    except (OSError, UnicodeDecodeError) as e:
        why = e.strerror if isinstance(e, OSError) else "not UTF-8 text"
        raise DataError(f"Cannot read the personas file '{path}': {why}. Check --personas.") from None
    if path.suffix.lower() == ".json":
        try:
            personas: Any = json.loads(text)
        except json.JSONDecodeError as e:
            raise DataError(
                f"The personas file '{path}' is not valid JSON: {e.msg} at line {e.lineno}."
            ) from None
        if not isinstance(personas, list) or not all(isinstance(p, str) for p in personas):
            raise DataError(f"The personas file '{path}' must hold a JSON list of strings.")
    else:
        personas = [line.strip() for line in text.splitlines() if line.strip() and not line.startswith("#")]
    if not personas:
        raise DataError(
            f"The personas file '{path}' holds no persona. Write one short description per line, e.g. "
            "'a new employee reading the handbook'."
        )
    return personas


def check_out(path: Path, flag: str) -> Path:
    """`path` as an output file: a .jsonl name, not a folder; its folder is made.

    Raises:
        ConfigError: another suffix, or a folder at that path.
    """
    if path.suffix.lower() != ".jsonl":
        raise ConfigError(
            f"{flag} {path} must name a .jsonl file (one row per line), e.g. {flag} testset.jsonl."
        )
    if path.is_dir():
        raise ConfigError(
            f"{flag} {path} is a folder; name a .jsonl file inside it, e.g. {path / 'testset.jsonl'}."
        )
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise ConfigError(f"Cannot create the folder of {flag} {path}: {e.strerror or e}.") from None
    return path


def model_arg(args: argparse.Namespace, role: str) -> Any:
    """The judge or embedder as given (a name, path or URL), or a `ModelSpec` when `--{role}-model` or
    `--{role}-set` change its fields (`ascend_eval.models.factory.model_spec`, with `--{role}-backend`
    merged in, checked now, before any model loads)."""
    from ascend_eval.cli.config import parse_settings
    from ascend_eval.models.factory import model_spec

    fields = parse_settings(role, getattr(args, f"{role}_set", None))
    served = getattr(args, f"{role}_model", None)
    if served:
        fields["served_model_name"] = served
    given = getattr(args, role, None)
    if not fields:
        return given
    backend = getattr(args, f"{role}_backend", None) or "auto"
    return model_spec(given or "local:default", role, backend=backend, **fields)


def _run(args: argparse.Namespace) -> int:
    from ascend_eval.cli.progress import ProgressLines
    from ascend_eval.engine import Progress
    from ascend_eval.testset import DEFAULT_KINDS, generate, load_corpus, parse_kinds

    # Everything the command can check is checked before any model loads (generate checks the rest).
    out = check_out(args.out, "--out")
    corpus_out = check_out(args.corpus_out, "--corpus-out") if args.corpus_out else None
    kinds = parse_kinds(args.kinds) if args.kinds else dict(DEFAULT_KINDS)
    personas = read_personas(args.personas) if args.personas else None
    lines = ProgressLines(2.0)

    def say(line: str) -> None:
        if not args.quiet:
            print(line, file=sys.stderr, flush=True)

    def progress(snapshot: Progress) -> None:
        if not args.quiet and lines.due(snapshot):
            print(
                f"  {snapshot.scores_done}/{snapshot.scores_total} candidates, {snapshot.requests_answered} "
                f"requests answered ({snapshot.requests_sent} by a model)",
                file=sys.stderr,
                flush=True,
            )

    result = generate(
        args.corpus,
        args.size,
        kinds=kinds,
        personas=personas,
        language=args.language,
        seed=args.seed,
        chunk_size=args.chunk_size,
        chunk_overlap=args.chunk_overlap,
        duplicate_threshold=args.duplicate_threshold,
        max_tokens=args.max_tokens,
        judge=model_arg(args, "judge"),
        embedder=model_arg(args, "embedder"),
        judge_backend=args.judge_backend,
        embedder_backend=args.embedder_backend,
        device=args.device,
        cache_dir=False if args.no_cache else args.cache_dir,
        progress=say,
        on_progress=progress,
    )
    result.to_jsonl(out)
    if corpus_out is not None:
        with replaced(corpus_out) as f:
            f.writelines(json.dumps(doc, ensure_ascii=False) + "\n" for doc in load_corpus(args.corpus))
    print(result.summary())
    print(f"wrote {len(result)} rows to {out}" + (f" and the corpus to {corpus_out}" if corpus_out else ""))
    return 0 if result.complete else 3


def add_parser(sub: Any) -> None:
    """Register `testset` on the top-level subcommands."""
    p = sub.add_parser(
        "testset",
        help="write a test set (question, reference answer, contexts) from your documents",
        description="Write a test set from your documents with the judge: questions of three kinds, their "
        "reference answers and contexts, filtered, batched and cached like an evaluation.",
        epilog=EPILOG,
        formatter_class=HelpFormatter,
    )
    p.add_argument(
        "corpus",
        help="a folder of .txt/.md/.jsonl/.pdf files (PDF needs pip install pypdf), one such file, or a "
        "built-in corpus (ascend-eval/rag-mini-en, ascend-eval/rag-mini-zh)",
    )
    p.add_argument("--size", type=int, required=True, metavar="N", help="rows wanted")
    p.add_argument("--out", type=Path, required=True, metavar="FILE", help="the rows, as a .jsonl file")
    p.add_argument("--judge", help="shipped judge name, local HF directory or .gguf file, or server URL")
    p.add_argument("--embedder", help="shipped embedder name, sentence-transformers directory, or server URL")
    for role in ("judge", "embedder"):
        p.add_argument(
            f"--{role}-backend",
            default="auto",
            choices=BACKENDS,
            help=f"runtime for a local {role} (default auto: torch)",
        )
        p.add_argument(f"--{role}-model", help=f"model name to send to a {role} server (default: its first)")
        p.add_argument(
            f"--{role}-set",
            nargs="+",
            metavar="NAME=VALUE",
            help=f"any ModelSpec field of the {role}, as for evaluate, e.g. request_timeout=600",
        )
    p.add_argument("--device", help="auto, cpu, cuda[:N] or npu[:N]")
    p.add_argument(
        "--kinds",
        metavar="KIND=WEIGHT,...",
        help="share of each query kind (default single_hop=0.5,multi_hop=0.25,abstract=0.25); a kind left "
        "out gets none",
    )
    p.add_argument("--personas", type=Path, metavar="FILE", help="one persona per line (or a .json list)")
    p.add_argument(
        "--language", choices=LANGUAGE_SETTINGS, default="auto", help="default auto: each document's own"
    )
    p.add_argument("--seed", type=int, default=0, help="chooses and orders the candidates (default 0)")
    p.add_argument("--chunk-size", type=int, default=512, metavar="CHARS", help="longest chunk (default 512)")
    p.add_argument(
        "--chunk-overlap",
        type=int,
        default=0,
        metavar="CHARS",
        help="characters repeated from one chunk at the start of the next (default 0)",
    )
    p.add_argument(
        "--duplicate-threshold",
        type=float,
        default=0.95,
        metavar="COSINE",
        help="a question this close to an accepted one is dropped (default 0.95)",
    )
    p.add_argument(
        "--max-tokens",
        type=int,
        default=512,
        metavar="N",
        help="tokens per written question and answer (default 512)",
    )
    p.add_argument(
        "--cache-dir", type=Path, help="request cache folder (default ~/.cache/ascend-eval/requests)"
    )
    p.add_argument("--no-cache", action="store_true", help="neither read nor write the request cache")
    p.add_argument(
        "--corpus-out",
        type=Path,
        metavar="FILE",
        help="also write the documents read as .jsonl, for a job spec's dataset.corpus",
    )
    p.add_argument("-q", "--quiet", action="store_true", help="no progress lines")
    p.set_defaults(func=_run)
