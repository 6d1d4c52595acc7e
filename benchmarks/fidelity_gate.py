#!/usr/bin/env python3
"""The fidelity gate: does a prompt or layout change keep the judge as right as before, on every pair we have?

Every change to a prompt, a layout or the scoring is measured before and after on the whole developer set,
through the same judge server: WikiEval's rows (`--rows 50` for every property), the first Chinese pairs, the
project's short pairs and its long pairs, English and Chinese. The change passes when

* the pairs right over the whole set do not fall;
* no metric loses more than max(1, 5% of its pairs) (`allowed_loss`);
* nothing the judge wrote anywhere in the set after the change (statements, entities, questions, the raw
  text of a failure) repeats the layout's wording, and no score is NaN for an echo (`echoes`).

Each metric's change is reported per language and length with a paired bootstrap interval (pairs resampled
with replacement, `paired_interval`): a change whose interval spans 0 is noise on a set of that size.

One command runs both sides and the comparison. Each side is the library at a commit (a detached git worktree
under OUT), scored by this checkout's harness (`benchmarks/fidelity.py`, so both sides score the same pairs),
over one request cache: a request that the change leaves alone is asked once, for both sides. A side whose
file is already in OUT is not scored again, so a stopped run picks up where it was.

    python -m benchmarks fidelity-gate run --before d34c451 --after HEAD --judge http://127.0.0.1:8011/v1 \\
        --wikieval ../shared/fidelity/WikiEval.csv --rows 50 --out gate/
    python -m benchmarks fidelity-gate compare gate/before.json gate/after.json

On a CPU the whole set takes longer than a working session, and a new machine comes without the request
cache. `--by-group` scores each (property, language) group in its own process, to
`OUT/SIDE-PROPERTY-LANG.json`, both sides of a group before the next (or, `--both-at-once`, the two sides
side by side), so a stopped gate keeps every group it finished. `record` keeps a finished group in a
report's summary.json (its scores per pair, and what the echo check found in what the judge wrote), and
`compare` reads such entries (`summary.json#NAME`) beside files, so a gate can be finished on another
machine and compared as one:

    python -m benchmarks fidelity-gate run --by-group --before d34c451 --judge URL --out gate/ ...
    python -m benchmarks fidelity-gate record gate/*-*.json --summary REPORT/summary.json
    # later, elsewhere: score only the groups REPORT does not keep, then compare them all
    python -m benchmarks fidelity-gate run --by-group --kept REPORT/summary.json --before d34c451 ...
    python -m benchmarks fidelity-gate compare --before gate/before-*.json 'REPORT/summary.json#before-x' \\
        --after gate/after-*.json 'REPORT/summary.json#after-x'

A group that alone outlasts a session (WikiEval's 66 English faithfulness pairs take hours on two cores) is
kept a part at a time with `--parts N`: each group not already whole runs as N processes over its pairs in
order (`fidelity --part K/N`), to `OUT/SIDE-PROPERTY-LANG-partKofN.json`, each recorded as it finishes.
"""

from __future__ import annotations

import argparse
import json
import math
import random
import subprocess
import sys
from collections.abc import Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from ascend_eval.prompts.layout import echoed
from benchmarks.fidelity import LOWER_IS_BETTER, METRICS, right
from benchmarks.fidelity_table import pairs_from_log

REPO = Path(__file__).resolve().parents[1]
RESAMPLES = 2000


def allowed_loss(pairs: int) -> float:
    """The most pairs a metric may lose: max(1, 5% of its pairs).

    >>> allowed_loss(20), allowed_loss(150)
    (1, 7.5)
    """
    return max(1, 0.05 * pairs)


def paired_interval(before: Sequence[bool], after: Sequence[bool], *, seed: int = 0,
                    resamples: int = RESAMPLES, confidence: float = 0.95) -> tuple[float, float]:  # fmt: skip
    """A percentile-bootstrap interval for the change in pairs right (after - before), the pairs resampled
    with replacement together with both sides' verdicts on them; seeded.

    >>> paired_interval([True] * 30, [True] * 30)
    (0.0, 0.0)
    >>> low, high = paired_interval([False] * 10 + [True] * 20, [True] * 30)
    >>> 5 <= low <= high <= 16
    True
    """
    n = len(before)
    if n == 0:
        return (0.0, 0.0)
    diffs = [int(a) - int(b) for b, a in zip(before, after, strict=True)]
    rng = random.Random(seed)
    totals = sorted(sum(diffs[rng.randrange(n)] for _ in range(n)) for _ in range(resamples))
    tail = (1 - confidence) / 2
    return float(totals[int(tail * resamples)]), float(
        totals[min(resamples - 1, int((1 - tail) * resamples))]
    )


