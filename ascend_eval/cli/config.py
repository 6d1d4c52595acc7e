"""`ascend-eval evaluate`'s configuration: a `--config` file (YAML or JSON), the flags, and the effective
configuration they make together, written to the run's folder as `config.yaml`.

The keys are the dataset, the metrics and the settings of `EvaluationConfig` (read from its fields, so a
setting added there is a key here without a change to this module) except its callbacks, plus the command
line's own (`CLI_DEFAULTS`). Each value is checked for the kind its field describes (`ascend_eval.setting`,
`kinds`), the one type schema of the settings.
A model key (`judge`, `embedder`, `cross_encoder`) holds a string (a shipped name, a path or a URL) or a
mapping of `ModelSpec` fields. Flags given on the command line override the file; a flag not given leaves
the file's value (argparse defaults are None or `Unset`, so "not given" can be told from a default).
"""

from __future__ import annotations

import argparse
import difflib
import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from ascend_eval.config import ROLE_KEYS, SAVED, defaults, described, saved_settings
from ascend_eval.errors import AscendEvalError, ConfigError
from ascend_eval.setting import MODEL, NUMBER, SWITCH, Kind
from ascend_eval.writing import write_text
from ascend_eval.yaml_files import load_yaml

CONFIG_FILE = "config.yaml"
"""The name of the effective configuration in a run's output folder."""

CLI_DEFAULTS: dict[str, Any] = {"out": None, "max_backend_errors": 0.1, "progress_every": 2.0, "quiet": False}
"""The command line's own keys, with their defaults."""

MODEL_KEYS = {key: role for role, key in ROLE_KEYS.items()}
"""Model keys and the role each stands for."""

FLAGS = {"judge": "judge", "embedder": "embedder", "cross_encoder": "cross-encoder"}
"""Model keys and their flags' stem (`--cross-encoder`, `--cross-encoder-set`, ...)."""

CLI_KINDS: dict[str, Kind] = {"max_backend_errors": NUMBER, "progress_every": NUMBER, "quiet": SWITCH}
"""The kinds of the command line's own keys; a setting's is on its field (`ascend_eval.setting`)."""

HEADER = """\
# The effective configuration of an `ascend-eval evaluate` run: its --config file and flags merged, with
# the defaults filled in. Repeat the run with
#   ascend-eval evaluate --config {path}
# (flags given there override these values, e.g. --out for another folder). null is evaluate()'s default:
# the shipped default judge and embedder, every available metric, the request cache in
# ~/.cache/ascend-eval/requests. API keys appear only as the name of their environment variable
# (api_key_env) or file (api_key_file), never themselves.
"""


class Unset(str):
    """A flag's default that equals evaluate()'s (`args.judge_backend == "auto"`) but is known not to be
    given, so it leaves the --config file's value.

    >>> isinstance(Unset("auto"), Unset), Unset("auto") == "auto"
    (True, True)
    """

    __slots__ = ()


def evaluate_defaults() -> dict[str, Any]:
    """evaluate()'s dataset and metrics (None: the dataset has no default) and every setting of
    `EvaluationConfig` but its callbacks (the command line sets those itself, from `quiet`), with their
    defaults.

    >>> list(evaluate_defaults())[:3]
    ['dataset', 'metrics', 'judge']
    >>> "on_round" in evaluate_defaults() or "progress" in evaluate_defaults()
    False
    """
    return {"dataset": None, "metrics": None, **saved_settings(defaults())}


def config_defaults() -> dict[str, Any]:
    """Every configuration key and its default, in the order `config.yaml` lists them."""
    return {**evaluate_defaults(), **CLI_DEFAULTS}


def model_fields() -> list[str]:
    """The `ModelSpec` fields a model mapping or `--{flag}-set` may set (the role is the key's)."""
    from ascend_eval.models.spec import ModelSpec

    return [name for name in ModelSpec.model_fields if name != "role"]


