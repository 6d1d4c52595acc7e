"""The benchmarks as one program: `python -m benchmarks COMMAND [ARGS...]`.

Each command is one module of this package; everything after the command's name goes to that module's
`main(argv)`, so `python -m benchmarks COMMAND --help` shows the command's own options. A module is
imported only when its command runs (some need RAGAS, vLLM or Ray; `--help` here needs none of them).

    python -m benchmarks --help                       # the commands, one line each
    python -m benchmarks harness --samples 4          # one command, its own flags after its name
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class Command:
    """One subcommand: the module under `benchmarks` whose `main(argv)` runs it, and its line of help."""

    module: str
    summary: str


COMMANDS: dict[str, Command] = {
    "harness": Command("harness", "ascend-eval against RAGAS 0.4.3 on the same judge, plus our ablations"),
    "report": Command("report", "print a saved harness run's tables again (bench.json)"),
    "fidelity": Command("fidelity", "judge agreement on labelled pairs: is the better member scored higher?"),
    "fidelity-gate": Command("fidelity_gate", "does a prompt or layout change keep the judge as right?"),
    "fidelity-table": Command("fidelity_table", "pairwise accuracy per metric and language, per variant"),
    "criteria-fidelity": Command("criteria_fidelity", "judge agreement on the user's criteria and rubrics"),
    "testset-quality": Command("testset_quality", "test sets by ours and by RAGAS's TestsetGenerator"),
    "prefix-tokens": Command("prefix_tokens", "prompt tokens a prefix-caching server computes per sample"),
    "request-counts": Command("request_counts", "requests per sample for each metric, against RAGAS's"),
    "memory": Command("memory", "peak memory of one evaluate() process against the number of samples"),
    "engine-batching": Command("engine_batching", "batched engine vs one request at a time, one judge"),
    "torch-decode": Command("torch_decode", "what each part of TorchJudge's decode loop buys"),
    "ray-executor": Command("ray_executor", "wall time of the Ray executor against the local one"),
    "datagen": Command("datagen", "generate a bilingual benchmark dataset of realistic length"),
    "example-pairs": Command("example_pairs", "which metrics a judge tells apart on the example's pairs"),
    "rule-server": Command("rule_server", "a fixed-rule judge behind an OpenAI-compatible HTTP endpoint"),
}


def parser() -> argparse.ArgumentParser:
    """The program's own parser: the command's name, and the rest left for the command."""
    listing = "\n".join(f"  {name:<18} {command.summary}" for name, command in COMMANDS.items())
    top = argparse.ArgumentParser(
        prog="python -m benchmarks",
        description=__doc__,
        epilog="commands:\n" + listing,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    top.add_argument("command", choices=list(COMMANDS), metavar="COMMAND", help="one of the commands below")
    top.add_argument("args", nargs=argparse.REMAINDER, help="the command's own arguments")
    return top


def main(argv: Sequence[str] | None = None) -> int:
    args = parser().parse_args(argv)
    module = importlib.import_module(f"benchmarks.{COMMANDS[args.command].module}")
    sys.argv[0] = f"python -m benchmarks {args.command}"  # what its usage line names
    return module.main(list(args.args)) or 0


if __name__ == "__main__":
    sys.exit(main())
