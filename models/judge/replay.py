"""A judge that answers from recorded decisions instead of a model.

Used to test scoring and the engine with exact, known judge behaviour, to compare our scores with
another tool's given identical judge decisions, and to re-score a run from its trace without a model.
It implements the same `Judge` protocol as the model runtimes, so it exercises the same code paths.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from ascend_eval.models.base import (
    ClassifyRequest,
    ClassifyResult,
    GenerateRequest,
    GenerateResult,
)

GenerateRule = Callable[[GenerateRequest], "str | GenerateResult"]
ClassifyRule = Callable[[ClassifyRequest], "Sequence[float] | str | ClassifyResult"]


def _no_rule(kind: str) -> Callable[..., object]:
    def fail(request: object) -> object:
        raise LookupError(f"ReplayJudge has no {kind} rule; pass {kind}=... when building it")

    return fail


@dataclass
class ReplayJudge:
    """Answers `generate` and `classify` by calling the given rules on each request.

    Args:
        generate: request -> the judge's text (or a full `GenerateResult`, e.g. one cut at max_tokens).
        classify: request -> probabilities over `request.labels`, or the chosen label (probability 1),
            or a full `ClassifyResult`.
        model_id: identity used in cache keys; give recorded decisions of different judges different ids.

    Attributes:
        calls: one entry per backend call: ("generate" | "classify", number of requests), so tests can
            see how the engine batched.
    """

    generate_rule: GenerateRule = field(default_factory=lambda: _no_rule("generate"))  # type: ignore[assignment]
    classify_rule: ClassifyRule = field(default_factory=lambda: _no_rule("classify"))  # type: ignore[assignment]
    model_id: str = "replay"
    calls: list[tuple[str, int]] = field(default_factory=list)

    def generate(self, requests: Sequence[GenerateRequest]) -> list[GenerateResult]:
        self.calls.append(("generate", len(requests)))
        out = []
        for request in requests:
            answer = self.generate_rule(request)
            out.append(answer if isinstance(answer, GenerateResult) else GenerateResult(str(answer), "stop"))
        return out

    def classify(self, requests: Sequence[ClassifyRequest]) -> list[ClassifyResult]:
        self.calls.append(("classify", len(requests)))
        out = []
        for request in requests:
            answer = self.classify_rule(request)
            if isinstance(answer, ClassifyResult):
                out.append(answer)
            elif isinstance(answer, str):
                if answer not in request.labels:
                    raise ValueError(f"replayed label {answer!r} is not one of {request.labels}")
                probs = tuple(float(label == answer) for label in request.labels)
                out.append(ClassifyResult(request.labels, probs))
            else:
                probs = tuple(float(p) for p in answer)
                if len(probs) != len(request.labels):
                    raise ValueError(f"replayed {len(probs)} probabilities for labels {request.labels}")
                out.append(ClassifyResult(request.labels, probs))
        return out
