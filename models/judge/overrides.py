"""A judge whose generate requests decode with fixed settings (a job's `inference_params`, a
`ModelSpec`'s max_tokens / temperature / top_p) instead of each prompt's own."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

from ascend_eval.models.base import ClassifyRequest, ClassifyResult, GenerateRequest, GenerateResult, Judge
from ascend_eval.models.lazy import is_loaded

__all__ = ["InferenceParamsJudge"]


class InferenceParamsJudge:
    """`judge`, with `max_tokens`, `temperature` and `top_p` (those not None) replacing every generate
    request's own.

    The overrides are part of `model_id`, so cached answers produced with other settings are not reused.
    Classification requests (verdicts read from next-token probabilities) generate nothing, so these
    settings do not apply to them.

    >>> from ascend_eval.models.judge.replay import ReplayJudge
    >>> InferenceParamsJudge(ReplayJudge(model_id="j"), temperature=0.0, max_tokens=64).model_id
    'j+max_tokens=64,temperature=0.0'
    """

    def __init__(
        self,
        judge: Judge,
        *,
        max_tokens: int | None = None,
        temperature: float | None = None,
        top_p: float | None = None,
    ) -> None:
        self.judge = judge
        given = {"max_tokens": max_tokens, "temperature": temperature, "top_p": top_p}
        self.overrides = {k: v for k, v in given.items() if v is not None}
        tag = ",".join(f"{k}={v}" for k, v in sorted(self.overrides.items()))
        self.model_id = f"{judge.model_id}+{tag}" if tag else judge.model_id

    @property
    def loaded(self) -> bool:
        return is_loaded(self.judge)

    @property
    def max_concurrency(self) -> int:
        """The wrapped judge's (see `engine.lanes.dispatch_limits`)."""
        return int(getattr(self.judge, "max_concurrency", 1))

    @property
    def max_batch(self) -> int | None:
        return getattr(self.judge, "max_batch", None)

    def generate(self, requests: Sequence[GenerateRequest]) -> list[GenerateResult]:
        tuned = [
            dataclasses.replace(r, params=dataclasses.replace(r.params, **self.overrides)) for r in requests
        ]
        return self.judge.generate(tuned)

    def classify(self, requests: Sequence[ClassifyRequest]) -> list[ClassifyResult]:
        return self.judge.classify(requests)

    def close(self) -> None:
        close = getattr(self.judge, "close", None)
        if close is not None:
            close()

    def __repr__(self) -> str:
        return f"InferenceParamsJudge({self.judge!r}, {self.overrides})"