def unknown(name: str, valid: Sequence[str], what: str) -> ConfigError:
    """The error for an unknown name: the closest valid one, and all of them.

    >>> print(unknown("chunksize", ["chunk_size", "dedupe"], "config.yaml: key"))
    config.yaml: key 'chunksize' is unknown. Did you mean 'chunk_size'? Valid: chunk_size, dedupe.
    """
    close = difflib.get_close_matches(name, valid, n=1)
    hint = f" Did you mean {close[0]!r}?" if close else ""
    return ConfigError(f"{what} {name!r} is unknown.{hint} Valid: {', '.join(valid)}.")


def parse_value(text: str) -> Any:
    """A flag's value as a number, a boolean, None, or else the text itself.

    >>> [parse_value(t) for t in ("8", "0.5", "true", "False", "null", "float16")]
    [8, 0.5, True, False, None, 'float16']
    """
    for kind in (int, float):
        try:
            return kind(text)
        except ValueError:
            continue
    words = {"true": True, "false": False, "null": None, "none": None}
    return words.get(text.lower(), text)


def parse_settings(flag: str, pairs: Sequence[str] | None) -> dict[str, Any]:
    """`--{flag}-set NAME=VALUE ...`: any `ModelSpec` field, values parsed by `parse_value` (`null` unsets
    one the config file sets).

    >>> parse_settings("judge", ["max_tokens=256", "temperature=0.2", "served_model_name=qwen"])
    {'max_tokens': 256, 'temperature': 0.2, 'served_model_name': 'qwen'}

    Raises:
        ConfigError: not NAME=VALUE, or NAME is no `ModelSpec` field (the closest is suggested).
    """
    out: dict[str, Any] = {}
    for pair in pairs or ():
        name, sep, text = pair.partition("=")
        if not sep or not name:
            raise ConfigError(f"--{flag}-set {pair!r}: write NAME=VALUE, e.g. max_tokens=256.")
        if name not in model_fields():
            raise unknown(name, model_fields(), f"--{flag}-set {pair!r}: ModelSpec field")
        out[name] = parse_value(text)
    return out


def parse_engine_settings(flag: str, pairs: Sequence[str] | None) -> dict[str, object]:
    """`--{flag}-engine NAME=VALUE ...` as `ModelSpec` engine settings, numbers as numbers.

    >>> parse_engine_settings("judge", ["gpu_memory_utilization=0.5", "max_model_len=4096", "dtype=float16"])
    {'gpu_memory_utilization': 0.5, 'max_model_len': 4096, 'dtype': 'float16'}
    """
    from ascend_eval.models.spec import ENGINE_FIELDS

    out: dict[str, object] = {}
    for pair in pairs or ():
        name, sep, text = pair.partition("=")
        if not sep or name not in ENGINE_FIELDS or not text:
            raise ConfigError(
                f"--{flag}-engine {pair!r}: write NAME=VALUE with NAME one of {', '.join(ENGINE_FIELDS)}, "
                "e.g. gpu_memory_utilization=0.5."
            )
        out[name] = parse_value(text)
    return out


def split_values(values: Sequence[str] | None) -> list[str] | None:
    """Accept `--metrics a b` and `--metrics a,b` alike.

    >>> split_values(["faithfulness,answer_similarity", "x"])
    ['faithfulness', 'answer_similarity', 'x']
    """
    if not values:
        return None
    return [v for value in values for v in value.split(",") if v]


def parse_column_map(pairs: Sequence[str] | None) -> dict[str, str] | None:
    """`--column-map OURS=THEIRS ...` as a dict.

    >>> parse_column_map(["user_input=query"])
    {'user_input': 'query'}
    """
    if not pairs:
        return None
    out = {}
    for pair in pairs:
        ours, sep, theirs = pair.partition("=")
        if not sep or not ours or not theirs:
            raise AscendEvalError(f"--column-map {pair!r}: write OURS=THEIRS, e.g. user_input=query.")
        out[ours] = theirs
    return out


def kinds() -> dict[str, Kind]:
    """The kind of each configuration key's value but the dataset's and the metrics' (their own checks).

    >>> kinds()["chunk_size"].name, kinds()["cache_dir"].name, kinds()["quiet"].name
    ('integer', 'cache', 'switch')
    """
    settings = described()
    return {**{name: settings[name].kind for name in SAVED}, **CLI_KINDS}