def _key(pair: dict[str, Any]) -> tuple[str, str, str]:
    return (pair["id"], pair["property"], pair["language"])


def length(pair: dict[str, Any]) -> str:
    """ "long" for the project's long pairs (source "long-LANG", ids "LANG-long-..."), else "short"."""
    return "long" if pair.get("source", "").startswith("long") or "-long-" in pair["id"] else "short"


def _verdicts(pair: dict[str, Any], variant: str | None) -> dict[str, bool]:
    """Per metric, whether `variant` (default: the pair's only one) scored the better member better. A pair
    read from compact records keeps the verdict they recorded, judged on the unrounded scores."""
    variants = pair.get("variants") or {}
    if variant is None:
        if len(variants) != 1:
            raise SystemExit(f"pair {pair['id']} has variants {sorted(variants)}: name one with --*-variant")
        variant = next(iter(variants))
    recorded = (pair.get("right") or {}).get(variant, {})
    return {m: recorded.get(m, right(*s, m)) for m, s in variants.get(variant, {}).items()}


def verdicts(
    before: Iterable[dict[str, Any]], after: Iterable[dict[str, Any]], before_variant: str | None = None,
    after_variant: str | None = None,
) -> list[dict[str, Any]]:  # fmt: skip
    """One row per (pair, metric) scored on both sides: the metric, the pair's language and length, and
    whether each side was right on it. A pair only one side scored is left out (and counted by `compare`)."""
    by_key = {_key(p): p for p in before}
    rows = []
    for pair in after:
        old = by_key.get(_key(pair))
        if old is None:
            continue
        new, was = _verdicts(pair, after_variant), _verdicts(old, before_variant)
        for metric in METRICS[pair["property"]]:
            if metric in new and metric in was:
                rows.append({"metric": metric, "language": pair["language"], "length": length(pair),
                             "before": was[metric], "after": new[metric]})  # fmt: skip
    return rows


def table(rows: list[dict[str, Any]], group: Sequence[str]) -> list[dict[str, Any]]:
    """Pairs, right before and after, the change and its interval, per `group` of keys (e.g. metric,
    language, length), in first-seen order."""
    groups: dict[tuple[Any, ...], list[dict[str, Any]]] = {}
    for r in rows:
        groups.setdefault(tuple(r[k] for k in group), []).append(r)
    out = []
    for key, members in groups.items():
        before, after = [m["before"] for m in members], [m["after"] for m in members]
        out.append({**dict(zip(group, key, strict=True)), "pairs": len(members), "before": sum(before),
                    "after": sum(after), "change": sum(after) - sum(before),
                    "interval": paired_interval(before, after)})  # fmt: skip
    return out


def echoes(pairs: Iterable[dict[str, Any]]) -> list[str]:
    """Every place where what the judge wrote repeats the layout's wording, or a score is NaN for an echo:
    "pair id / variant / metric / member: why"."""
    found = []
    for pair in pairs:
        if "outputs_by_variant" not in pair:
            found += [e for e in pair.get("echoes") or [] if e.startswith(f"{pair['id']} /")]
            continue
        for variant, by_metric in pair["outputs_by_variant"].items():
            for metric, members in by_metric.items():
                for member, out in zip(("better", "worse"), members, strict=True):
                    why = echoed(out.get("texts") or [])
                    if why is None and (out.get("reason") or "").startswith("echo:"):
                        why = out["reason"]
                    if why is not None:
                        found.append(f"{pair['id']} / {variant} / {metric} / {member}: {why}")
    return list(dict.fromkeys(found))


def echo_unchecked(pairs: Iterable[dict[str, Any]]) -> int:
    """Pairs whose outputs nobody read for echoes: kept neither with what the judge wrote nor with the
    findings of a `record` (a log, or a compact entry written before `record` kept them)."""
    return sum("outputs_by_variant" not in p and p.get("echoes") is None for p in pairs)


