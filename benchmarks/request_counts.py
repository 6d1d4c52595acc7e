#!/usr/bin/env python3
"""Requests per sample for each metric, as the engine sees them, against RAGAS's count for the same metric.

No model runs: a rule-based judge answers every prompt (statements are the answer's sentences, questions
and entity lists are simple functions of the text, verdicts lean "yes"), so the counts are exact and
reproducible. Contexts are padded to K per sample with other samples' contexts as distractors.

The per-sample columns are counted with calibration off, since they are what grows with the data. The
default calibration (`prompts/calibration.py`) adds a fixed number of requests per run (six per yes/no
prompt and language, whatever the number of samples); the last column gives that number.

    python -m benchmarks request-counts            # K=3 on the bundled example
    python -m benchmarks request-counts --k 5
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np

import ascend_eval
from ascend_eval.data import load_dataset
from ascend_eval.examples import builtin_dataset
from ascend_eval.metrics import metric_names
from ascend_eval.models.judge.replay import ReplayJudge
from ascend_eval.prompts.layout import read_input
from ascend_eval.text import split_sentences


def ragas_requests(metric: str, k: int) -> int:
    """RAGAS 0.4.3's model requests per sample (LLM calls + embedding calls), first-try parses, an
    n-capable client (answer_relevancy: one call with n=3)."""
    return {
        "answer_correctness": 3 + 2, "answer_relevancy": 1 + 2, "answer_similarity": 2,
        "context_precision": k, "context_utilization": k, "context_recall": 1, "context_entity_recall": 2,
        "faithfulness": 2, "noise_sensitivity": 2 * k + 3, "nv_accuracy": 2, "nv_context_relevance": 2,
        "nv_response_groundedness": 2,
    }[metric]  # fmt: skip


def _input(request) -> dict:
    return read_input(request.messages[-1].content)


def generate_rule(request) -> str:
    name, data = request.tag.split("@")[0], _input(request)
    if name == "statements":
        return json.dumps({"statements": split_sentences(data["answer"])}, ensure_ascii=False)
    if name == "response_question":
        return json.dumps({"question": data["response"][:40] + "?", "noncommittal": 0}, ensure_ascii=False)
    if name == "entities":
        return json.dumps({"entities": data["text"].split()[:3]}, ensure_ascii=False)
    raise LookupError(f"no rule for prompt {request.tag}")


class LengthEmbedder:
    model_id = "length"

    def embed(self, texts, *, kind="document"):
        out = np.array([[len(t) + 1.0, 1.0] for t in texts], dtype=np.float32)
        return out / np.linalg.norm(out, axis=1, keepdims=True)


def with_k_contexts(dataset, k: int) -> dict:
    pool = [c for s in dataset for c in s.retrieved_contexts]
    rows = {"question": [], "contexts": [], "answer": [], "ground_truth": []}
    for i, s in enumerate(dataset):
        contexts = list(s.retrieved_contexts)[:k]
        j = i
        while len(contexts) < k:  # distractors from other samples
            j = (j + 7) % len(pool)
            if pool[j] not in contexts:
                contexts.append(pool[j])
        rows["question"].append(s.user_input)
        rows["contexts"].append(contexts)
        rows["answer"].append(s.response)
        rows["ground_truth"].append(s.reference)
    return rows


def count(data, metrics, calibration: str = "off") -> tuple[int, int]:
    judge = ReplayJudge(generate_rule, lambda r: [0.2] * (len(r.labels) - 1) + [0.8], model_id="rules")
    result = ascend_eval.evaluate(data, metrics, judge=judge, embedder=LengthEmbedder(), cache_dir=False,
                                  calibration=calibration, progress=False)  # fmt: skip
    return sum(r.requests for r in result.rounds), sum(r.unique for r in result.rounds)


def calibration_cost(data, metrics, unique_off: int) -> int:
    """Unique requests the default calibration adds to one run (the same for any number of samples)."""
    return count(data, metrics, calibration="auto")[1] - unique_off


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--k", type=int, default=3)
    parser.add_argument("--out", type=Path, default=Path("benchmarks/results"))
    args = parser.parse_args(argv)
    data = with_k_contexts(load_dataset(builtin_dataset("bilingual-example")), args.k)
    n = len(data["question"])
    rows = []
    for metric in metric_names():
        requested, unique = count(data, [metric])
        rows.append({"metric": metric, "ours_requested": requested / n, "ours_unique": unique / n,
                     "ragas": ragas_requests(metric, args.k),
                     "calibration_per_run": calibration_cost(data, [metric], unique)})  # fmt: skip
    requested, unique = count(data, metric_names())
    total = {"metric": "all twelve together", "ours_requested": requested / n, "ours_unique": unique / n,
             "ragas": sum(r["ragas"] for r in rows),
             "calibration_per_run": calibration_cost(data, metric_names(), unique)}  # fmt: skip
    lines = [
        f"Requests per sample at K={args.k} ({n} samples of the bundled example; ours: rule-based judge)",
        "",
        "| metric | ours requested | ours unique (after dedupe) | RAGAS | calibration (once per run) |",
        "| --- | ---: | ---: | ---: | ---: |",
    ]
    for r in [*rows, total]:
        lines.append(f"| {r['metric']} | {r['ours_requested']:.2f} | {r['ours_unique']:.2f} | {r['ragas']} "
                     f"| {r['calibration_per_run']} |")  # fmt: skip
    table = "\n".join(lines)
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "request_counts.json").write_text(json.dumps({"k": args.k, "rows": [*rows, total]}, indent=2))
    (args.out / "request_counts.md").write_text(table + "\n")
    print(table)
    return 0


if __name__ == "__main__":
    sys.exit(main())
