"""An experiment file: a job spec plus `sweep` (the parameter grid), and optionally `name` and `limit`.

```yaml
name: rag-mini-en chunking
limit: 6                      # first 6 questions only
sweep:
  chunk_size: [256, 512]      # short names, or any dotted path into the job spec
  top_k: [2, 4]
metrics: [nv_accuracy, nv_context_relevance]
model: {url: "local:smollm2-135m-instruct"}
...                           # the rest of a job spec
```
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Mapping
from copy import deepcopy
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ascend_eval.errors import ConfigError
from ascend_eval.yaml_files import load_yaml

SHORT_NAMES: dict[str, str] = {
    "top_k": "metric_params.top_k",
    "chunk_size": "retriever_pipeline.chunk_size",
    "chunk_overlap": "retriever_pipeline.chunk_overlap",
    "chunk_unit": "retriever_pipeline.chunk_unit",
    "rerank_candidates": "retriever_pipeline.rerank_candidates",
}
"""Sweep keys that stand for a path in the job spec; any other key is a dotted path itself."""

_EXPERIMENT_KEYS = ("sweep", "name", "limit")


@dataclass(frozen=True)
class ExperimentSpec:
    """A base job spec and the grid of values to run it with."""

    base: dict[str, Any]
    """The job spec every point starts from."""
    sweep: dict[str, list[Any]]
    """Parameter (short name or dotted path) -> values; the points are every combination (first key
    slowest)."""
    name: str = "experiment"
    limit: int | None = None
    """Run only the first `limit` samples of the dataset."""
    source: str = "dict"

    def __post_init__(self) -> None:
        if not isinstance(self.sweep, Mapping) or not self.sweep:
            raise ConfigError(
                f"Experiment {self.source}: `sweep` must map parameters to lists of values, e.g. "
                "{'chunk_size': [256, 512], 'top_k': [2, 4]}; got " + repr(self.sweep)[:80] + "."
            )
        for key, values in self.sweep.items():
            if not isinstance(values, list) or not values:
                raise ConfigError(
                    f"Experiment {self.source}: sweep.{key} must be a non-empty list of values, "
                    f"got {values!r}."
                )
            if len({json.dumps(v, sort_keys=True) for v in values}) != len(values):
                raise ConfigError(f"Experiment {self.source}: sweep.{key} repeats a value: {values!r}.")
        if self.limit is not None and (not isinstance(self.limit, int) or self.limit < 1):
            raise ConfigError(f"Experiment {self.source}: limit={self.limit!r}; it must be an integer >= 1.")

    def points(self) -> list[dict[str, Any]]:
        """Every combination of sweep values, as {parameter: value}, in grid order.

        >>> ExperimentSpec(base={}, sweep={"chunk_size": [256, 512], "top_k": [2, 4]}).points()[1]
        {'chunk_size': 256, 'top_k': 4}
        """
        keys = list(self.sweep)
        return [dict(zip(keys, combo, strict=True)) for combo in itertools.product(*self.sweep.values())]

    def point_spec(self, params: Mapping[str, Any]) -> dict[str, Any]:
        """The base spec with each parameter set at its path.

        >>> spec = ExperimentSpec(base={"metric_params": {"top_k": 10}}, sweep={"top_k": [2]})
        >>> spec.point_spec({"top_k": 2, "retriever_pipeline.chunk_size": 128})
        {'metric_params': {'top_k': 2}, 'retriever_pipeline': {'chunk_size': 128}}
        """
        spec = deepcopy(self.base)
        for key, value in params.items():
            set_path(spec, SHORT_NAMES.get(key, key), value)
        return spec


def set_path(data: dict[str, Any], path: str, value: Any) -> None:
    """Set `data[a][b][c] = value` for path "a.b.c", creating missing levels.

    Raises:
        ConfigError: a level on the way holds something that is not a mapping.
    """
    parts = path.split(".")
    node = data
    for depth, part in enumerate(parts[:-1]):
        child = node.setdefault(part, {})
        if not isinstance(child, dict):
            where = ".".join(parts[: depth + 1])
            raise ConfigError(
                f"Sweep parameter {path!r}: the job spec's {where!r} is {child!r}, not an object, so "
                f"{path!r} cannot be set. Sweep {where!r} itself or fix the path."
            )
        node = child
    node[parts[-1]] = value


def _absolute(value: str, base: Path) -> str:
    candidate = base / value
    return str(candidate) if not Path(value).is_absolute() and candidate.exists() else value


def _absolute_dataset_paths(spec: dict[str, Any], base: Path) -> None:
    """Relative dataset and corpus paths are relative to the experiment file, wherever it runs from."""
    dataset = spec.get("dataset")
    if isinstance(dataset, str):
        spec["dataset"] = _absolute(dataset, base)
    elif isinstance(dataset, dict):
        for key in ("path", "corpus"):
            if isinstance(dataset.get(key), str) and not (key == "path" and "storage" in dataset):
                dataset[key] = _absolute(dataset[key], base)


def load_experiment(source: str | Path | Mapping[str, Any] | ExperimentSpec) -> ExperimentSpec:
    """An `ExperimentSpec` from a YAML or JSON file, or a dict (a job spec plus `sweep`, `name`, `limit`).

    Raises:
        ConfigError: the file cannot be read or parsed, or `sweep`/`limit` are malformed.
    """
    if isinstance(source, ExperimentSpec):
        return source
    if isinstance(source, Mapping):
        data, where, folder = deepcopy(dict(source)), "dict", None
    else:
        path = Path(source).expanduser()
        where, folder = str(path), path.parent
        try:
            text = path.read_text(encoding="utf-8")
        except OSError as e:
            raise ConfigError(
                f"Cannot read experiment file {where!r}: {e.strerror}. Check the path."
            ) from None
        data = _parse(text, path)
    if "sweep" not in data:
        raise ConfigError(
            f"Experiment {where} has no `sweep`. Add e.g. `sweep: {{chunk_size: [256, 512], top_k: [2, 4]}}` "
            "next to the job spec's fields."
        )
    sweep, name, limit = data.pop("sweep"), data.pop("name", None), data.pop("limit", None)
    if folder is not None:
        _absolute_dataset_paths(data, folder)
        name = name or Path(where).stem
    return ExperimentSpec(base=data, sweep=sweep, name=str(name or "experiment"), limit=limit, source=where)


def _parse(text: str, path: Path) -> dict[str, Any]:
    if path.suffix.lower() != ".json":
        data = load_yaml(text, f"Experiment file {str(path)!r}")
    else:
        try:
            data = json.loads(text)
        except (ValueError, RecursionError) as e:  # the message says where
            raise ConfigError(f"Experiment file {str(path)!r} does not parse: {e}") from None
    if not isinstance(data, dict):
        raise ConfigError(f"Experiment file {str(path)!r} must hold a mapping, got {type(data).__name__}.")
    return data
