#!/usr/bin/env python3
"""Judge agreement on labelled pairs: does a metric score the better member of each pair strictly higher?

Pairs come from WikiEval (the RAGAS paper's set; read from the path given, never copied here), from our
first Chinese pairs (`benchmarks/data/fidelity_zh.jsonl`), from the pairs written for the project in
English and Chinese (`benchmarks/data/fidelity_pairs_{en,zh}.jsonl`, ten per property and language) and from
its long pairs (`benchmarks/data/fidelity_long_{en,zh}.jsonl`: answers of 170+ words or 330+ Chinese
characters, five to eight contexts of 1,500+ tokens; six per property and language, no context_relevance
pairs: WikiEval's hold that property). Each
pair is two samples that differ in one property; the metrics that probe it run in classify mode on both
members, and a pair counts as right only when the better member scores strictly better (higher, or lower
for noise_sensitivity): a tie, or a NaN on either side, counts as wrong.

* faithfulness: the answer vs an ungrounded answer, same contexts (faithfulness, nv_response_groundedness);
* answer_relevance: the answer vs a poor (incomplete, off-question) answer (answer_relevancy);
* context_relevance: focused contexts vs the same padded or off-topic (context_precision,
  context_utilization, nv_context_relevance);
* answer_correctness: an answer that agrees with the reference vs one that contradicts it on a key fact
  (answer_correctness, nv_accuracy, answer_similarity);
* context_recall: contexts holding every fact of the reference vs contexts missing one or two
  (context_recall, context_entity_recall);
* noise_sensitivity: the same contexts with one noisy passage, an answer that ignores the noise vs one
  that repeats it (noise_sensitivity, where lower is better).

The answer doubles as the reference where a metric needs one. WikiEval rows are taken shortest first
(by the longest text of the row) so that a run fits a CPU; `--rows` sets how many per property.

    python -m benchmarks fidelity --wikieval ../shared/fidelity/WikiEval.csv --rows 10 \\
        --judge ~/models/qwen2.5-coder-1.5b-instruct-q4_k_m.gguf --out fidelity.json
"""

from __future__ import annotations

import argparse
import ast
import contextlib
import csv
import json
import math
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import ascend_eval
from ascend_eval.prompts.layout import CONTEXTS_ONLY

ZH_PAIRS = Path(__file__).parent / "data" / "fidelity_zh.jsonl"
DATA = Path(__file__).parent / "data"
PROJECT_PAIRS = tuple(DATA / f"fidelity_pairs_{lang}.jsonl" for lang in ("en", "zh"))
"""The short pairs written for the project (source "project-LANG")."""
LONG_PAIRS = tuple(DATA / f"fidelity_long_{lang}.jsonl" for lang in ("en", "zh"))
"""The long pairs written for the project (source "long-LANG")."""
METRICS = {
    "faithfulness": ("faithfulness", "nv_response_groundedness"),
    "answer_relevance": ("answer_relevancy",),
    "context_relevance": ("context_precision", "context_utilization", "nv_context_relevance"),
    "answer_correctness": ("answer_correctness", "nv_accuracy", "answer_similarity"),
    "context_recall": ("context_recall", "context_entity_recall"),
    "noise_sensitivity": ("noise_sensitivity",),
}
LOWER_IS_BETTER = frozenset({"noise_sensitivity"})
SOURCES = ("wikieval", "zh", "project-en", "project-zh", "long-en", "long-zh")
WRITTEN = ("statements", "response_statements", "reference_statements", "reference_entities",
           "context_entities", "questions")  # fmt: skip
"""The details under which a metric keeps what the judge wrote (its statements, entities, questions): what
the fidelity gate reads for echoes of the prompt's wording (`benchmarks/fidelity_gate.py`)."""


def _strip(text: str, prefix: str) -> str:
    text = text.strip()
    return text[len(prefix) :].strip() if text.startswith(prefix) else text


def _sample(question: str, contexts: Sequence[str], response: str, reference: str) -> dict[str, Any]:
    return {"user_input": question, "retrieved_contexts": list(contexts), "response": response,
            "reference": reference}  # fmt: skip


