"""`ascend-eval evaluate`'s setting flags are made from `EvaluationConfig`'s fields (`ascend_eval.setting`,
`ascend_eval.cli.flags`): every setting has exactly one flag (its own, or the hand-written one it names),
and every flag sets a setting or one of the command line's own keys. A setting added to the config without
a flag, or a flag left behind by a removed setting, fails here."""

from __future__ import annotations

import re

import pytest

from ascend_eval.cli.config import CLI_DEFAULTS, model_fields
from ascend_eval.cli.main import build_parser, main
from ascend_eval.config import described
from ascend_eval.setting import CACHE, INTEGER, NUMBER, PAIRS

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

MODEL_FLAGS = {
    f"{key}_{part}" for key in ("judge", "embedder", "cross_encoder") for part in ("model", "engine", "set")
}
"""`--judge-model`, `--judge-engine`, `--judge-set`, ...: fields of a model's `ModelSpec`."""


def parse(*flags: str) -> dict:
    return vars(build_parser().parse_args(["evaluate", "data.jsonl", *flags]))


def dest(flag: str) -> str:
    return flag.lstrip("-").replace("-", "_")


def flag_dests() -> set[str]:
    """The destinations of `evaluate`'s flags: every one is in the namespace a parse leaves (a flag not given
    holds its default), less the main parser's own (`-v`, the subcommand and its function)."""
    return set(parse()) - {"verbose", "command", "func"}


def listed(flag: str, help_text: str) -> bool:
    """Whether the help lists `flag`: `--dedupe, --no-dedupe`, `-q, --quiet, --no-quiet`, `--ray ADDRESS`."""
    return re.search(rf"^  (-\w, )?{re.escape(flag)}[ ,\n]", help_text, re.MULTILINE) is not None


def a_value(setting) -> list[str]:
    """What to write after a setting's flag to set it to something other than its default."""
    if setting.kind.switch or setting.const is not None:
        return []
    if setting.choices is not None:
        return [setting.choices[-1]]
    text = {INTEGER: "3", NUMBER: "0.5", PAIRS: "user_input=query", CACHE: "cache"}
    return [text.get(setting.kind, "value")]


def test_every_setting_has_exactly_one_flag(capsys):
    with pytest.raises(SystemExit):
        main(["evaluate", "--help"])
    help_text = capsys.readouterr().out
    squeezed = "".join(help_text.split())  # the help text as given, however argparse wrapped it
    unset = parse()
    owners: dict[str, str] = {}
    for name, setting in described().items():
        flag = setting.flag(name)
        if setting.group == "callbacks":
            assert flag is None and setting.by is None, name
            assert not listed(f"--{name.replace('_', '-')}", help_text), name
            continue
        assert (flag is None) != (setting.by is None), name  # its own flag, or the one that sets it
        if flag is None:
            assert listed(setting.by, help_text), name
            continue
        assert listed(flag, help_text) and "".join(setting.help.split()) in squeezed, name
        given = parse(flag, *a_value(setting))
        changed = [key for key in given if given[key] != unset[key]]
        assert changed == [setting.dest or name], name
        assert owners.setdefault(changed[0], name) == name  # no two settings share a flag
    assert {name: setting.by for name, setting in described().items() if setting.by} == {
        "progress": "--quiet",
        "executor": "--ray",
        "trace": "--trace",
    }


def test_every_flag_sets_something():
    settings = described()
    own = {setting.dest or name for name, setting in settings.items() if setting.flag(name)}
    by = {dest(setting.by) for setting in settings.values() if setting.by}
    known = {*own, *by, *CLI_DEFAULTS, *FLAG_ONLY, *MODEL_FLAGS}
    assert sorted(flag_dests() - known) == []
    assert sorted(own - flag_dests()) == []
    assert "served_model_name" in model_fields()  # what --judge-model sets


def test_a_flag_not_given_leaves_the_config_files_value():
    """None, or `Unset(default)` for a setting with a value set (it reads as evaluate()'s default)."""
    from ascend_eval.cli.config import Unset

    unset = parse()
    for name, setting in described().items():
        if setting.flag(name):
            value = unset[setting.dest or name]
            assert value is None or (isinstance(value, Unset) and setting.choices is not None), name
