"""Executors: what scores a checked evaluation, here or on a cluster (`executors.base.Executor`).

- `local` (`run_locally`, `ascend_eval.executors.local`): one engine in this process.
- `ray` (`run_on_ray`, `ascend_eval.executors.ray_data`): a Ray Data pipeline, one engine and one set of
  models per actor; `score_on_ray` is its scoring alone, the scored samples streamed back in dataset order.

Both put the scored samples into the run's sink in dataset order, so their results are the same. Importing
this package does not import Ray; the Ray executor does, and says what to install when it is missing.
"""

from ascend_eval.executors.base import Executor, RunInput
from ascend_eval.executors.local import run_locally
from ascend_eval.executors.ray_data import RAY_INSTALL, RayRun, run_on_ray, score_on_ray

EXECUTORS: dict[str, Executor] = {"local": run_locally, "ray": run_on_ray}
"""The executor each `EvaluationConfig.executor` names."""

__all__ = [
    "EXECUTORS",
    "RAY_INSTALL",
    "Executor",
    "RayRun",
    "RunInput",
    "run_locally",
    "run_on_ray",
    "score_on_ray",
]
