"""What the command line says about itself: `--version`, and the examples under `--help`.

Building the parser stays cheap: versions are read from package metadata (nothing is imported) only when
`--version` is asked for, and the metric names are looked up only when a help text is printed.
"""

from __future__ import annotations

import argparse
import platform
from collections.abc import Sequence
from importlib import metadata
from typing import Any

import ascend_eval

RUNTIMES = ("torch", "torch-npu", "transformers", "vllm", "vllm-ascend")
"""The distributions `--version` reports (the ones a bug report needs), in this order."""

METRIC_NAMES = "{metric_names}"
"""Written in a help text, replaced by the metric names when the help is printed."""

MAIN_EPILOG = """\
examples:
  # the main job: every metric on the built-in bilingual example, on the shipped default models
  ascend-eval evaluate bilingual-example --out out/example

  # your own file, judged by an OpenAI-compatible server (vLLM, NIM, ...)
  ascend-eval evaluate data.jsonl --metrics faithfulness,answer_relevancy \\
      --judge http://127.0.0.1:8000/v1 --judge-model Qwen2.5-7B-Instruct --api-key-env JUDGE_KEY \\
      --out out/mine

  # every setting from a file (YAML or JSON); flags given on the command line override it
  ascend-eval evaluate --config examples/eval.yaml
  # each run writes its settings to OUT/config.yaml: repeat it, or change one thing
  ascend-eval evaluate --config out/mine/config.yaml --judge-set temperature=0.2 --out out/mine-t02

  # a NeMo Evaluator metric job spec, run locally
  ascend-eval job run spec.json

  # a saved run's scores, and two runs side by side
  ascend-eval report out/example
  ascend-eval compare out/example out/mine

`ascend-eval COMMAND --help` tells more about each command.
"""

EVALUATE_EPILOG = """\
examples:
  ascend-eval evaluate bilingual-example --out out/example
  ascend-eval evaluate data.csv --column-map user_input=query response=answer --metrics faithfulness \\
      --judge http://127.0.0.1:8000/v1 --judge-set parallelism=32 request_timeout=120 --out out/csv
  ascend-eval evaluate data.jsonl --judge /models/Qwen2.5-7B-Instruct --judge-backend vllm \\
      --judge-set gpu_memory_utilization=0.6 max_model_len=8192 --out out/vllm
  ascend-eval evaluate --config examples/eval.yaml --out out/again

configuration file (--config FILE, .yaml/.yml or .json): one key per evaluate() option (dataset, metrics,
judge, embedder, cross_encoder, judge_backend, ..., chunk_size, dedupe) plus out, max_backend_errors,
progress_every and quiet. A model is a string (name, path or URL) or a mapping of ModelSpec fields
(model, backend, max_tokens, parallelism, ...). Flags given on the command line override the file:
--judge replaces the file's judge, --judge-model / --judge-engine / --judge-set change single fields of it.
Every run writes its effective configuration to OUT/config.yaml (API keys only by the name of their
environment variable), which works as --config to repeat the run.
"""


def version_text() -> str:
    """The `--version` text: ours, python's, and the model runtimes' found installed (read from their
    package metadata, without importing them).

    >>> version_text().splitlines()[0] == f"ascend-eval {ascend_eval.__version__}"
    True
    """
    lines = [f"ascend-eval {ascend_eval.__version__}", f"python {platform.python_version()}"]
    missing = []
    for dist in RUNTIMES:
        try:
            lines.append(f"{dist} {metadata.version(dist)}")
        except metadata.PackageNotFoundError:
            missing.append(dist)
    if missing:
        lines.append(f"not installed: {', '.join(missing)}")
    return "\n".join(lines)


class VersionAction(argparse.Action):
    """`--version`: print `version_text()` and exit 0 (argparse's own "version" action wants the text
    when the parser is built)."""

    def __init__(self, option_strings: Sequence[str], dest: str = argparse.SUPPRESS, **kwargs: Any) -> None:
        super().__init__(option_strings, dest=dest, nargs=0, default=argparse.SUPPRESS, **kwargs)

    def __call__(self, parser: argparse.ArgumentParser, *args: Any, **kwargs: Any) -> None:
        print(version_text())
        parser.exit()


class HelpFormatter(argparse.RawDescriptionHelpFormatter):
    """Epilogs keep their line breaks (the examples), and `METRIC_NAMES` in a help text becomes the metric
    names, imported only now that a help text is printed."""

    def _get_help_string(self, action: argparse.Action) -> str | None:
        text = super()._get_help_string(action)
        if text and METRIC_NAMES in text:
            from ascend_eval.metrics import metric_names

            text = text.replace(METRIC_NAMES, ", ".join(metric_names()))
        return text