def _check(key: str, value: Any, where: str) -> Any:
    """`value` of `key`, checked for its kind (`where` names the source in messages)."""

    def wrong(expected: str) -> ConfigError:
        return ConfigError(f"{where}: {key}={value!r}; expected {expected}.")

    if value is None:
        return None
    if key == "metrics":
        if isinstance(value, str):
            return split_values([value])
        if not isinstance(value, list) or not all(isinstance(n, str | Mapping) for n in value):
            raise wrong("metric names, as a list or comma-separated, and criterion or rubric mappings")
        from ascend_eval.metrics.files import metric_entries

        metric_entries(value, f"{where}: metrics")  # a bad criterion fails here, before any model loads
        return [m for v in value for m in ((split_values([v]) or []) if isinstance(v, str) else [v])]
    if key == "dataset":
        if not isinstance(value, str | Path | list | Mapping):
            raise wrong("a file, a built-in name, rows or columns")
        return str(value) if isinstance(value, Path) else value
    kind = kinds()[key]
    if not kind.accepts(value):
        raise wrong(kind.expected)
    if kind is MODEL and not isinstance(value, str):
        for field in value:
            if field not in model_fields():
                raise unknown(str(field), model_fields(), f"{where}: {key}: ModelSpec field")
        if "model" not in value:
            value = {"model": "local:default", **value}  # the role's shipped default, with these settings
        return _compact(value)
    return value if kind.normal is None else kind.normal(value)


def _compact(fields: Mapping[str, Any]) -> str | dict[str, Any]:
    """A model's fields in `ModelSpec`'s order without unset ones; the bare string when only `model` is."""
    order = model_fields()
    kept = {n: fields[n] for n in sorted(fields, key=order.index) if fields[n] is not None}
    return kept["model"] if list(kept) == ["model"] else kept


def load_config(path: str | Path) -> dict[str, Any]:
    """The settings in a `--config` file (`.yaml`, `.yml` or `.json`), checked.

    Raises:
        ConfigError: no such file, not YAML/JSON or not a mapping, an unknown key or `ModelSpec` field (the
            closest is suggested, every valid one listed), or a value of the wrong type.
    """
    file = Path(path).expanduser()
    if file.suffix.lower() not in (".yaml", ".yml", ".json"):
        raise ConfigError(f"--config {str(path)!r}: name a .yaml, .yml or .json file.")
    try:
        text = file.read_text(encoding="utf-8")
    except OSError as e:
        raise ConfigError(f"--config {str(path)!r} cannot be read ({e.strerror or e}).") from None
    if file.suffix.lower() != ".json":
        data = load_yaml(text, f"--config {str(path)!r}")
    else:
        try:
            data = json.loads(text)
        except (ValueError, RecursionError) as e:
            raise ConfigError(f"--config {str(path)!r} is not valid JSON: {e}") from None
    if data is None:
        data = {}
    if not isinstance(data, Mapping):
        raise ConfigError(f"--config {str(path)!r} holds a {type(data).__name__}; write a mapping of keys.")
    defaults = config_defaults()
    out = {}
    for key, value in data.items():
        if key not in defaults:
            raise unknown(str(key), list(defaults), f"--config {str(path)!r}: key")
        out[key] = _check(key, value, f"--config {str(path)!r}")
    return out


def _absolute(value: Any) -> Any:
    """An existing relative path as an absolute one (so that `config.yaml` repeats from any folder)."""
    if isinstance(value, str) and value.strip() and not value.startswith(("http://", "https://")):
        path = Path(value).expanduser()
        if path.exists():
            return str(path.resolve())
    return value