def wikieval_pairs(path: Path, rows: int) -> list[dict[str, Any]]:
    """`rows` pairs per property from WikiEval.csv, the rows with the shortest texts first."""
    with path.open(encoding="utf-8", newline="") as f:
        table = list(csv.DictReader(f))
    table.sort(key=lambda r: max(len(r["context_v2"]), len(r["context_v1"]), len(r["answer"])))
    pairs = []
    for i, r in enumerate(table[:rows]):
        q, a = _strip(r["question"], "Question:"), _strip(r["answer"], "Answer:")
        v1 = [str(c) for c in ast.literal_eval(r["context_v1"])]
        v2 = [str(c) for c in ast.literal_eval(r["context_v2"])]
        ungrounded, poor = _strip(r["ungrounded_answer"], "Answer:"), _strip(r["poor_answer"], "Answer:")
        base = {"source": "wikieval", "language": "en", "id": f"wikieval-{i}"}
        pairs += [
            {**base, "property": "faithfulness",
             "better": _sample(q, v1, a, a), "worse": _sample(q, v1, ungrounded, a)},
            {**base, "property": "answer_relevance",
             "better": _sample(q, v1, a, a), "worse": _sample(q, v1, poor, a)},
            {**base, "property": "context_relevance",
             "better": _sample(q, v1, a, a), "worse": _sample(q, v2, a, a)},
        ]  # fmt: skip
    return pairs


def zh_pairs(path: Path) -> list[dict[str, Any]]:
    """Our Chinese pairs: faithfulness and answer_relevance rows hold two responses, context_relevance
    rows two context lists and the answer."""
    pairs = []
    for line in path.read_text(encoding="utf-8").splitlines():
        if not line.strip():
            continue
        r = json.loads(line)
        base = {"source": "zh", "language": "zh", "id": r["id"], "property": r["property"]}
        if r["property"] == "context_relevance":
            better = _sample(r["question"], r["better"], r["answer"], r["answer"])
            worse = _sample(r["question"], r["worse"], r["answer"], r["answer"])
        else:
            contexts = r.get("contexts") or [r["better"]]
            better = _sample(r["question"], contexts, r["better"], r["better"])
            worse = _sample(r["question"], contexts, r["worse"], r["better"])
        pairs.append({**base, "better": better, "worse": worse})
    return pairs


def project_pairs(path: Path) -> list[dict[str, Any]]:
    """The pairs written for the project: each line holds the question, the reference and two members
    (response and retrieved_contexts) that differ in the line's property."""
    pairs = []
    for line in path.read_text(encoding="utf-8").splitlines():
        if not line.strip():
            continue
        r = json.loads(line)
        if r["property"] not in METRICS:
            raise ValueError(f"{path.name}: {r['id']}: unknown property {r['property']!r}")
        members = {
            side: _sample(r["question"], r[side]["retrieved_contexts"], r[side]["response"], r["reference"])
            for side in ("better", "worse")
        }
        source = f"{'long' if path.stem.startswith('fidelity_long') else 'project'}-{r['language']}"
        pairs.append({"source": source, "language": r["language"], "id": r["id"], "property": r["property"],
                      **members})  # fmt: skip
    return pairs


def _columns(samples: Sequence[dict[str, Any]]) -> dict[str, list[Any]]:
    return {key: [s[key] for s in samples] for key in samples[0]}


