"""Judge agreement on the user's own criteria and rubrics: does the better member of each pair score higher?

The metrics are the six criteria and six rubrics of `benchmarks/data/criteria_metrics.yaml` (three
criteria and three rubrics written in Chinese, the rest in English); the pairs are
`criteria_pairs_{en,zh}.jsonl`, five per metric and language, each two samples that differ only in what the
metric judges (`benchmarks/data/CRITERIA_PAIRS.md`). Both tools see the same fields of each sample: those
the metric `reads`.

* ours: `Criterion` / `Rubric` in classify mode, one request per sample, read two ways from one run: the
  expected score (p(yes), the probability-weighted level) and the argmax label (the verdict, the most
  probable level);
* RAGAS 0.4.3 (`--ragas`): the same definitions as `AspectCritic(name, definition)` and
  `RubricsScore(rubrics={"score1_description": ...})` through `ragas.evaluate`, on the same server
  (`benchmarks/ragas_side.py`): RAGAS's score is its label (0/1, or the level).

With `--anchors` (`benchmarks/data/criteria_anchors.yaml`), each metric gets labelled samples apart from
the pairs: a criterion one yes and one no per language, a rubric one each of its levels 1, 3 and 5 per
language. Ours takes them as `anchors=`: a criterion's yes/no threshold goes between what the judge gives
them, a rubric's expected level onto their scale. RAGAS takes the same samples, with their reasons, as
few-shot examples (`AspectCritic`'s verdicts, `RubricsScore`'s scores), the form its prompts have for them.

A pair is right when the better member scores strictly higher; a tie or a NaN on either side is wrong, and
both are counted. Each accuracy has a Wilson 95% interval. The server's token counters are read around
each side.

    python -m benchmarks criteria-fidelity --judge http://127.0.0.1:8011/v1/chat/completions --ragas \\
        --cache-dir C --out criteria.json
"""

from __future__ import annotations

import argparse
import json
import math
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import ascend_eval
from ascend_eval.choices import LAYOUT_SETTINGS
from ascend_eval.metrics.criteria import FIELDS, Criterion, UserMetric
from ascend_eval.metrics.files import metric_entries
from ascend_eval.yaml_files import load_yaml

DATA = Path(__file__).parent / "data"
METRICS_FILE = DATA / "criteria_metrics.yaml"
ANCHORS_FILE = DATA / "criteria_anchors.yaml"
PAIRS = tuple(DATA / f"criteria_pairs_{lang}.jsonl" for lang in ("en", "zh"))
RAGAS_COLUMNS = {"question": "user_input", "answer": "response", "contexts": "retrieved_contexts",
                 "reference": "reference"}  # fmt: skip


def load_metrics(path: Path = METRICS_FILE) -> dict[str, UserMetric]:
    """The file's criteria and rubrics by name."""
    entries = metric_entries(load_yaml(path.read_text(encoding="utf-8"), str(path))["metrics"], str(path))
    return {m.name: m for m in entries if isinstance(m, UserMetric)}


def with_anchors(metrics: dict[str, UserMetric], path: Path = ANCHORS_FILE) -> dict[str, UserMetric]:
    """The metrics with the file's anchors attached, criteria and rubrics alike (a metric the file does not
    name as it is)."""
    anchors = load_yaml(path.read_text(encoding="utf-8"), str(path))
    return {
        name: type(m)(name=name, **m.params, anchors=anchors[name]) if name in anchors else m
        for name, m in metrics.items()
    }


def load_pairs(paths: Sequence[Path] = PAIRS) -> list[dict[str, Any]]:
    return [
        json.loads(line) for path in paths for line in path.read_text(encoding="utf-8").splitlines() if line
    ]


def shown(sample: dict[str, Any], metric: UserMetric) -> dict[str, Any]:
    """The sample's columns that `metric` reads (RAGAS's names): all either tool is given."""
    keep = {FIELDS[f].value for f in metric.reads if f in FIELDS}
    return {k: v for k, v in sample.items() if k in keep}


