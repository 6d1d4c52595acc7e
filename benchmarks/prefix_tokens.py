#!/usr/bin/env python3
"""Prompt tokens a prefix-caching server has to compute for the twelve metrics, per sample.

No model runs. The engine evaluates generated samples (`benchmarks.datagen`) one at a time with a rule-based
judge that records every request it is sent (statements are the sentences of the text they are asked for,
verdicts lean "yes"), so the requests are exactly those a real run sends for these answers. Each request is
rendered with a judge's chat template and tokenizer, and then walked in the engine's order, sample by sample,
through a model of vLLM's automatic prefix caching: the prompt is cut into full blocks of B tokens, a block
is identified by the hash of the whole token prefix it ends, and a request computes every token after the
longest run of leading blocks already cached (at least its last token); then all its full blocks are
cached. The cache never evicts (the optimistic case; a server with a small cache does worse).

    python -m benchmarks prefix-tokens                       # 20 English samples, K=3, SmolLM2's tokenizer
    python -m benchmarks prefix-tokens --samples 40 --k 5 --languages en zh --tokenizer DIR
    python -m benchmarks prefix-tokens --layout task_first sample_first      # both layouts, same samples

Prints, per block size, the prompt tokens per sample (without a cache, and computed with one), and the
share of each prompt family. Beside them, two bounds: the floor, the sample's own texts (question, contexts,
answer, reference) tokenized once, which any judge that reads the sample must compute; and an ideal cache
that reuses prefixes to the token (B=1), so that B minus ideal is what the block granularity costs (a request
recomputes the partial block its shared prefix ends in) and ideal minus floor is what the prompts add: task
instructions once per sample and family, each request's own item, and the chat template around them.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import defaultdict
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import ascend_eval
from ascend_eval.metrics import metric_names
from ascend_eval.models.base import ClassifyRequest, GenerateRequest
from ascend_eval.models.judge.chat import ChatRenderer
from ascend_eval.models.judge.replay import ReplayJudge
from ascend_eval.prompts.layout import read_input
from ascend_eval.text import split_sentences
from benchmarks.datagen import generate
from benchmarks.request_counts import LengthEmbedder

BLOCK_SIZES = (16, 32, 128)
IDEAL_BLOCK = 1
"""A cache that reuses prefixes to the token: what no block granularity is lost to."""
RAGAS_PER_SAMPLE = {16: 7140, 128: 8919}
"""RAGAS 0.4.3's computed prompt tokens per sample for the same workload (SmolLM2's tokenizer, K=3, twelve
metrics), as measured for issue 17; not re-measured by this script."""


def default_tokenizer_dir() -> Path:
    root = Path.home() / ".cache" / "ascend-eval" / "checkpoints"
    found = sorted(p for p in root.glob("SmolLM2-*") if (p / "tokenizer.json").is_file())
    if not found:
        raise SystemExit(f"no SmolLM2 checkpoint under {root}; pass --tokenizer DIR")
    return found[0]


class RecordingRules:
    """A rule-based judge for one sample at a time; it keeps every request in the order it was sent."""

    def __init__(self) -> None:
        self.sample: dict[str, Any] = {}
        self.sent: list[GenerateRequest | ClassifyRequest] = []

    def _which_text(self, request: GenerateRequest) -> str:
        data = read_input(request.messages[-1].content)
        return str(data.get("answer", data.get("text", "")))

    def generate(self, request: GenerateRequest) -> str:
        self.sent.append(request)
        name = request.tag.split("@")[0]
        if name == "statements":
            statements = split_sentences(self._which_text(request))
            return json.dumps({"statements": statements}, ensure_ascii=False)
        if name == "response_question":
            return json.dumps({"question": self.sample["question"], "noncommittal": 0}, ensure_ascii=False)
        if name == "entities":
            return json.dumps({"entities": ["Alpha", "Beta", "1900"]})
        raise LookupError(f"no rule for prompt {request.tag}")

    def classify(self, request: ClassifyRequest) -> list[float]:
        self.sent.append(request)
        return [0.2] * (len(request.labels) - 1) + [0.8]


def record(
    data: dict[str, list], metrics: Sequence[str], layout: str = "auto"
) -> list[list[GenerateRequest | ClassifyRequest]]:
    """The requests each sample's evaluation sends (`layout`: evaluate's `prompt_layout`), in the order the
    judge received them."""
    rules = RecordingRules()
    per_sample = []
    for i in range(len(data["question"])):
        rules.sample = {key: values[i] for key, values in data.items()}
        rules.sent = []
        judge = ReplayJudge(rules.generate, rules.classify, model_id="rules")
        row = {key: [values[i]] for key, values in data.items()}
        ascend_eval.evaluate(row, list(metrics), judge=judge, embedder=LengthEmbedder(), cache_dir=False,
                             progress=False, prompt_layout=layout)  # fmt: skip
        per_sample.append(list(rules.sent))
    return per_sample


class PrefixCache:
    """vLLM-style automatic prefix caching over full blocks of `block` tokens, never evicting."""

    def __init__(self, block: int) -> None:
        self.block = block
        self.cached: set[int] = set()

    def compute(self, ids: Sequence[int]) -> int:
        """The tokens of `ids` that must be computed; caches its full blocks."""
        hashes, h = [], 0
        for end in range(self.block, len(ids) + 1, self.block):
            h = hash((h, tuple(ids[end - self.block : end])))
            hashes.append(h)
        hit = 0
        for h in hashes:
            if h not in self.cached:
                break
            hit += 1
        self.cached.update(hashes)
        return max(len(ids) - hit * self.block, 1)


def rendered_text(renderer: ChatRenderer, request: GenerateRequest | ClassifyRequest) -> str:
    text = renderer.render(request.messages)
    if isinstance(request, ClassifyRequest):
        text += request.answer_prefix
    return text


def tokens(renderer: ChatRenderer, request: GenerateRequest | ClassifyRequest) -> list[int]:
    return renderer.tokenizer(
        rendered_text(renderer, request), add_special_tokens=renderer.add_special_tokens
    )["input_ids"]


PARTS_OF_A_PROMPT = ("preamble", "sample block", "task", "input")
"""Where a prompt's computed tokens lie: before the sample block (the system turn and the preamble), the
block, the task's instruction and format, and the input line with the chat template's tail. A task-first
prompt has no block: its input carries the sample's texts."""