def compare(
    before: list[dict[str, Any]], after: list[dict[str, Any]], *, before_variant: str | None = None,
    after_variant: str | None = None,
) -> dict[str, Any]:  # fmt: skip
    """The gate's verdict on two fidelity runs' pairs: the tables, the echoes, and the rules each passes."""
    rows = verdicts(before, after, before_variant, after_variant)
    total = table(rows, ())[0] if rows else {"pairs": 0, "before": 0, "after": 0, "change": 0}
    per_metric = table(rows, ("metric",))
    found, unchecked = echoes(after), echo_unchecked(after)
    losers = [m for m in per_metric if -m["change"] > allowed_loss(m["pairs"])]
    return {
        "total": total,
        "per_metric": per_metric,
        "per_group": table(rows, ("metric", "language", "length")),
        "echoes": found,
        "echo_unchecked": unchecked,
        "unmatched": len(after) - len({_key(p) for p in after} & {_key(p) for p in before}),
        "rules": {
            "total right does not fall": total["after"] >= total["before"],
            "no metric loses more than max(1, 5%) of its pairs": not losers,
            "no output echoes the layout's wording": not found and not unchecked,
        },
    }


def markdown(verdict: dict[str, Any]) -> str:
    def line(r: dict[str, Any], *cells: Any) -> str:
        low, high = r["interval"]
        flag = " (lower is better)" if r.get("metric") in LOWER_IS_BETTER else ""
        return "| " + " | ".join(map(str, [*cells, r["pairs"], r["before"], r["after"], f"{r['change']:+d}",
                                           f"[{low:+.0f}, {high:+.0f}]"])) + f"{flag} |"  # fmt: skip

    out = ["| metric | language | length | pairs | right before | right after | change | 95% interval |",
           "| --- | --- | --- | ---: | ---: | ---: | ---: | --- |"]  # fmt: skip
    out += [line(r, r["metric"], r["language"], r["length"]) for r in verdict["per_group"]]
    out += ["", "| metric | pairs | right before | right after | change | 95% interval |",
            "| --- | ---: | ---: | ---: | ---: | --- |"]  # fmt: skip
    out += [line(r, r["metric"]) for r in verdict["per_metric"]]
    t = verdict["total"]
    out += ["", f"All: {t['before']} -> {t['after']} of {t['pairs']} pair checks."]
    out += [f"- {'pass' if ok else 'FAIL'}: {rule}" for rule, ok in verdict["rules"].items()]
    out += [f"  - echo: {e}" for e in verdict["echoes"][:20]]
    if verdict.get("echo_unchecked"):
        out += [f"  - {verdict['echo_unchecked']} pairs' outputs were not kept, so not read for echoes"]
    return "\n".join(out) + "\n"


def pairs_from_records(entry: dict[str, Any]) -> list[dict[str, Any]]:
    """The pairs of a run kept in a report as compact rows (`benchmarks.fidelity.pair_records`, under
    "pairs" or at the top of the entry), with each variant's scores (rounded) and verdicts (judged on the
    unrounded scores, so a pair right by less than the rounding stays right); what the judge wrote is not
    kept, so each pair carries the echo findings the entry recorded (`record`), or None where it has none.

    >>> entry = {"columns": ["id", "property", "language", "metric", "variant", "better", "worse", "right"],
    ...          "rows": [["p", "faithfulness", "en", "faithfulness", "auto/auto", 0.9, None, False]],
    ...          "echoes": []}
    >>> [(q["id"], q["variants"], q["right"], q["echoes"]) for q in pairs_from_records(entry)]
    [('p', {'auto/auto': {'faithfulness': [0.9, nan]}}, {'auto/auto': {'faithfulness': False}}, [])]
    """
    table_ = entry.get("pairs", entry)
    columns = table_["columns"]
    pairs: dict[tuple[str, str, str], dict[str, Any]] = {}
    for row in table_["rows"]:
        r = dict(zip(columns, row, strict=True))
        pair = pairs.setdefault((r["id"], r["property"], r["language"]), {
            "id": r["id"], "property": r["property"], "language": r["language"], "variants": {},
            "echoes": entry.get("echoes")})  # fmt: skip
        scores = [math.nan if v is None else float(v) for v in (r["better"], r["worse"])]
        pair["variants"].setdefault(r["variant"], {})[r["metric"]] = scores
        pair.setdefault("right", {}).setdefault(r["variant"], {})[r["metric"]] = bool(r["right"])
    return list(pairs.values())