def _groups(pairs: list[dict[str, Any]], metrics: dict[str, UserMetric]) -> list[tuple[UserMetric, list]]:
    return [(m, [p for p in pairs if p["metric"] == name]) for name, m in metrics.items()]


def score_ours(
    pairs: list[dict[str, Any]],
    metrics: dict[str, UserMetric],
    judge: Any,
    cache: Any,
    judge_mode: str = "classify",
    prompt_layout: str = "auto",
) -> dict[str, dict[str, int]]:
    """Each pair's "ours": expected scores and argmax labels of its members, [better, worse] each. In the
    generate judge mode ("ours_generate"), the judge writes a reason, then its verdict or level (greedy:
    the most probable label after the reason), so both readings are that label.
    Returns each metric's samples and the requests its plans asked for (cache hits included), by prompt."""
    asked: dict[str, dict[str, int]] = {}
    for metric, group in _groups(pairs, metrics):
        if not group:
            continue
        started = time.perf_counter()
        samples = [shown(p[k], metric) for k in ("better", "worse") for p in group]
        result = ascend_eval.evaluate(
            samples, [metric], judge=judge, cache_dir=cache, judge_mode=judge_mode,
            scoring="expected" if judge_mode == "classify" else "threshold",
            prompt_layout=prompt_layout, progress=False,
        )  # fmt: skip
        results = result.results[metric.name]
        asked[metric.name] = {"samples": len(samples), **{k: v.requests for k, v in result.stages.items()}}
        key = "verdict" if isinstance(metric, Criterion) else "level"
        n = len(group)
        for i, pair in enumerate(group):
            better, worse = results[i], results[n + i]
            if judge_mode == "generate":
                labels = [better.score, worse.score]
                reasons = [r.details.get("reasons", r.details.get("reason")) for r in (better, worse)]
                pair["ours_generate"] = {"score": labels, "label": labels, "reasons": reasons}
                continue
            pair["ours"] = {
                "score": [better.score, worse.score],
                "label": [b.details.get(key, math.nan) for b in (better, worse)],
                "reasons": [r.reason for r in (better, worse) if r.reason],
                "details": [
                    {k: r.details.get(k) for k in ("p_yes", "probs", "expected_level", "calibration")}
                    for r in (better, worse)
                ],
            }
        print(f"ours {metric.name}: {n} pairs in {time.perf_counter() - started:.0f} s", flush=True)
    return asked


def ragas_metric(metric: UserMetric, llm: Any) -> Any:
    """RAGAS 0.4.3's object for the same definition: `AspectCritic` or `RubricsScore`."""
    from ragas.metrics._aspect_critic import AspectCritic
    from ragas.metrics._domain_specific_rubrics import RubricsScore

    if isinstance(metric, Criterion):
        from ragas.metrics._aspect_critic import AspectCriticInput, AspectCriticOutput

        critic = AspectCritic(name=metric.name, definition=metric.definition, llm=llm)
        critic.single_turn_prompt.examples = [
            (
                AspectCriticInput(**ragas_fields(fields)),
                AspectCriticOutput(reason=reason or "-", verdict=int(holds)),
            )
            for fields, holds, reason in metric.anchors
        ]
        return critic
    from ragas.metrics._domain_specific_rubrics import ScoreFeedback, SingleTurnInputWithoutRubric

    rubrics = {f"score{level}_description": text for level, text in metric.levels.items()}  # type: ignore[attr-defined]
    rubric = RubricsScore(name=metric.name, rubrics=rubrics, llm=llm)
    rubric.single_turn_scoring_prompt.examples = [
        (
            SingleTurnInputWithoutRubric(**ragas_fields(fields)),
            ScoreFeedback(feedback=reason or "-", score=level),
        )
        for fields, level, reason in metric.anchors
    ]
    return rubric


