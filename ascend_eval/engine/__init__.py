"""The streaming engine: plans yield requests, the engine batches, caches and routes them."""

from ascend_eval.engine.backends import Backends
from ascend_eval.engine.cache import RequestCache, request_key
from ascend_eval.engine.engine import Engine
from ascend_eval.engine.plan import Plan, PlanError, PlanId
from ascend_eval.engine.stats import Progress, RoundStats, RunStats, StageStats

__all__ = [
    "Backends",
    "Engine",
    "Plan",
    "PlanError",
    "PlanId",
    "Progress",
    "RequestCache",
    "RoundStats",
    "RunStats",
    "StageStats",
    "request_key",
]
