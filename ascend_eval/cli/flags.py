"""`ascend-eval evaluate`'s setting flags, made from `EvaluationConfig`'s fields (`ascend_eval.setting`): one
flag per setting that has its own, in an argument group per setting group, with its spelling, value set,
help, and the type, metavar or `--no-` form its kind gives. A setting added to the config with a help text
is a flag here with no change to this module.

A flag not given holds None, or `Unset(default)` where the setting has a value set: either way it leaves
the `--config` file's value (`ascend_eval.cli.config.effective_config`).

>>> import argparse
>>> parser = argparse.ArgumentParser()
>>> groups = setting_groups(parser)
>>> add_setting_flags(groups)
>>> args = parser.parse_args(["--chunk-size", "8", "--no-dedupe", "--ray"])
>>> args.chunk_size, args.dedupe, args.ray, args.judge_backend
(8, False, '', 'auto')
"""

from __future__ import annotations

import argparse
from typing import Any

from ascend_eval.choices import SETTING_GROUPS, SettingGroup
from ascend_eval.cli.config import Unset
from ascend_eval.config import defaults, described
from ascend_eval.setting import Setting

GROUP_HELP: dict[SettingGroup, str] = {
    "data": "the dataset, the metrics, and the dataset's column names",
    "models": "the judge, embedder and cross-encoder, their runtimes and settings, the device and its memory",
    "scoring": "prompt language, RAGAS compatibility, how verdicts are asked for, calibrated and counted",
    "engine": "the request cache, batching and deduplication",
    "executor": "where the samples are scored: this process, or Ray actors",
    "output": "the results folder, progress, errors and tracing",
}
"""The argument groups of `evaluate --help`, in this order (the callbacks have no flags)."""


def setting_groups(parser: argparse.ArgumentParser) -> dict[SettingGroup, Any]:
    """An argument group of `parser` for each setting group that has flags, titled with its name."""
    return {
        group: parser.add_argument_group(group, GROUP_HELP[group])
        for group in SETTING_GROUPS
        if group in GROUP_HELP
    }


def flag_arguments(name: str, setting: Setting, default: Any) -> tuple[list[str], dict[str, Any]]:
    """The `add_argument` call of a setting's own flag: its option strings and keywords.

    >>> flag_arguments("ray_address", described()["ray_address"], None)[1]["nargs"]
    '?'
    """
    kind = setting.kind
    options: dict[str, Any] = {"dest": setting.dest or name, "help": setting.help}
    if kind.switch:
        options["action"] = argparse.BooleanOptionalAction
    elif kind.parse is not None:
        options["type"] = kind.parse
    if setting.choices is not None:
        options.update(choices=setting.choices, default=Unset(default))
    if kind.nargs is not None:
        options["nargs"] = kind.nargs
    if setting.const is not None:
        options.update(nargs="?", const=setting.const)
    metavar = setting.metavar or kind.metavar
    if metavar is not None:
        options["metavar"] = metavar
    return [str(setting.flag(name))], options


def add_setting_flags(groups: dict[SettingGroup, Any]) -> None:
    """Add each setting's own flag, in the order of the fields, to its group of `groups`."""
    initial = defaults()
    for name, setting in described().items():
        if setting.flag(name) is not None:
            strings, options = flag_arguments(name, setting, initial[name])
            groups[setting.group].add_argument(*strings, **options)