def ragas_fields(fields: dict[str, str]) -> dict[str, Any]:
    """An anchor's fields under RAGAS's names, the contexts (one passage a line) as a list."""
    out: dict[str, Any] = {RAGAS_COLUMNS[k]: v for k, v in fields.items() if k in RAGAS_COLUMNS}
    if "retrieved_contexts" in out:
        out["retrieved_contexts"] = out["retrieved_contexts"].split("\n")
    return out


def score_ragas(pairs: list[dict[str, Any]], metrics: dict[str, UserMetric], llm: Any, timeout: int) -> None:
    """Each pair's "ragas": RAGAS's scores of its members (its label), [better, worse]."""
    import ragas
    from ragas import EvaluationDataset
    from ragas.run_config import RunConfig

    for metric, group in _groups(pairs, metrics):
        if not group:
            continue
        started = time.perf_counter()
        samples = [shown(p[k], metric) for k in ("better", "worse") for p in group]
        for s in samples:
            if "retrieved_contexts" in s:
                s["retrieved_contexts"] = list(s["retrieved_contexts"])
        result = ragas.evaluate(
            EvaluationDataset.from_list(samples), [ragas_metric(metric, llm)],
            run_config=RunConfig(timeout=timeout), show_progress=False, raise_exceptions=False,
        )  # fmt: skip
        scores = [float(x) if x is not None else math.nan for x in result.to_pandas()[metric.name]]
        n = len(group)
        for i, pair in enumerate(group):
            pair["ragas"] = {"score": [scores[i], scores[n + i]], "label": [scores[i], scores[n + i]]}
        print(f"ragas {metric.name}: {n} pairs in {time.perf_counter() - started:.0f} s", flush=True)


def wilson(right: int, n: int, z: float = 1.96) -> tuple[float, float]:
    """The Wilson score interval of a proportion right / n.

    >>> [round(x, 3) for x in wilson(8, 10)]
    [0.49, 0.943]
    """
    if n == 0:
        return (math.nan, math.nan)
    p = right / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return (centre - half, centre + half)


def accuracy(pairs: list[dict[str, Any]], tool: str, read: str) -> list[dict[str, Any]]:
    """Per metric and language (then "all"): pairs, right, ties, NaN pairs, accuracy and its interval."""
    rows = []
    names = [*dict.fromkeys(p["metric"] for p in pairs), "all"]
    for name in names:
        for language in ("en", "zh", "all"):
            scored = [p for p in pairs if tool in p and name in ("all", p["metric"])]
            scored = [p[tool][read] for p in scored if language in ("all", p["language"])]
            if not scored:
                continue
            right = sum(not (math.isnan(b) or math.isnan(w)) and b > w for b, w in scored)
            low, high = wilson(right, len(scored))
            rows.append({"tool": tool, "read": read, "metric": name, "language": language,
                         "pairs": len(scored), "right": right, "ties": sum(b == w for b, w in scored),
                         "nan": sum(math.isnan(b) or math.isnan(w) for b, w in scored),
                         "accuracy": right / len(scored), "interval": [low, high]})  # fmt: skip
    return rows