def _score_groups(
    pairs: list[dict[str, Any]], score: Any, tool: str, only: Sequence[str] = ()
) -> list[dict[str, Any]]:
    """Score the pairs one (property, language) group at a time: `score(metrics, language, samples)`
    returns each metric's scores over the better members, then the worse ones; each pair gets
    "scores": metric -> [better, worse]. `only` names the metrics to score (default: all)."""
    for prop, metrics in METRICS.items():
        metrics = tuple(m for m in metrics if not only or m in only)
        if not metrics:
            continue
        group = [p for p in pairs if p["property"] == prop]
        for language in ("en", "zh"):
            subset = [p for p in group if p["language"] == language]
            if not subset:
                continue
            started = time.perf_counter()
            scored = score(metrics, language, [p["better"] for p in subset] + [p["worse"] for p in subset])
            n = len(subset)
            outputs = scored.pop(OUTPUTS, {})
            for metric in metrics:
                for i, pair in enumerate(subset):
                    pair.setdefault("scores", {})[metric] = [scored[metric][i], scored[metric][n + i]]
                    if metric in outputs:
                        pair.setdefault("outputs", {})[metric] = [outputs[metric][i], outputs[metric][n + i]]
            took = time.perf_counter() - started
            print(f"{tool}{prop} / {language}: {n} pairs, {', '.join(metrics)} in {took:.0f} s", flush=True)
            # each group's scores in the log as they come, so a run stopped hours in keeps what it scored
            done = {p["id"]: p["scores"] for p in subset}
            print("scores " + json.dumps({"tool": tool.strip() or "ours", "scores": done}), flush=True)
    return pairs


def score_pairs(
    pairs: list[dict[str, Any]],
    judge: Any,
    embedder: Any,
    cache_dir: Any,
    *,
    calibration: str = "auto",
    scoring: str = "auto",
    prompt_layout: str = "auto",
    only: Sequence[str] = (),
) -> list[dict[str, Any]]:
    """Each pair with its metrics' scores on both members ("scores": metric -> [better, worse]), under
    `evaluate`'s `calibration`, `scoring` and `prompt_layout`; `only` names the metrics (default: all).
    `prompt_layout` may also be an experiment's (`experiment_switches`): "sample_first_all" and its options,
    to measure what the prompt families that opt out of sample first would lose or gain in it."""
    switches = experiment_switches(prompt_layout)
    prompt_layout = "sample_first" if switches else prompt_layout

    def score(metrics: Sequence[str], language: str, samples: list[dict[str, Any]]) -> dict[str, list[float]]:
        result = ascend_eval.evaluate(
            _columns(samples), list(metrics), judge=judge, embedder=embedder, cache_dir=cache_dir,
            language=language, judge_mode="classify", progress=False, calibration=calibration,
            scoring=scoring, prompt_layout=prompt_layout,
        )  # fmt: skip
        # a metric with settings is a column such as "noise_sensitivity(mode=relevant)"
        columns = {m: next(c for c in result.metrics if c == m or c.startswith(f"{m}(")) for m in metrics}
        scores: dict[str, Any] = {m: result[column] for m, column in columns.items()}
        scores[OUTPUTS] = {m: [written(r) for r in result.results[column]] for m, column in columns.items()}
        return scores

    with every_family_sample_first(switches) if switches else contextlib.nullcontext():
        return _score_groups(pairs, score, "", only)


OUTPUTS = "__outputs__"
"""The key under which our side's `score` also returns what the judge wrote for each sample (`written`)."""


def written(result: Any) -> dict[str, Any]:
    """What one metric result keeps of the judge's own writing: the NaN reason, the raw text of a failure,
    and every text under `WRITTEN` in its details.

    >>> from ascend_eval.metrics.base import MetricResult
    >>> written(MetricResult(0.5, details={"statements": ["A."], "p_supported": [0.5]}))
    {'reason': None, 'texts': ['A.']}
    >>> written(MetricResult.nan("echo: x", raw='{"statements": ["y"]}'))
    {'reason': 'echo: x', 'texts': ['{"statements": ["y"]}']}
    """
    details = result.details or {}
    texts = [t for key in WRITTEN for t in details.get(key) or () if isinstance(t, str)]
    if isinstance(details.get("raw"), str):
        texts.append(details["raw"])
    return {"reason": result.reason, "texts": texts}


ALL_SAMPLE_FIRST = "sample_first_all"
"""A variant's layout for the experiment (not one of `evaluate`'s layouts): every family sample first."""
EXPERIMENT_OPTIONS: dict[str, dict[str, Any]] = {
    "examples": {"sample_first_examples": True},  # a classify family keeps its few-shot examples
    "contexts": {"sample_first_parts": CONTEXTS_ONLY},  # the input points to the contexts only
}


