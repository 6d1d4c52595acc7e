#!/usr/bin/env python3
"""Pairwise accuracy per metric and language, side by side for every variant of one or more fidelity runs.

Each file is what `python -m benchmarks fidelity --out FILE` wrote: its pairs carry every variant's scores
("off/threshold", "anchored/expected", "ragas", ...). A file ending in `.log` or `.txt` is that command's
output instead, for a run stopped before it wrote FILE: each group it finished is there, under the
variant "ragas" or "ours" (the log does not say which of our variants a group was). A pair scored in
several files is matched by its id, property and language, and must be the same pair (same texts, where
a file kept them) in each. Ours and RAGAS can come from two processes that scored the same pairs on the
same judge server, one beside the other.

    python -m benchmarks fidelity-table ours.json ragas.json --variants anchored/expected ragas
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from benchmarks.fidelity import METRICS, right


def merged_pairs(paths: Sequence[Path]) -> list[dict[str, Any]]:
    """The pairs of every file, one entry per pair with the variants of all files.

    >>> a = {"id": "x", "property": "faithfulness", "language": "en", "better": {"response": "r"},
    ...      "variants": {"v1": {"faithfulness": [1.0, 0.0]}}}
    >>> b = {**a, "variants": {"ragas": {"faithfulness": [0.5, 0.5]}}}
    >>> [sorted(p["variants"]) for p in _merge([[a], [b]])]
    [['ragas', 'v1']]
    """
    return _merge([_read(Path(p)) for p in paths])


def _read(path: Path) -> list[dict[str, Any]]:
    if path.suffix not in (".log", ".txt"):
        return json.loads(path.read_text(encoding="utf-8"))["pairs"]
    return pairs_from_log(path.read_text(encoding="utf-8").splitlines())


def pairs_from_log(lines: Sequence[str]) -> list[dict[str, Any]]:
    """The groups a fidelity run logged: a "<tool> <property> / <language>: ..." line, then its scores.

    >>> log = ["ragas faithfulness / zh: 1 pairs, faithfulness in 9 s",
    ...        'scores {"tool": "ragas", "scores": {"zh-1": {"faithfulness": [1.0, 0.5]}}}']
    >>> [(p["id"], p["property"], p["language"], p["variants"]) for p in pairs_from_log(log)]
    [('zh-1', 'faithfulness', 'zh', {'ragas': {'faithfulness': [1.0, 0.5]}})]
    """
    pairs, group = [], None
    for line in lines:
        head = line.split(":", 1)[0].split()
        if len(head) in (3, 4) and head[-2] == "/" and head[-3] in METRICS:
            group = (head[-3], head[-1])
        elif line.startswith("scores {") and group is not None:
            logged = json.loads(line[len("scores ") :])
            for pair_id, scores in logged["scores"].items():
                prop, language = group
                pairs.append({"id": pair_id, "property": prop, "language": language,
                              "variants": {logged["tool"]: scores}})  # fmt: skip
            group = None
    return pairs


def _merge(files: Sequence[Sequence[dict[str, Any]]]) -> list[dict[str, Any]]:
    merged: dict[tuple[str, str, str], dict[str, Any]] = {}
    for pairs in files:
        for pair in pairs:
            key = (pair["id"], pair["property"], pair["language"])
            seen = merged.setdefault(key, {**pair, "variants": {}})
            texts = [(p.get("better"), p.get("worse")) for p in (seen, pair)]
            if None not in texts[0] + texts[1] and texts[0] != texts[1]:
                raise SystemExit(f"pair {key} differs between the files: they scored different data")
            seen["variants"].update(pair.get("variants", {}))
    return list(merged.values())


def by_language(pairs: Sequence[dict[str, Any]], variants: Sequence[str]) -> list[dict[str, Any]]:
    """Per (metric, language): the pairs every variant scored, and how many each got right."""
    rows = []
    for prop, metrics in METRICS.items():
        for metric in metrics:
            for language in ("en", "zh", "all"):
                scored = [
                    p for p in pairs
                    if p["property"] == prop and language in ("all", p["language"])
                    and all(metric in p["variants"].get(v, {}) for v in variants)
                ]  # fmt: skip
                if scored:
                    got = {v: sum(right(*p["variants"][v][metric], metric) for p in scored) for v in variants}
                    rows.append({"metric": metric, "language": language, "pairs": len(scored), **got})
    return rows


def markdown(rows: Sequence[dict[str, Any]], variants: Sequence[str]) -> str:
    lines = [
        "| metric | language | pairs | " + " | ".join(variants) + " |",
        "| --- | --- | ---: | " + " | ".join("---:" for _ in variants) + " |",
    ]
    for r in rows:
        best = max(r[v] for v in variants)
        cells = [f"**{r[v]}**" if r[v] == best and len(variants) > 1 else str(r[v]) for v in variants]
        lines.append(f"| {r['metric']} | {r['language']} | {r['pairs']} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("files", type=Path, nargs="+", help="outputs of benchmarks.fidelity --out")
    parser.add_argument("--variants", nargs="+", default=None, help="columns, in order (default: all)")
    args = parser.parse_args(argv)
    pairs = merged_pairs(args.files)
    variants = args.variants or sorted({v for p in pairs for v in p["variants"]})
    print(markdown(by_language(pairs, variants), variants))
    return 0


if __name__ == "__main__":
    sys.exit(main())