def table(rows: list[dict[str, Any]]) -> str:
    """One line per metric and language: each tool and reading's right / pairs, interval, ties, NaN."""
    reads = list(dict.fromkeys((r["tool"], r["read"]) for r in rows))
    head = " | ".join(f"{tool} {read}" for tool, read in reads)
    lines = [f"| metric | language | pairs | {head} |", "| --- | --- | ---: |" + " --- |" * len(reads)]
    by = {(r["tool"], r["read"], r["metric"], r["language"]): r for r in rows}
    for metric, language in dict.fromkeys((r["metric"], r["language"]) for r in rows):
        cells = []
        for tool, read in reads:
            r = by.get((tool, read, metric, language))
            if r is None:
                cells.append("")
                continue
            low, high = r["interval"]
            cells.append(
                f"{r['right']} [{max(low, 0):.2f}, {min(high, 1):.2f}] ({r['ties']} ties, {r['nan']} NaN)"
            )
        pairs = next(r["pairs"] for r in rows if (r["metric"], r["language"]) == (metric, language))
        lines.append(f"| {metric} | {language} | {pairs} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def _counters(url: str) -> dict[str, float] | None:
    from benchmarks.server import read_counters

    return read_counters(url.split("/v1")[0]) if url.startswith("http") else None


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--judge", required=True, help="the judge: a server URL (.../v1/chat/completions) or a model"
    )
    parser.add_argument("--served-model", default="judge", help="the server's model name, for RAGAS")
    parser.add_argument("--cache-dir", default=False, help="our request cache (default: none)")
    parser.add_argument("--metrics", nargs="*", help="only these metrics of the file")
    parser.add_argument("--ragas", action="store_true", help="also score RAGAS 0.4.3 on the same server")
    parser.add_argument(
        "--judge-mode", choices=("classify", "generate"), default="classify",
        help="ours in classify mode (expected score and argmax label) or generate mode (reason, then label)",
    )  # fmt: skip
    parser.add_argument(
        "--anchors", action="store_true",
        help=f"give each criterion its anchors from {ANCHORS_FILE.name} (RAGAS: as few-shot examples)",
    )  # fmt: skip
    parser.add_argument(
        "--prompt-layout", choices=LAYOUT_SETTINGS, default="auto",
        help="our prompt layout (default: the library's default)",
    )  # fmt: skip
    parser.add_argument("--no-ours", action="store_true", help="score RAGAS's side alone")
    parser.add_argument("--ragas-max-tokens", type=int, default=1024)
    parser.add_argument("--request-timeout", type=int, default=1800)
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args(argv)
    metrics = load_metrics()
    if args.anchors:
        metrics = with_anchors(metrics)
    if args.metrics:
        metrics = {k: v for k, v in metrics.items() if k in args.metrics}
    pairs = [p for p in load_pairs() if p["metric"] in metrics]
    tokens: dict[str, Any] = {}
    rows: list[dict[str, Any]] = []
    if not args.no_ours:
        from ascend_eval.models.factory import resolve
        from ascend_eval.models.spec import ModelSpec
        from benchmarks.server import counter_delta

        judge: Any = args.judge
        if judge.startswith("http"):
            judge = ModelSpec(model=judge, role="judge", request_timeout=args.request_timeout)
        before, started = _counters(args.judge), time.perf_counter()
        generate = args.judge_mode == "generate"
        tool = "ours_generate" if generate else "ours"
        tokens["requests"] = score_ours(
            pairs, metrics, resolve(judge, "judge"), args.cache_dir, args.judge_mode, args.prompt_layout
        )
        tokens[tool] = {
            "seconds": time.perf_counter() - started,
            **(counter_delta(before, _counters(args.judge)) or {}),
        }
        rows += (
            accuracy(pairs, tool, "label")
            if generate
            else (accuracy(pairs, "ours", "score") + accuracy(pairs, "ours", "label"))
        )
    if args.ragas:
        from benchmarks.ragas_side import Counts, server_llm
        from benchmarks.server import counter_delta

        llm = server_llm(args.judge.split("/v1")[0], args.served_model, args.ragas_max_tokens, Counts())
        before, started = _counters(args.judge), time.perf_counter()
        score_ragas(pairs, metrics, llm, args.request_timeout)
        tokens["ragas"] = {
            "seconds": time.perf_counter() - started,
            **(counter_delta(before, _counters(args.judge)) or {}),
        }
        rows += accuracy(pairs, "ragas", "score")
    print(table(rows))
    print(json.dumps(tokens))
    if args.out:
        args.out.write_text(json.dumps({"command": argv, "rows": rows, "tokens": tokens, "pairs": pairs},
                                       ensure_ascii=False, indent=1), encoding="utf-8")  # fmt: skip
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