def _merge_model(current: Any, args: argparse.Namespace, key: str) -> Any:
    """The model of `key` after the flags: `--{flag}` replaces it, `--{flag}-model`, `--{flag}-engine`,
    `--{flag}-set` and `--api-key-env` (for a server) change fields of it."""
    from ascend_eval.models.http import is_url

    flag = FLAGS[key]
    given = getattr(args, key, None)
    if given is not None:
        fields: dict[str, Any] = {"model": given}
    elif isinstance(current, str):
        fields = {"model": current}
    else:
        fields = dict(current or {})
    served = getattr(args, f"{key}_model", None)
    if served:
        fields["served_model_name"] = served
    backend = getattr(args, f"{key}_backend", None)
    if backend is not None and not isinstance(backend, Unset):
        fields.pop("backend", None)  # --{flag}-backend given: it is the backend (evaluate_kwargs sets it)
    fields.update(parse_engine_settings(flag, getattr(args, f"{key}_engine", None)))
    fields.update(parse_settings(flag, getattr(args, f"{key}_set", None)))
    if not fields:
        return None
    fields.setdefault("model", "local:default")  # the role's shipped default, with these settings
    endpoint = is_url(fields["model"])
    if served and not endpoint:
        model = fields["model"]
        raise ConfigError(
            f"--{flag}-model names the model a server serves, but --{flag} is "
            + (f"the local model {model!r}" if model != "local:default" else "not given (the local default)")
            + f". Pass --{flag} URL, or drop --{flag}-model."
        )
    if endpoint and getattr(args, "api_key_env", None):
        # --api-key-env is for every server named; a local model has no key to read.
        fields["api_key_env"] = args.api_key_env
        fields.pop("api_key_file", None)
    if not endpoint:
        fields["model"] = _absolute(fields["model"])
    if fields.get("api_key_file"):
        fields["api_key_file"] = _absolute(fields["api_key_file"])
    return _compact(fields)


def effective_config(args: argparse.Namespace) -> dict[str, Any]:
    """Every key's value for this run: the defaults, then `--config`'s file, then the flags given.

    A flag whose dest is an evaluate() parameter (`--device` for `device`) overrides that key with no
    code here, when given: such a flag needs the default None (or an `Unset`), else its default would
    override the file. `data`, `--no-cache`, `--column-map`, `--metrics` and the model flags are
    translated.

    Raises:
        ConfigError: as `load_config`, a flag's setting is malformed, or no dataset or output folder.
    """
    defaults = config_defaults()
    config = dict(defaults)
    if getattr(args, "config", None):
        config.update(load_config(args.config))
    flags: dict[str, Any] = {
        "dataset": getattr(args, "data", None),
        "metrics": _metrics_flags(args),
        "column_map": parse_column_map(getattr(args, "column_map", None)),
        "cache_dir": False if getattr(args, "no_cache", None) else getattr(args, "cache_dir", None),
    }
    ray = getattr(args, "ray", None)
    if ray is not None:  # --ray [ADDRESS]: the Ray executor, on that cluster or a local one
        flags["executor"] = "ray"
        flags["ray_address"] = ray or None
    for key in defaults:
        if key not in flags and key not in MODEL_KEYS:
            flags[key] = getattr(args, key, None)
    for key, value in flags.items():
        if value is not None and not isinstance(value, Unset):
            config[key] = _check(key, value, "the command line")
    for key in MODEL_KEYS:
        config[key] = _merge_model(config[key], args, key)
    if config["dataset"] is None:
        raise ConfigError(
            "No dataset: give DATA (a file or a built-in name) or `dataset:` in the --config file."
        )
    if config["out"] is None:
        raise ConfigError("No output folder: give --out FOLDER or `out:` in the --config file.")
    from ascend_eval.examples import builtin_dataset

    if not (isinstance(config["dataset"], str) and builtin_dataset(config["dataset"]) is not None):
        config["dataset"] = _absolute(config["dataset"])  # a built-in name stays a name
    for key in ("out", "cache_dir"):
        if isinstance(config[key], str) and config[key].strip():  # an empty one is refused later
            config[key] = str(Path(config[key]).expanduser().resolve())
    return config


def _metrics_flags(args: argparse.Namespace) -> list[Any] | None:
    """`--metrics` names, then the entries of `--metrics-file` (checked now); None when neither is given."""
    names = split_values(getattr(args, "metrics", None)) or []
    path = getattr(args, "metrics_file", None)
    if path:
        from ascend_eval.metrics.files import read_metrics_file

        names += read_metrics_file(path)
    return names or None


