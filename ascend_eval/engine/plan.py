"""What a plan is: the contract between the code that asks for model answers (the metrics, the RAG
pipeline, the test set writer) and the engine that answers them.

A plan is a generator. Each step it yields a list of requests and receives their answers, in the same
order; when it returns, its return value is its outcome. A plan the engine could not finish ends with a
`PlanError` instead.
"""

from __future__ import annotations

from collections.abc import Generator, Hashable, Sequence
from dataclasses import dataclass
from typing import Any

from ascend_eval.models.base import Request

Plan = Generator[Sequence[Request], list[Any], Any]
PlanId = Hashable


@dataclass(frozen=True)
class PlanError:
    """A plan that could not finish: a backend failed for one of its requests, or the plan raised."""

    reason: str
