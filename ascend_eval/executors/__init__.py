"""Executors other than the local engine: the same scoring, spread over more machines.

`score_on_ray` (`ascend_eval.executors.ray_data`) scores a dataset on a Ray cluster, one engine per actor,
and streams `ScoredSample`s back in dataset order, as the local executor does. Importing this package does
not import Ray; `score_on_ray` does, and says what to install when it is missing.
"""

from ascend_eval.executors.ray_data import RAY_INSTALL, RayRun, score_on_ray

__all__ = ["RAY_INSTALL", "RayRun", "score_on_ray"]
