#!/usr/bin/env python3
"""Which metrics a judge tells apart on the bundled example's good and flawed rows.

`bilingual-example` holds 8 questions, each as a good row and then a flawed row (`ascend_eval/examples.py`):
in the 1st and 3rd pair of each language the flawed answer contradicts the contexts and the reference, in
the 2nd and 4th the answer is kept and the context holding the fact is swapped for an off-topic one. This
reads the scores of one evaluation of it and counts, per metric and kind of flaw, the pairs where the good
row scored better, the ties and the pairs where it scored worse (noise_sensitivity: lower is better).

    make evaluate                                    # writes out/example
    python -m benchmarks example-pairs out/example   # a Markdown table
"""

from __future__ import annotations

import argparse
import json
import math
from pathlib import Path
from typing import Any

KINDS = ("answer", "retrieval")
"""The flaw of pair i is KINDS[i % 2]: the pairs alternate, starting with a flawed answer."""

SHOULD_SEE = {
    "answer": {
        "answer_correctness", "answer_similarity", "context_utilization", "faithfulness",
        "noise_sensitivity", "nv_accuracy", "nv_response_groundedness",
    },
    "retrieval": {
        "context_entity_recall", "context_precision", "context_recall", "context_utilization", "faithfulness",
        "nv_context_relevance", "nv_response_groundedness",
    },
}  # fmt: skip
"""The metrics whose inputs a flaw of each kind changes in a way they are built to punish."""

_TIE = 1e-9


def lower_is_better(metric: str) -> bool:
    return metric.startswith("noise_sensitivity")


def pair_counts(samples: list[dict[str, Any]]) -> dict[str, dict[str, list[int]]]:
    """metric -> kind -> [good better, tie, good worse] over the pairs (a NaN on either side: not counted).

    `samples` are the rows of a results.json ("samples"): a score is a number under the metric's name.

    >>> scores = (0.9, 0.2, 0.5, 0.5, 0.1, 0.3, 0.7, 0.7)
    >>> rows = [{"id": str(i), "faithfulness": s} for i, s in enumerate(scores)]
    >>> pair_counts(rows)["faithfulness"]
    {'answer': [1, 0, 1], 'retrieval': [0, 2, 0]}
    """
    if len(samples) % 2:
        raise ValueError(f"{len(samples)} samples: the example comes in (good, flawed) pairs")
    counts: dict[str, dict[str, list[int]]] = {}
    for i in range(0, len(samples), 2):
        good, flawed = _scores(samples[i]), _scores(samples[i + 1])
        kind = KINDS[(i // 2) % 2]
        for metric in good:
            g, f = good[metric], flawed.get(metric)
            if g is None or f is None or math.isnan(g) or math.isnan(f):
                continue
            diff = (f - g) if lower_is_better(metric) else (g - f)
            slot = 0 if diff > _TIE else (1 if diff >= -_TIE else 2)
            counts.setdefault(metric, {k: [0, 0, 0] for k in KINDS})[kind][slot] += 1
    return counts


def _scores(sample: dict[str, Any]) -> dict[str, float | None]:
    return {
        k: v
        for k, v in sample.items()
        if (v is None or isinstance(v, float | int)) and not k.endswith(("_reason", "_details"))
    }


def table(counts: dict[str, dict[str, list[int]]]) -> str:
    """A Markdown table: per metric and kind of flaw, good better / tie / good worse; the kinds a metric is
    built to see are marked with "*"."""
    lines = [
        "| metric | flawed answer: better / tie / worse | flawed retrieval: better / tie / worse |",
        "| --- | --- | --- |",
    ]
    for metric in sorted(counts):
        base = metric.split("(")[0]
        cells = [
            "{} / {} / {}{}".format(*counts[metric][kind], " *" if base in SHOULD_SEE[kind] else "")
            for kind in KINDS
        ]
        lines.append(f"| {metric} | {cells[0]} | {cells[1]} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("out", type=Path, help="the --out folder of an evaluation of bilingual-example")
    args = parser.parse_args(argv)
    results = json.loads((args.out / "results.json").read_text(encoding="utf-8"))
    print(table(pair_counts(results["samples"])))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