def evaluate_kwargs(config: Mapping[str, Any]) -> dict[str, Any]:
    """evaluate()'s arguments from an effective configuration: its keys less the command line's, and each
    model (a string or a mapping of fields) as a `ModelSpec` with its backend setting merged in
    (`ascend_eval.models.factory.model_spec`, checked now, before any model loads).

    Raises:
        ConfigError: a model's settings do not fit it (the message names the key).
    """
    from ascend_eval.models.factory import model_spec

    kwargs = {k: v for k, v in config.items() if k not in CLI_DEFAULTS}
    if kwargs.get("metrics") is not None:
        from ascend_eval.metrics.files import metric_entries

        kwargs["metrics"] = metric_entries(kwargs["metrics"], "metrics")
    for key, role in MODEL_KEYS.items():
        value = kwargs[key]
        if value is None:
            continue
        try:
            # The backend setting is merged into the spec here, before its engine settings are checked.
            kwargs[key] = spec = model_spec(value, role, backend=kwargs.get(f"{key}_backend") or "auto")
        except ConfigError as e:
            raise ConfigError(f"{key}: {e}") from None
        parts = urlsplit(spec.model.strip()) if spec.is_endpoint else None
        if parts is not None and (parts.username is not None or parts.password is not None):
            # Refused later by the endpoint's config too; here, before config.yaml would hold the password.
            raise ConfigError(
                f"{key}: the URL must not contain credentials (user:password@host); put the key in an "
                "environment variable and name it with --api-key-env (api_key_env: in a config file)."
            )
    return kwargs


def check_run_folder(folder: Path) -> None:
    """Refuse an `--out` folder that holds a file the run would replace (`config.yaml`, `results.json`,
    `report.html`, ...) unless the folder is an earlier run's: its `config.yaml` begins with this module's
    header, or its results files begin as ours do (`is_run_folder`). Other files in it are never touched.

    Raises:
        ConfigError: naming the folder, the files and the way on.
    """
    from ascend_eval.results import OUTPUT_FILES
    from ascend_eval.results.files import is_run_folder

    present = [name for name in (CONFIG_FILE, *OUTPUT_FILES) if (folder / name).exists()]
    if not present or is_run_folder(folder):
        return
    try:
        with (folder / CONFIG_FILE).open(encoding="utf-8") as file:
            if file.readline() == HEADER.splitlines(keepends=True)[0]:
                return
    except (OSError, UnicodeDecodeError):
        pass
    raise ConfigError(
        f"--out {str(folder)!r} holds {', '.join(present)}, which no earlier ascend-eval run wrote, and this "
        "run would replace them. Pass a new or empty folder, or move those files first."
    )


def file_keys(config: Mapping[str, Any]) -> dict[str, Any]:
    """What `config.yaml` holds of an effective configuration: its keys (`config_defaults`: the dataset, the
    metrics, the saved settings and the command line's own), in their order, and no other.

    >>> config = {**config_defaults(), "on_round": print, "chunk_size": 8}
    >>> keys = file_keys(config)
    >>> list(keys) == list(config_defaults()), keys["chunk_size"], "on_round" in keys
    (True, 8, False)
    """
    return {key: config[key] for key in config_defaults()}


def write_config(config: Mapping[str, Any], folder: str | Path) -> Path:
    """Write the effective configuration as `folder/config.yaml`, which `--config` reads back. Written
    before the run, in one step: a full disk ends the command here, before any request, and leaves no
    empty or half-written file.

    Returns:
        The file written.

    Raises:
        OutputError: the file could not be written (the message names it and the way on).
    """
    import yaml

    path = Path(folder) / CONFIG_FILE
    plain = {k: str(v) if isinstance(v, Path) else v for k, v in file_keys(config).items()}
    body = yaml.safe_dump(plain, sort_keys=False, allow_unicode=True, default_flow_style=False)
    return write_text(path, HEADER.format(path=path) + body)