def part_starts(text: str) -> tuple[int, int, int]:
    """Where the sample block, the task and the input line start in a rendered prompt (a task-first
    prompt's block and task start at 0).

    >>> part_starts("sys\\n### Sample\\nQuestion: q\\n\\n### Task\\nSay.\\nInput: {}")
    (4, 28, 42)
    >>> part_starts("Say.\\nInput: {}")
    (0, 0, 5)
    """
    item = max(text.rfind(marker) for marker in ("Input: {", "输入: {"))
    for sample, task in (("### Sample\n", "\n### Task\n"), ("### 样本\n", "\n### 任务\n")):
        block = text.find(sample)
        if block >= 0:
            return block, text.rfind(task) + 1, item
    return 0, 0, item


def where_computed(
    renderer: ChatRenderer, request: GenerateRequest | ClassifyRequest, computed: int
) -> dict[str, int]:
    """The request's last `computed` tokens counted by the part of the prompt (`PARTS_OF_A_PROMPT`) they
    start in."""
    text = rendered_text(renderer, request)
    encoded = renderer.tokenizer(
        text, add_special_tokens=renderer.add_special_tokens, return_offsets_mapping=True
    )
    starts = part_starts(text)
    out = dict.fromkeys(PARTS_OF_A_PROMPT, 0)
    for begin, _ in encoded["offset_mapping"][len(encoded["input_ids"]) - computed :]:
        out[PARTS_OF_A_PROMPT[sum(begin >= s for s in starts)]] += 1
    return out


def floor_tokens(data: dict[str, list], tokenizer: Any) -> float:
    """The sample's own texts tokenized once, per sample: what a judge that reads the whole sample computes
    at the least, whatever its prompts."""

    def count(text: str) -> int:
        return len(tokenizer(text, add_special_tokens=False)["input_ids"])

    total = 0
    for i, question in enumerate(data["question"]):
        texts = [question, *data["contexts"][i], data["answer"][i], data["ground_truth"][i]]
        total += sum(count(t) for t in texts if t)
    return total / len(data["question"])


