"""What is known of a setting of `EvaluationConfig` besides its value, written once, on its field: its group,
the kind of value it takes, its value set, and its command-line flag and help.

`ascend-eval evaluate`'s setting flags are made from it (`ascend_eval.cli.flags`), as vLLM's `EngineArgs`
makes its flags from its fields, and so are the checks of a `--config` file's values
(`ascend_eval.cli.config`) and the keys `config.yaml` holds.

>>> from ascend_eval.config import described
>>> chunk_size = described()["chunk_size"]
>>> chunk_size.group, chunk_size.kind.name, chunk_size.flag("chunk_size")
('engine', 'integer', '--chunk-size')
>>> INTEGER.accepts(8), INTEGER.accepts(True), NUMBER.accepts(1), CACHE.accepts(False), CACHE.accepts(True)
(True, False, True, True, False)

`EvaluationConfig` checks every field from its `Setting` (`Setting.check`): its kind, its value set, its
bounds. A file's value and a Python one are told apart where they may differ (a `Path`, a blank address):

>>> SWITCH.check("dedupe", "no")
Traceback (most recent call last):
...
ascend_eval.base.errors.ConfigError: dedupe='no': True or False.
>>> described()["judge_mode"].check("judge_mode", "chat")
Traceback (most recent call last):
...
ascend_eval.base.errors.ConfigError: judge_mode='chat'; valid: 'classify', 'generate'.
>>> ADDRESS.accepts(""), ADDRESS.fits(""), FOLDER.accepts(Path("out")), FOLDER.fits(Path("out"))
(True, False, False, True)
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ascend_eval.choices import SettingGroup
from ascend_eval.errors import ConfigError

KEY = "setting"
"""The key of a field's metadata that holds its `Setting`."""


def _pairs(value: Any) -> bool:
    """A mapping of strings to strings."""
    return isinstance(value, Mapping) and all(isinstance(v, str) for v in [*value, *value.values()])


@dataclass(frozen=True)
class Kind:
    """The kind of value a setting takes: how its flag reads it from text, and what a `--config` file may
    hold for it (None, the default, always may)."""

    name: str
    types: tuple[type, ...] = ()
    """A file's value is an instance of one of these, and a bool only where bool is one; none: anything."""
    expected: str = ""
    """What a file's value must be, in words, for the message when it is not."""
    parse: Callable[[str], Any] | None = None
    """The flag's argparse `type` (None: the text itself)."""
    switch: bool = False
    """A `--name / --no-name` flag, no value."""
    nargs: str | None = None
    metavar: str | None = None
    accept: Callable[[Any], bool] | None = None
    """Where `types` cannot say it: whether a file's value fits."""
    normal: Callable[[Any], Any] | None = None
    """A file's fitting value as `config.yaml` writes it (None: as it is)."""
    stated: str = ""
    """What a value given to `EvaluationConfig` must be, in words, for the message when it is not; empty
    where the kind is checked elsewhere (a setting's `bound`, or where the value is used)."""
    fit: Callable[[Any], bool] | None = None
    """Where a Python value may be more than a file's (a `Path`) or less (a blank address): whether it fits
    (None: as `accepts`)."""
    optional: bool = True
    """None is a value `EvaluationConfig` takes (its default); a switch is True or False, nothing else."""

    def accepts(self, value: Any) -> bool:
        """Whether `value` (not None) fits this kind in a `--config` file or on the command line."""
        if self.accept is not None:
            return self.accept(value)
        if not self.types:
            return True
        return isinstance(value, bool) == (bool in self.types) and isinstance(value, self.types)

    def fits(self, value: Any) -> bool:
        """Whether `value` (not None) fits this kind as a setting of `EvaluationConfig`."""
        return self.fit(value) if self.fit is not None else self.accepts(value)

    def check(self, name: str, value: Any) -> None:
        """Refuse a value of setting `name` that does not fit this kind (where the kind is `stated`).

        Raises:
            ConfigError: naming the setting and what it takes.
        """
        if not self.stated or (value is None and self.optional) or (value is not None and self.fits(value)):
            return
        raise ConfigError(f"{name}={value!r}: {self.stated}{', or None' if self.optional else ''}.")


