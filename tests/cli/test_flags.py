"""`ascend-eval evaluate`'s flags and `EvaluationConfig`'s settings cover each other: a setting added to
the config without a flag, or a flag left behind by a removed setting, fails here."""

from __future__ import annotations

from ascend_eval.cli.config import CLI_DEFAULTS, model_fields
from ascend_eval.cli.main import build_parser
from ascend_eval.config import CALLBACKS, names

SETTING_FLAGS = {"progress": "quiet", "executor": "ray", "ray_address": "ray"}
"""Settings whose flag is named otherwise: `--quiet` turns the progress bar off, `--ray [ADDRESS]` picks
the Ray executor and its cluster."""

FLAG_ONLY = {
    "data": "the dataset (evaluate()'s first argument)",
    "config": "the --config file itself",
    "metrics": "evaluate()'s metrics",
    "metrics_file": "evaluate()'s metrics, from a file",
    "api_key_env": "a ModelSpec field of each server model",
    "no_cache": "cache_dir=False",
    "trace_exporter": "where --trace's spans go (the command line's own tracer provider)",
}
"""Flags that set no setting of their own, and what they set."""


def flag_dests() -> set[str]:
    """The destinations of `evaluate`'s flags: every one is in the namespace a parse leaves (a flag not given
    holds its default), less the main parser's own (`-v`, the subcommand and its function)."""
    given = vars(build_parser().parse_args(["evaluate", "data.jsonl"]))
    return set(given) - {"verbose", "command", "func"}


def test_every_setting_has_a_flag():
    dests = flag_dests()
    missing = [
        name
        for name in names()
        if SETTING_FLAGS.get(name, name) not in dests and not (name in CALLBACKS and name != "progress")
    ]
    assert missing == []


def test_every_flag_sets_something():
    model_flags = {
        f"{key}_{part}"
        for key in ("judge", "embedder", "cross_encoder")
        for part in ("model", "engine", "set")
    }
    known = {*names(), *SETTING_FLAGS.values(), *CLI_DEFAULTS, *FLAG_ONLY, *model_flags}
    assert sorted(flag_dests() - known) == []
    assert "served_model_name" in model_fields()  # what --judge-model sets