def _pairs(spec: Path | str) -> list[dict[str, Any]]:
    """A fidelity run's pairs: its `--out` file; its log, for a run stopped before it wrote one (each
    group it finished, under the variant "ours", without what the judge wrote); or `SUMMARY.json#NAME`, a
    run a report keeps (`record`)."""
    path, _, name = str(spec).partition("#")
    text = Path(path).read_text(encoding="utf-8")
    if name:
        files = json.loads(text)["files"]
        if name not in files:
            raise SystemExit(f"{path} keeps no run named {name!r}: it has {', '.join(sorted(files))}")
        return pairs_from_records(files[name])
    if Path(path).suffix in (".log", ".txt"):
        return pairs_from_log(text.splitlines())
    return json.loads(text)["pairs"]


def side_pairs(specs: Sequence[Path | str]) -> list[dict[str, Any]]:
    """One side's pairs from several runs (e.g. one per group); a pair scored twice is an error."""
    pairs, seen = [], {}
    for spec in specs:
        for pair in _pairs(spec):
            if _key(pair) in seen:
                raise SystemExit(f"pair {_key(pair)} is in both {seen[_key(pair)]} and {spec}")
            seen[_key(pair)] = spec
            pairs.append(pair)
    return pairs


def record(run: Path, summary: Path, name: str | None = None) -> str:
    """Keep a finished run in a report's `summary.json` (created if missing) under `name` (default: the
    file's name): its command, accuracy rows, compact scores per pair, and what `echoes` found in what the
    judge wrote, which the compact rows no longer hold. Returns the name."""
    from benchmarks.fidelity import RECORD_COLUMNS, pair_records

    data = json.loads(run.read_text(encoding="utf-8"))
    unchecked = [p["id"] for p in data["pairs"] if "outputs_by_variant" not in p]
    if unchecked:
        raise SystemExit(f"{run}: pairs {unchecked[:5]} keep no outputs, so their echoes cannot be checked")
    name = name or run.name
    kept = json.loads(summary.read_text(encoding="utf-8")) if summary.exists() else {"files": {}}
    kept.setdefault("files", {})[name] = {
        "command": data["command"], "accuracy": data["accuracy"], "echoes": echoes(data["pairs"]),
        "pairs": {"columns": list(RECORD_COLUMNS), "rows": pair_records(data["pairs"])},
    }  # fmt: skip
    summary.parent.mkdir(parents=True, exist_ok=True)
    summary.write_text(json.dumps(kept, indent=1, ensure_ascii=False), encoding="utf-8")
    return name


def side_tree(commit: str, out: Path, name: str) -> Path:
    """A directory whose `ascend_eval` is the library at `commit` (a detached worktree under `out`, with
    its top-level models/ and kernels/ linked in as the installed package lays them out)."""
    tree = out / f"{name}-tree"
    if not tree.exists():
        subprocess.run(["git", "-C", str(REPO), "worktree", "add", "--detach", str(tree), commit], check=True,
                       capture_output=True)  # fmt: skip
    for sub in ("models", "kernels"):
        link = tree / "ascend_eval" / sub
        if not link.exists():
            link.symlink_to(tree / sub, target_is_directory=True)
    lib = out / f"{name}-lib"
    lib.mkdir(exist_ok=True)
    if not (lib / "ascend_eval").exists():
        (lib / "ascend_eval").symlink_to(tree / "ascend_eval", target_is_directory=True)
    return lib


def kept_runs(summaries: Sequence[Path]) -> dict[str, str]:
    """Each run the reports keep (`record`), by its name without ".json": `SUMMARY.json#NAME.json`; the
    first report to keep a name wins."""
    kept: dict[str, str] = {}
    for summary in summaries:
        for name in json.loads(summary.read_text(encoding="utf-8")).get("files", {}):
            kept.setdefault(name.removesuffix(".json"), f"{summary}#{name}")
    return kept


def finished(args: argparse.Namespace, name: str) -> Path | str | None:
    """Run NAME as it is already there: `OUT/NAME.json`, or the report in `--kept` that keeps it
    (`args.kept_runs`); None when it is to be scored."""
    result = args.out / f"{name}.json"
    if result.exists():
        print(f"{name}: {result} is there, not scored again", flush=True)
        return result
    kept = args.kept_runs.get(name)
    if kept is not None:
        print(f"{name}: kept in {kept}, not scored again", flush=True)
    return kept