TEXT = Kind("text", (str,), "a string")
INTEGER = Kind("integer", (int,), "an integer", parse=int)
NUMBER = Kind("number", (float, int), "a number", parse=float)
SWITCH = Kind("switch", (bool,), "true or false", switch=True, stated="True or False", optional=False)
"""True or False, nothing else: `dedupe="no"` would otherwise read as true."""
MODEL = Kind("model", (str, Mapping), "a model name, path or URL, or a mapping of ModelSpec fields")
"""A model: a string, or a mapping of `ModelSpec` fields (`ascend_eval.cli.config` checks their names)."""
CACHE = Kind(
    "cache",
    expected="a folder, or false for no cache",
    parse=Path,
    accept=lambda value: value is False or isinstance(value, str | Path),
    normal=lambda value: value if value is False else str(value),
    stated="a folder (str or Path), False for no cache",
)
FOLDER = Kind(
    "folder",
    (str,),
    "a string",
    stated="a results folder (str or Path)",
    fit=lambda value: isinstance(value, str | Path),
)
"""A results folder: a string in a file, a string or `Path` in Python."""
ADDRESS = Kind(
    "address",
    (str,),
    "a string",
    stated="'auto', 'host:port' or 'ray://host:port'",
    fit=lambda value: isinstance(value, str) and bool(value.strip()),
)
"""A Ray cluster's address; a blank one is refused when the config is built."""
PAIRS = Kind(
    "pairs",
    expected="a mapping of our column names to your dataset's, e.g. {user_input: query}",
    nargs="+",
    metavar="OURS=THEIRS",
    accept=_pairs,
    normal=dict,
)
ANY = Kind("any")
"""Checked where it is used (`trace`)."""
FUNCTION = Kind("function", expected="a function", accept=callable, stated="a function")
"""A callback: no flag, no file key."""


@dataclass(frozen=True)
class Setting:
    """One setting's description: its group, kind and value set, and its flag (made from these)."""

    group: SettingGroup
    kind: Kind = TEXT
    help: str = ""
    """The flag's help; empty where the setting has no flag of its own (`by`, or a callback)."""
    choices: tuple[str, ...] | None = None
    """The value set (`ascend_eval.choices`); its flag then holds `Unset(default)` while not given."""
    spelling: str | None = None
    """The flag, where it is not `--field-name`."""
    dest: str | None = None
    """The flag's destination, where it is not the field's name."""
    metavar: str | None = None
    const: str | None = None
    """The flag's value may be left out, and is then this."""
    by: str | None = None
    """The hand-written flag that sets it instead of one of its own (`--quiet` turns the progress bar off)."""
    saved: bool = True
    """A key of `--config` files and `config.yaml` (a callback, or the progress bar that `quiet` decides,
    is not)."""
    hint: str = ""
    """Said after the value set when a value is not in it."""
    bound: Callable[[str, Any], Any] | None = None
    """The check of a value of the right kind, called with the name and the value: a range, or the role of
    a model. It raises `ConfigError`."""

    def check(self, name: str, value: Any) -> None:
        """Refuse a value of this setting that does not fit its kind, its value set or its bound.

        Raises:
            ConfigError: naming the setting and what it takes.
        """
        self.kind.check(name, value)
        if self.choices is not None and value not in self.choices:
            hint = f" {self.hint}" if self.hint else ""
            raise ConfigError(f"{name}={value!r}; valid: {', '.join(map(repr, self.choices))}{hint}.")
        if self.bound is not None:
            self.bound(name, value)

    def flag(self, name: str) -> str | None:
        """The setting's own flag (None where it has none)."""
        if not self.help:
            return None
        return self.spelling or "--" + name.replace("_", "-")


def setting(default: Any, group: SettingGroup, kind: Kind = TEXT, help: str = "", **more: Any) -> Any:
    """A field of `EvaluationConfig` with its default and its `Setting`."""
    return dataclasses.field(default=default, metadata={KEY: Setting(group, kind, help, **more)})