def experiment_switches(layout: str) -> dict[str, Any]:
    """The spec fields an experiment's layout sets on the families that opt out of sample first, {} for
    one of `evaluate`'s layouts: "sample_first_all" sets `sample_first`, and each "+option" of
    `EXPERIMENT_OPTIONS` more.

    >>> experiment_switches("sample_first_all+examples")
    {'sample_first': True, 'sample_first_examples': True}
    >>> experiment_switches("task_first")
    {}
    """
    base, *options = layout.split("+")
    if base != ALL_SAMPLE_FIRST:
        return {}
    unknown = [o for o in options if o not in EXPERIMENT_OPTIONS]
    if unknown:
        raise SystemExit(f"layout {layout!r}: unknown option(s) {unknown}; valid: {list(EXPERIMENT_OPTIONS)}")
    return {"sample_first": True, **{k: v for o in options for k, v in EXPERIMENT_OPTIONS[o].items()}}


@contextlib.contextmanager
def every_family_sample_first(switches: dict[str, Any]) -> Iterator[list[str]]:
    """For the duration, every prompt (`ascend_eval.prompts.PROMPTS`) that opts out of the sample-first
    layout takes the `switches` (`experiment_switches`) its spec has; yields their tags. Their requests
    then differ from the opted-out ones, so a request cache keeps both apart."""
    from ascend_eval.prompts import PROMPTS

    saved = {tag: {k: getattr(spec, k) for k in switches if hasattr(spec, k)}
             for tag, spec in PROMPTS.items() if not spec.sample_first}  # fmt: skip
    for tag, fields in saved.items():
        for key in fields:
            object.__setattr__(PROMPTS[tag], key, switches[key])  # frozen specs: the experiment's one switch
    try:
        yield sorted(saved)
    finally:
        for tag, fields in saved.items():
            for key, value in fields.items():
                object.__setattr__(PROMPTS[tag], key, value)


def ragas_score_pairs(
    pairs: list[dict[str, Any]], llm: Any, emb: Any, *, timeout: float
) -> list[dict[str, Any]]:
    """`score_pairs` with RAGAS 0.4.3's legacy metrics (`benchmarks/ragas_side.py`, as its docs set them up)
    and `ragas.evaluate`, on the same pair groups: a RAGAS job that fails is NaN, as RAGAS reports it."""
    import ragas
    from ragas import EvaluationDataset
    from ragas.run_config import RunConfig

    from benchmarks.ragas_side import ragas_metrics

    def score(metrics: Sequence[str], language: str, samples: list[dict[str, Any]]) -> dict[str, list[float]]:
        objects = ragas_metrics(list(metrics), llm, emb)
        result = ragas.evaluate(
            EvaluationDataset.from_list(samples), metrics=objects, llm=llm, embeddings=emb,
            run_config=RunConfig(timeout=timeout), raise_exceptions=False, show_progress=False,
        )  # fmt: skip
        out = {}
        for metric, obj in zip(metrics, objects, strict=True):
            key = next(k for k in result.scores[0] if k == obj.name or k.startswith(obj.name + "("))
            out[metric] = [float(row[key]) for row in result.scores]
        return out

    return _score_groups(pairs, score, "ragas ")