def measure(
    per_sample: list[list[Any]], renderer: ChatRenderer, floor: float | None = None
) -> dict[str, Any]:
    rendered = [[(r.tag.split("@")[0], tokens(renderer, r)) for r in sent] for sent in per_sample]
    by_family: dict[str, dict[str, float]] = defaultdict(
        lambda: dict.fromkeys(("requests", *PARTS_OF_A_PROMPT), 0)
    )
    cache = PrefixCache(IDEAL_BLOCK)
    for i, sent in enumerate(per_sample):
        for request, (family, ids) in zip(sent, rendered[i], strict=True):
            computed = cache.compute(ids)
            if i > 0 or len(per_sample) == 1:  # the steady state, as below
                by_family[family]["requests"] += 1
                for part, k in where_computed(renderer, request, computed).items():
                    by_family[family][part] += k
    n = len(rendered)
    steady = max(n - 1, 1)
    out: dict[str, Any] = {"samples": n, "requests": sum(map(len, rendered)) / n, "floor": floor}
    out["ideal_by_family"] = {
        family: {k: v / steady for k, v in row.items()}
        for family, row in sorted(by_family.items(), key=lambda kv: -sum(kv[1].values()))
    }
    out["ideal_by_part"] = {
        part: sum(row[part] for row in out["ideal_by_family"].values()) for part in PARTS_OF_A_PROMPT
    }
    out["prompt_tokens"] = sum(len(ids) for sent in rendered for _, ids in sent) / n
    out["longest_prompt"] = max(len(ids) for sent in rendered for _, ids in sent)
    for block in (*BLOCK_SIZES, IDEAL_BLOCK):
        cache = PrefixCache(block)
        by_family: dict[str, int] = defaultdict(int)
        first = 0
        for i, sent in enumerate(rendered):
            for family, ids in sent:
                computed = cache.compute(ids)
                by_family[family] += computed
                if i == 0:
                    first += computed
        total = sum(by_family.values())
        # The first sample also computes what every later one reuses (instructions, examples): report the
        # steady state, the mean over the other samples, as the per-sample figure.
        steady = (total - first) / (n - 1) if n > 1 else total
        out[f"B{block}"] = {
            "computed_per_sample": steady,
            "first_sample": first,
            "share": {k: round(v / total, 3) for k, v in sorted(by_family.items(), key=lambda kv: -kv[1])},
        }
    return out


def table(result: dict[str, Any], label: str) -> str:
    lines = [
        (
            f"{label}: {result['samples']} samples, {result['requests']:.1f} requests and "
            f"{result['prompt_tokens']:.0f} prompt tokens per sample (longest {result['longest_prompt']})"
        ),
        "",
        "| block size | computed per sample | first sample | RAGAS per sample | ratio |",
        "| ---: | ---: | ---: | ---: | ---: |",
    ]
    for block in (*BLOCK_SIZES, IDEAL_BLOCK):
        row = result[f"B{block}"]
        ragas = RAGAS_PER_SAMPLE.get(block)
        ratio = f"{row['computed_per_sample'] / ragas:.2f}x" if ragas else "-"
        name = f"{block} (ideal)" if block == IDEAL_BLOCK else block
        cells = [name, f"{row['computed_per_sample']:.0f}", row["first_sample"], ragas or "-", ratio]
        lines.append("| " + " | ".join(str(c) for c in cells) + " |")
    if result.get("floor") is not None:
        lines.append(f"| floor: the sample's texts once | {result['floor']:.0f} | | | |")
    if result.get("ideal_by_family"):
        lines += [
            "",
            "The ideal cache's computed tokens per sample, by prompt family and part of the prompt:",
            "",
            "| family | requests | " + " | ".join(PARTS_OF_A_PROMPT) + " | all |",
            "| --- | ---: | " + " | ".join("---:" for _ in PARTS_OF_A_PROMPT) + " | ---: |",
        ]
        rows = [*result["ideal_by_family"].items(), ("all", {"requests": result["requests"],
                                                             **result["ideal_by_part"]})]  # fmt: skip
        for family, row in rows:
            cells = [f"{row[part]:.0f}" for part in PARTS_OF_A_PROMPT]
            total = sum(row[part] for part in PARTS_OF_A_PROMPT)
            lines.append(f"| {family} | {row['requests']:.1f} | " + " | ".join(cells) + f" | {total:.0f} |")
    shares = ", ".join(f"{k} {v:.0%}" for k, v in result["B16"]["share"].items())
    lines += ["", f"Computed tokens by prompt family (B=16, all samples): {shares}"]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--samples", type=int, default=20)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--k", default="3", choices=["3", "5", "mixed"])
    parser.add_argument("--languages", nargs="+", default=["en"], choices=["en", "zh"])
    parser.add_argument("--tokenizer", type=Path, default=None, help="a checkpoint dir with a chat template")
    parser.add_argument("--label", default="ours")
    parser.add_argument(
        "--layout", nargs="+", default=["auto"], choices=["auto", "sample_first", "task_first"],
        help="the prompt layouts to measure, each on the same samples",
    )  # fmt: skip
    parser.add_argument("--json", type=Path, default=None, help="also write the figures here")
    args = parser.parse_args(argv)

    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(str(args.tokenizer or default_tokenizer_dir()))
    data = generate(args.samples, seed=args.seed, languages=tuple(args.languages), k=args.k)
    results = {}
    floor = floor_tokens(data, tokenizer)
    for layout in args.layout:
        results[layout] = measure(record(data, metric_names(), layout), ChatRenderer(tokenizer), floor)
        print(table(results[layout], f"{args.label} ({layout})"), end="\n\n")
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        figures = results[args.layout[0]] if len(args.layout) == 1 else results
        args.json.write_text(json.dumps(figures, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
