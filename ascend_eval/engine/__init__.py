"""The batched engine: plans yield requests, the engine batches, caches and routes them."""

from ascend_eval.engine.cache import RequestCache, request_key
from ascend_eval.engine.scheduler import Backends, Engine, Plan, PlanError, RoundStats

__all__ = ["Backends", "Engine", "Plan", "PlanError", "RequestCache", "RoundStats", "request_key"]