def variant_accuracy(
    pairs: list[dict[str, Any]], variants: Sequence[str], score: Any
) -> tuple[list[dict[str, Any]], dict[str, list[dict[str, Any]]]]:
    """Score the pairs once per variant ("calibration/scoring[/prompt layout]", e.g. "anchored/expected" or
    "anchored/expected/task_first") with `score(pairs, calibration=..., scoring=..., prompt_layout=...)`.
    Over one request cache every variant after the first of the same layout asks the judge only its
    calibration requests: the verdicts are the same requests. Returns the accuracy rows (each with its
    "variant") and each pair's scores per variant under "variants"."""
    rows: list[dict[str, Any]] = []
    for variant in variants:
        calibration, scoring, layout = [*variant.split("/"), "auto", "auto"][:3]
        started = time.perf_counter()
        score(pairs, calibration=calibration, scoring=scoring or "auto", prompt_layout=layout or "auto")
        print(f"variant {variant}: {time.perf_counter() - started:.0f} s", flush=True)
        rows += [{"variant": variant, **r} for r in accuracy(pairs)]
        for p in pairs:
            p.setdefault("variants", {})[variant] = p.pop("scores", {})
            p.setdefault("outputs_by_variant", {})[variant] = p.pop("outputs", {})
    return rows, {v: [r for r in rows if r["variant"] == v] for v in variants}


def right(better: float, worse: float, metric: str = "") -> bool:
    """Strictly better (higher; lower for `LOWER_IS_BETTER`); a tie or a NaN on either side is wrong."""
    if math.isnan(better) or math.isnan(worse):
        return False
    return better < worse if metric in LOWER_IS_BETTER else better > worse


RECORD_COLUMNS = ("id", "property", "language", "metric", "variant", "better", "worse", "right")


def pair_records(pairs: list[dict[str, Any]], variant: str = "ours") -> list[list[Any]]:
    """One compact row per pair, metric and variant (`RECORD_COLUMNS`) of a fidelity run's `pairs`: what a
    report keeps of the run's file once its texts and outputs are dropped. Scores are rounded to 4 places
    and a NaN is None; `right` is judged on the unrounded scores. A file of one variant keeps its scores
    under "scores", named `variant` here.

    >>> pair = {"id": "p1", "property": "noise_sensitivity", "language": "zh",
    ...         "variants": {"ragas": {"noise_sensitivity": [0.1, float("nan")]}}}
    >>> pair_records([pair])
    [['p1', 'noise_sensitivity', 'zh', 'noise_sensitivity', 'ragas', 0.1, None, False]]
    >>> pair_records([{"id": "p2", "property": "faithfulness", "language": "en",
    ...                "scores": {"faithfulness": [0.912345, 0.5]}}])
    [['p2', 'faithfulness', 'en', 'faithfulness', 'ours', 0.9123, 0.5, True]]
    """
    rows = []
    for pair in pairs:
        by_variant = pair.get("variants") or {variant: pair.get("scores", {})}
        for name, scores in by_variant.items():
            for metric, members in scores.items():
                better, worse = (math.nan if s is None else float(s) for s in members)
                shown = [None if math.isnan(s) else round(s, 4) for s in (better, worse)]
                rows.append([pair["id"], pair["property"], pair["language"], metric, name, *shown,
                             right(better, worse, metric)])  # fmt: skip
    return rows


