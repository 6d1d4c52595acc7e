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
"""

from __future__ import annotations

import argparse
import json
import random
import subprocess
import sys
from collections.abc import Iterable, Sequence
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


def _scores(pair: dict[str, Any], variant: str | None) -> dict[str, list[float]]:
    variants = pair.get("variants") or {}
    if variant is None:
        if len(variants) != 1:
            raise SystemExit(f"pair {pair['id']} has variants {sorted(variants)}: name one with --*-variant")
        variant = next(iter(variants))
    return variants.get(variant, {})


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
        new_scores, old_scores = _scores(pair, after_variant), _scores(old, before_variant)
        for metric in METRICS[pair["property"]]:
            if metric in new_scores and metric in old_scores:
                was, now = right(*old_scores[metric], metric), right(*new_scores[metric], metric)
                rows.append({"metric": metric, "language": pair["language"], "length": length(pair),
                             "before": was, "after": now})  # fmt: skip
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
        for variant, by_metric in (pair.get("outputs_by_variant") or {}).items():
            for metric, members in by_metric.items():
                for member, out in zip(("better", "worse"), members, strict=True):
                    why = echoed(out.get("texts") or [])
                    if why is None and (out.get("reason") or "").startswith("echo:"):
                        why = out["reason"]
                    if why is not None:
                        found.append(f"{pair['id']} / {variant} / {metric} / {member}: {why}")
    return found


def compare(
    before: list[dict[str, Any]], after: list[dict[str, Any]], *, before_variant: str | None = None,
    after_variant: str | None = None,
) -> dict[str, Any]:  # fmt: skip
    """The gate's verdict on two fidelity runs' pairs: the tables, the echoes, and the rules each passes."""
    rows = verdicts(before, after, before_variant, after_variant)
    total = table(rows, ())[0] if rows else {"pairs": 0, "before": 0, "after": 0, "change": 0}
    per_metric = table(rows, ("metric",))
    found = echoes(after)
    losers = [m for m in per_metric if -m["change"] > allowed_loss(m["pairs"])]
    return {
        "total": total,
        "per_metric": per_metric,
        "per_group": table(rows, ("metric", "language", "length")),
        "echoes": found,
        "unmatched": len(after) - len({_key(p) for p in after} & {_key(p) for p in before}),
        "rules": {
            "total right does not fall": total["after"] >= total["before"],
            "no metric loses more than max(1, 5%) of its pairs": not losers,
            "no output echoes the layout's wording": not found,
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
    return "\n".join(out) + "\n"


def _pairs(path: Path) -> list[dict[str, Any]]:
    """A fidelity run's pairs: its `--out` file, or its log for a run stopped before it wrote one (each
    group it finished, under the variant "ours", without what the judge wrote)."""
    if path.suffix in (".log", ".txt"):
        return pairs_from_log(path.read_text(encoding="utf-8").splitlines())
    return json.loads(path.read_text(encoding="utf-8"))["pairs"]


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


def run_side(commit: str, name: str, args: argparse.Namespace, passthrough: Sequence[str]) -> Path:
    """Score the pairs with the library at `commit`, unless `OUT/NAME.json` is there already."""
    result = args.out / f"{name}.json"
    if result.exists():
        print(f"{name}: {result} is there, not scored again", flush=True)
        return result
    lib = side_tree(commit, args.out, name)
    boot = ("import runpy, sys; sys.path[:0] = [sys.argv.pop(1)]; "
            "runpy.run_module('benchmarks.fidelity', run_name='__main__', alter_sys=True)")  # fmt: skip
    command = [sys.executable, "-c", boot, str(lib), "--judge", args.judge,
               "--cache-dir", str(args.cache_dir), "--out", str(result), *passthrough]  # fmt: skip
    print(f"{name} ({commit}): {' '.join(command[3:])}", flush=True)
    with (args.out / f"{name}.log").open("w") as log:
        subprocess.run(command, cwd=REPO, stdout=log, stderr=subprocess.STDOUT, check=True)
    return result


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
    cmp = commands.add_parser("compare", help="compare two fidelity runs' files")
    cmp.add_argument("before", type=Path)
    cmp.add_argument("after", type=Path)
    cmp.add_argument("--out", type=Path, default=None, help="write gate.md and gate.json here")
    for sub in (run, cmp):
        sub.add_argument(
            "--before-variant", default=None, help="the variant of the before side (default: its only one)"
        )
        sub.add_argument(
            "--after-variant", default=None, help="the variant of the after side (default: its only one)"
        )
    args, passthrough = parser.parse_known_args(argv)
    if args.command == "run":
        args.out.mkdir(parents=True, exist_ok=True)
        args.cache_dir = args.cache_dir or args.out / "cache"
        before = run_side(args.before, "before", args, passthrough)
        after = run_side(args.after, "after", args, passthrough)
    else:
        before, after = args.before, args.after
    verdict = compare(_pairs(before), _pairs(after), before_variant=args.before_variant,
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