def run_side(commit: str, side: str, args: argparse.Namespace, passthrough: Sequence[str],
             name: str | None = None) -> Path | str:  # fmt: skip
    """Score the pairs with the library at `commit` (`side`'s tree), unless `OUT/NAME.json` is there
    already or a report in `--kept` keeps that run (`args.kept_runs`; NAME: `side`, or one group's name)."""
    name = name or side
    result = args.out / f"{name}.json"
    there = finished(args, name)
    if there is not None:
        return there
    lib = side_tree(commit, args.out, side)
    boot = ("import runpy, sys; sys.path[:0] = [sys.argv.pop(1)]; "
            "runpy.run_module('benchmarks.fidelity', run_name='__main__', alter_sys=True)")  # fmt: skip
    partial = result.with_suffix(".json.part")
    command = [sys.executable, "-c", boot, str(lib), "--judge", args.judge,
               "--cache-dir", str(args.cache_dir), "--out", str(partial), *passthrough]  # fmt: skip
    print(f"{name} ({commit}): {' '.join(command[3:])}", flush=True)
    with (args.out / f"{name}.log").open("w") as log:
        subprocess.run(command, cwd=REPO, stdout=log, stderr=subprocess.STDOUT, check=True)
    partial.replace(result)  # only a finished run's file counts as done
    return result


def groups(passthrough: Sequence[str]) -> list[tuple[str, str]]:
    """The (property, language) groups a fidelity run with these arguments scores, in first-seen order."""
    from benchmarks.fidelity import parser, selected_pairs

    args = parser().parse_args([*passthrough, "--judge", "unused"])
    return list(dict.fromkeys((p["property"], p["language"]) for p in selected_pairs(args)))


Job = tuple[str, list[str]]
"""A group run's name without its side (`PROPERTY-LANG`, or `PROPERTY-LANG-partKofN`) and its arguments."""


def group_jobs(passthrough: Sequence[str], parts: int = 1) -> list[tuple[str, list[Job]]]:
    """Each group's name and its runs: the whole group, or with `parts` > 1 its parts (`fidelity --part`).

    >>> only = ["--no-zh", "--languages", "en", "--properties", "faithfulness"]
    >>> [(g, [n for n, _ in jobs]) for g, jobs in group_jobs(only, 2)]
    [('faithfulness-en', ['faithfulness-en-part1of2', 'faithfulness-en-part2of2'])]
    """
    out = []
    for prop, lang in groups(passthrough):
        only = [*passthrough, "--properties", prop, "--languages", lang]
        name = f"{prop}-{lang}"
        if parts <= 1:
            out.append((name, [(name, only)]))
        else:
            out.append((name, [(f"{name}-part{k}of{parts}", [*only, "--part", f"{k}/{parts}"])
                               for k in range(1, parts + 1)]))  # fmt: skip
    return out