def accuracy(pairs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Per (metric, source): pairs, right, ties, NaN pairs."""
    rows = []
    for prop, metrics in METRICS.items():
        for metric in metrics:
            for source in (*SOURCES, "all"):
                scored = [p for p in pairs if p["property"] == prop and metric in p.get("scores", {})]
                scored = [p for p in scored if source in ("all", p["source"])]
                if not scored:
                    continue
                pair_scores = [p["scores"][metric] for p in scored]
                rows.append({
                    "metric": metric, "source": source, "pairs": len(scored),
                    "right": sum(right(b, w, metric) for b, w in pair_scores),
                    "ties": sum(b == w for b, w in pair_scores),
                    "nan": sum(math.isnan(b) or math.isnan(w) for b, w in pair_scores),
                })  # fmt: skip
    return rows


def table(rows: list[dict[str, Any]]) -> str:
    lines = [
        "| metric | pairs | right | accuracy | ties | NaN |",
        "| --- | --- | ---: | ---: | ---: | ---: |",
    ]
    for r in rows:
        acc = r["right"] / r["pairs"]
        cells = [r["metric"], f"{r['pairs']} {r['source']}", r["right"], f"{acc:.2f}", r["ties"], r["nan"]]
        lines.append("| " + " | ".join(str(c) for c in cells) + " |")
    return "\n".join(lines)


def ours_rows(
    pairs: list[dict[str, Any]], args: argparse.Namespace
) -> tuple[list[dict[str, Any]], dict[str, list[dict[str, Any]]]]:
    """Our accuracy rows on `pairs` for each of `args.variants`, the judge and embedder built once."""
    from ascend_eval.models.factory import resolve
    from ascend_eval.models.spec import ModelSpec

    judge_arg: Any = args.judge
    if args.judge.startswith(("http://", "https://")):
        judge_arg = ModelSpec(model=args.judge, role="judge", request_timeout=args.request_timeout)
    judge, embedder = resolve(judge_arg, "judge"), resolve(args.embedder, "embedder")
    with tempfile.TemporaryDirectory() as scratch:
        cache = args.cache_dir or (scratch if len(args.variants) > 1 else False)
        return variant_accuracy(
            pairs,
            args.variants,
            lambda p, **how: score_pairs(p, judge, embedder, cache, only=args.metrics or (), **how),
        )


def ragas_rows(pairs: list[dict[str, Any]], args: argparse.Namespace) -> list[dict[str, Any]]:
    """RAGAS's accuracy rows on `pairs`, through the server `args.judge` names (variant "ragas")."""
    from benchmarks.harness import resolve_model
    from benchmarks.ragas_side import Counts, embeddings, server_llm

    if not args.judge.startswith(("http://", "https://")):
        raise SystemExit("--ragas needs --judge to be the judge server's URL")
    base = args.judge.split("/v1/")[0]
    llm = server_llm(base, args.served_model, args.ragas_max_tokens, Counts())
    emb = embeddings(str(resolve_model(args.embedder, "embedder")))
    started = time.perf_counter()
    ragas_score_pairs(pairs, llm, emb, timeout=args.request_timeout)
    print(f"variant ragas: {time.perf_counter() - started:.0f} s", flush=True)
    rows = [{"variant": "ragas", **r} for r in accuracy(pairs)]
    for p in pairs:
        p.setdefault("variants", {})["ragas"] = p.pop("scores", {})
    return rows


def parser() -> argparse.ArgumentParser:
    """The command line of a fidelity run (the fidelity gate reads a run's groups from it too)."""
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--wikieval", type=Path, default=None, help="path to WikiEval.csv")
    parser.add_argument("--rows", type=int, default=10, help="WikiEval pairs per property")
    parser.add_argument("--zh", type=Path, default=ZH_PAIRS, help="our Chinese pairs (JSON lines)")
    parser.add_argument("--no-zh", action="store_true", help="leave out the first Chinese pairs")
    parser.add_argument(
        "--pairs", type=Path, nargs="*", default=[*PROJECT_PAIRS, *LONG_PAIRS],
        help="the project's pair files (default: short and long, both languages); none with an empty list",
    )  # fmt: skip
    parser.add_argument("--properties", nargs="+", default=list(METRICS), choices=list(METRICS))
    parser.add_argument(
        "--languages", nargs="+", default=["en", "zh"], choices=["en", "zh"],
        help="score only the pairs in these languages (the fidelity gate runs one language at a time)",
    )  # fmt: skip
    parser.add_argument(
        "--metrics", nargs="+", default=None, choices=sorted({m for ms in METRICS.values() for m in ms}),
        help="score only these metrics (default: every metric of the properties asked)",
    )  # fmt: skip
    parser.add_argument(
        "--part", type=part, default=None, metavar="K/N",
        help="score only the K-th of N equal runs of the selected pairs, in their order (1/4 to 4/4), so a "
        "long group is scored, and kept, a part at a time",
    )  # fmt: skip
    parser.add_argument("--judge", required=True, help="a judge: shipped name, directory or .gguf")
    parser.add_argument("--embedder", default="multilingual-e5-small")
    parser.add_argument(
        "--cache-dir", default=None,
        help="request cache (default: none; a temporary one when more than one variant is asked)",
    )  # fmt: skip
    parser.add_argument(
        "--variants", nargs="*", default=["auto/auto"],
        help="calibration/scoring[/prompt_layout] to score, first to last over one cache, e.g. off/threshold "
        "anchored/threshold off/expected anchored/expected anchored/expected/task_first; the layout "
        f"{ALL_SAMPLE_FIRST}[+{'][+'.join(EXPERIMENT_OPTIONS)}] puts every prompt family sample first, the "
        "opted-out ones too (`experiment_switches`) (default: "
        "evaluate's defaults); none with "
        "--ragas scores RAGAS's side alone (to run it beside ours in another process on the same server)",
    )  # fmt: skip
    parser.add_argument(
        "--request-timeout",
        type=float,
        default=3600.0,
        help="seconds per request to a judge server (a CPU server can take minutes to answer a batch)",
    )
    parser.add_argument(
        "--ragas", action="store_true",
        help="also score the pairs with RAGAS 0.4.3 through the same judge server (--judge is its URL), "
        "after ours; its rows are the variant 'ragas'",
    )  # fmt: skip
    parser.add_argument("--served-model", default="judge", help="the model name the judge server serves")
    parser.add_argument("--ragas-max-tokens", type=int, default=1024, help="RAGAS's max_tokens per call")
    parser.add_argument("--out", type=Path, default=None, help="write pairs, scores and accuracy as JSON")
    return parser


def selected_pairs(args: argparse.Namespace) -> list[dict[str, Any]]:
    """The pairs a run's arguments ask for, in the order they are read (scored by property and language)."""
    pairs = wikieval_pairs(args.wikieval, args.rows) if args.wikieval else []
    if not args.no_zh:
        pairs += zh_pairs(args.zh)
    for path in args.pairs:
        pairs += project_pairs(path)
    pairs = [p for p in pairs if p["property"] in args.properties and p["language"] in args.languages]
    if args.metrics:
        pairs = [p for p in pairs if set(METRICS[p["property"]]) & set(args.metrics)]
    if args.part is not None:
        k, n = args.part
        pairs = pairs[(k - 1) * len(pairs) // n : k * len(pairs) // n]
    return pairs


def part(text: str) -> tuple[int, int]:
    """`--part K/N` as (K, N), 1 <= K <= N.

    >>> part("2/4")
    (2, 4)
    >>> part("5/4")
    Traceback (most recent call last):
    ...
    argparse.ArgumentTypeError: '5/4': give K/N with 1 <= K <= N, e.g. 2/4
    """
    k, _, n = text.partition("/")
    if not (k.isdigit() and n.isdigit() and 1 <= int(k) <= int(n)):
        raise argparse.ArgumentTypeError(f"{text!r}: give K/N with 1 <= K <= N, e.g. 2/4")
    return int(k), int(n)


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    pairs = selected_pairs(args)
    if not pairs:
        raise SystemExit("no pairs: pass --wikieval PATH, --pairs FILES and/or keep the Chinese pairs")
    if not args.variants and not args.ragas:
        raise SystemExit("nothing to score: give --variants, --ragas or both")
    started = time.perf_counter()
    rows, by_variant = ours_rows(pairs, args) if args.variants else ([], {})
    _write(args.out, rows, pairs)  # ours first: RAGAS's side takes far longer
    if args.ragas:
        rows += ragas_rows(pairs, args)
        by_variant["ragas"] = [r for r in rows if r["variant"] == "ragas"]
        _write(args.out, rows, pairs)
    for variant, variant_rows in by_variant.items():
        print(f"\n{variant}\n{table(variant_rows)}")
    print(f"total {time.perf_counter() - started:.0f} s")
    return 0


def _write(out: Path | None, rows: list[dict[str, Any]], pairs: list[dict[str, Any]]) -> None:
    if out:
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(json.dumps({"command": sys.argv, "accuracy": rows, "pairs": pairs}, indent=1,
                                  ensure_ascii=False))  # fmt: skip


if __name__ == "__main__":
    sys.exit(main())
