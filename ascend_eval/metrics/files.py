"""Metrics written down: a `metrics:` list of built-in names and the user's own criteria and rubrics.

The same list is read from a metrics file (`ascend-eval evaluate --metrics-file m.yaml`), from a `--config`
file's `metrics:` key, from a job spec and from the REST service's request body:

    metrics:
      - faithfulness
      - criterion:
          name: cites_source
          definition: Does the answer name the passage it relies on?
          reads: [contexts, answer]
      - rubric:
          name: completeness
          reads: [question, answer, reference]
          levels: {1: Misses most points., 3: Covers about half., 5: Covers every point.}

Each mapping holds the keyword arguments of `Criterion` or `Rubric`; a wrong key, a missing one or a bad
value is a `ConfigError` that names the entry, before any model loads.
"""

from __future__ import annotations

import inspect
import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from ascend_eval.errors import ConfigError
from ascend_eval.metrics.base import Metric
from ascend_eval.metrics.criteria import Criterion, Rubric, UserMetric
from ascend_eval.yaml_files import load_yaml

KINDS: dict[str, type[UserMetric]] = {"criterion": Criterion, "rubric": Rubric}


def _entry_name(entry: Any, index: int) -> str:
    body = next(iter(entry.values()), None) if isinstance(entry, Mapping) else None
    name = body.get("name") if isinstance(body, Mapping) else None
    return f"metrics[{index}]" + (f" ({name!r})" if isinstance(name, str) else "")


def user_metric(entry: Mapping[str, Any], where: str) -> UserMetric:
    """The criterion or rubric that one `metrics:` mapping describes.

    >>> user_metric({"criterion": {"name": "polite", "definition": "Is the answer polite?"}}, "m.yaml").reads
    ('question', 'answer')
    >>> user_metric({"rubric": {"name": "x", "levls": {}}}, "m.yaml")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    ascend_eval.base.errors.ConfigError: m.yaml: a rubric takes name, levels, reads, ...; not 'levls'.
    """
    if len(entry) != 1 or next(iter(entry)) not in KINDS:
        raise ConfigError(
            f"{where}: a metric is a built-in name or a mapping with one key, 'criterion' or 'rubric', "
            f"holding its settings; got the keys {list(entry)}."
        )
    kind, body = next(iter(entry.items()))
    cls = KINDS[kind]
    if not isinstance(body, Mapping):
        raise ConfigError(f"{where}: {kind}: holds a mapping of its settings (name, ...), got {body!r}.")
    accepted = [p for p in inspect.signature(cls.__init__).parameters if p != "self"]
    for key in body:
        if key not in accepted:
            raise ConfigError(f"{where}: a {kind} takes {', '.join(accepted)}; not {key!r}.")
    missing = [p for p, v in inspect.signature(cls.__init__).parameters.items()
               if p != "self" and v.default is inspect.Parameter.empty and p not in body]  # fmt: skip
    if missing:
        raise ConfigError(f"{where}: a {kind} needs {', '.join(missing)}.")
    try:
        return cls(**body)
    except ConfigError as e:
        raise ConfigError(f"{where}: {e}") from None


def metric_entries(entries: Any, where: str) -> list[str | Metric]:
    """Built-in names (kept as names, checked by `resolve_metrics`) and metric objects for a `metrics:`
    list; a single name or comma-separated names as for `--metrics`.

    >>> metric_entries(["faithfulness", {"criterion": {"name": "c", "definition": "Ok?"}}], "m.yaml")
    ['faithfulness', Criterion(name='c', definition='Ok?', reads=['question', 'answer'], strictness=1)]
    """
    if isinstance(entries, str):
        entries = [entries]
    if not isinstance(entries, Sequence):
        raise ConfigError(
            f"{where}: metrics is a list of names and criterion/rubric mappings, got {entries!r}."
        )
    out: list[str | Metric] = []
    for i, entry in enumerate(entries):
        if isinstance(entry, str):
            out += [name.strip() for name in entry.split(",") if name.strip()]
        elif isinstance(entry, Mapping):
            out.append(user_metric(entry, f"{where}: {_entry_name(entry, i)}"))
        else:
            raise ConfigError(
                f"{where}: metrics[{i}] is {entry!r}; a metric is a built-in name or a criterion or rubric "
                "mapping."
            )
    return out


def read_metrics_file(path: str | Path) -> list[Any]:
    """The raw `metrics:` list of a YAML or JSON metrics file (a bare list is accepted too), checked as
    `metric_entries` checks it, so that a bad file fails before any model loads.

    Raises:
        ConfigError: the file cannot be read, is not YAML/JSON, or holds a bad entry.
    """
    where = f"--metrics-file {str(path)!r}"
    try:
        text = Path(path).expanduser().read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError, RuntimeError) as e:
        raise ConfigError(f"{where}: cannot read it ({e}).") from None
    if str(path).endswith(".json"):
        try:
            data = json.loads(text)
        except ValueError as e:
            raise ConfigError(f"{where}: not JSON ({e}).") from None
    else:
        data = load_yaml(text, where)
    entries = data.get("metrics") if isinstance(data, Mapping) else data
    if not isinstance(entries, list) or not entries:
        raise ConfigError(f"{where}: holds no `metrics:` list; write `metrics:` then one entry per line.")
    metric_entries(entries, where)
    return entries
