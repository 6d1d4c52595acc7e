"""The streaming engine: plans yield requests, the engine batches, caches and routes them."""

from ascend_eval.engine.cache import RequestCache, request_key
from ascend_eval.engine.scheduler import Backends, Engine, Plan, PlanError
from ascend_eval.engine.stats import Progress, RoundStats, StageStats

__all__ = [
    "Backends",
    "Engine",
    "Plan",
    "PlanError",
    "Progress",
    "RequestCache",
    "RoundStats",
    "StageStats",
    "request_key",
]