def run_by_group(args: argparse.Namespace, passthrough: Sequence[str]) -> tuple[list[Any], list[Any]]:
    """Each group in its own process: OUT/SIDE-PROPERTY-LANG.json (with `args.parts`, one process and file
    per part of a group, OUT/SIDE-PROPERTY-LANG-partKofN.json, so that a long group is kept a part at a
    time). One side after the other per group, or with `args.both_at_once` the two sides in two processes at
    once, the before side one group ahead (it starts at the second group and ends with the first), so that
    one client's quiet stages (embedding, parsing, its next round's wait) leave the server busy, and the
    requests both sides share are asked by the before side first, then read from the cache. A group that
    is there whole (on disk or kept in `--kept`) is not split: its parts are not run."""
    jobs = group_jobs(passthrough, args.parts)
    done: dict[str, dict[str, list[Path | str]]] = {"before": {}, "after": {}}

    def side(name: str, commit: str, order: Sequence[tuple[str, list[Job]]]) -> None:
        for group, runs in order:
            whole = finished(args, f"{name}-{group}") if len(runs) > 1 else None
            done[name][group] = (
                [whole] if whole is not None
                else [run_side(commit, name, args, only, f"{name}-{part}") for part, only in runs]
            )  # fmt: skip

    if not args.both_at_once:
        for job in jobs:
            side("before", args.before, [job])
            side("after", args.after, [job])
    else:
        with ThreadPoolExecutor(2) as pool:
            runs = [pool.submit(side, "after", args.after, jobs),
                    pool.submit(side, "before", args.before, jobs[1:] + jobs[:1])]  # fmt: skip
            for run in runs:
                run.result()
    return (
        [spec for group, _ in jobs for spec in done["before"][group]],
        [spec for group, _ in jobs for spec in done["after"][group]],
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    commands = parser.add_subparsers(dest="command", required=True)
    run = commands.add_parser("run", help="score both sides, then compare them")
    run.add_argument("--before", required=True, help="the commit before the change")
    run.add_argument("--after", default="HEAD", help="the commit with the change (default HEAD)")
    run.add_argument("--judge", required=True, help="the judge server's URL (both sides use it)")
    run.add_argument("--out", type=Path, required=True, help="folder for both sides' runs, logs and the gate")
    run.add_argument(
        "--cache-dir", type=Path, default=None, help="the shared request cache (default OUT/cache)"
    )
    run.add_argument(
        "--by-group", action="store_true",
        help="one process per (property, language) group, both sides of a group before the next",
    )  # fmt: skip
    run.add_argument(
        "--kept", type=Path, nargs="+", default=[],
        help="reports' summary.json files: a run one keeps (`record`; by name, e.g. after-faithfulness-en) "
        "is read from there, not scored again, so a gate begun on another machine is finished here",
    )  # fmt: skip
    run.add_argument(
        "--both-at-once", action="store_true",
        help="with --by-group: the two sides in two processes at once, the before side a group ahead",
    )  # fmt: skip
    run.add_argument(
        "--parts", type=int, default=1,
        help="with --by-group: score each group not already whole in N parts, one process and file each "
        "(`fidelity --part`), so that a long group is kept a part at a time",
    )  # fmt: skip
    cmp = commands.add_parser("compare", help="compare two sides' fidelity runs")
    cmp.add_argument("files", nargs="*", help="BEFORE AFTER: one run per side")
    cmp.add_argument("--before", dest="before_runs", nargs="+", default=[],
                     help="the before side's runs: files, logs or SUMMARY.json#NAME")  # fmt: skip
    cmp.add_argument("--after", dest="after_runs", nargs="+", default=[], help="the after side's runs")
    cmp.add_argument("--out", type=Path, default=None, help="write gate.md and gate.json here")
    rec = commands.add_parser("record", help="keep finished runs in a report's summary.json")
    rec.add_argument("runs", type=Path, nargs="+", help="fidelity runs' --out files, kept under their names")
    rec.add_argument("--summary", type=Path, required=True, help="the report's summary.json")
    for sub in (run, cmp):
        sub.add_argument(
            "--before-variant", default=None, help="the variant of the before side (default: its only one)"
        )
        sub.add_argument(
            "--after-variant", default=None, help="the variant of the after side (default: its only one)"
        )
    args, passthrough = parser.parse_known_args(argv)
    if args.command == "record":
        for path in args.runs:
            print(f"{path} -> {args.summary}#{record(path, args.summary)}")
        return 0
    if args.command == "run":
        args.out.mkdir(parents=True, exist_ok=True)
        args.cache_dir = args.cache_dir or args.out / "cache"
        args.kept_runs = kept_runs(args.kept)
        if args.by_group:
            before, after = run_by_group(args, passthrough)
        else:
            before = [run_side(args.before, "before", args, passthrough)]
            after = [run_side(args.after, "after", args, passthrough)]
    else:
        if passthrough:
            parser.error(f"unknown arguments: {' '.join(passthrough)}")
        if len(args.files) not in (0, 2) or (args.files and (args.before_runs or args.after_runs)):
            parser.error("give BEFORE AFTER, or --before RUNS --after RUNS")
        before, after = args.before_runs, args.after_runs
        if args.files:
            before, after = args.files[:1], args.files[1:]
        if not before or not after:
            parser.error("each side needs at least one run")
    verdict = compare(side_pairs(before), side_pairs(after), before_variant=args.before_variant,
                      after_variant=args.after_variant)  # fmt: skip
    text = markdown(verdict)
    print(text)
    if args.out:
        args.out.mkdir(parents=True, exist_ok=True)
        (args.out / "gate.md").write_text(text, encoding="utf-8")
        (args.out / "gate.json").write_text(
            json.dumps(verdict, indent=1, ensure_ascii=False), encoding="utf-8"
        )
    return 0 if all(verdict["rules"].values()) else 1


if __name__ == "__main__":
    sys.exit(main())
