"""A judge that answers from recorded decisions instead of a model.

Used to test scoring and the engine with exact, known judge behaviour, to compare our scores with
another tool's given identical judge decisions, and to re-score a run from its trace without a model.
It implements the same `Judge` protocol as the model runtimes, so it exercises the same code paths.

Answers come from a table of recorded answers keyed by the request itself (requests are frozen and
hashable: the same prompt, inputs, language and parameters make an equal request), then from rules for
what the table does not hold. Whoever builds the table renders each recorded input with its prompt, so
nothing here reads a prompt's text back.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

from ascend_eval.models.base import (
    ClassifyRequest,
    ClassifyResult,
    GenerateRequest,
    GenerateResult,
)

GenerateAnswer = str | GenerateResult
ClassifyAnswer = Sequence[float] | str | ClassifyResult
GenerateRule = Callable[[GenerateRequest], GenerateAnswer]
ClassifyRule = Callable[[ClassifyRequest], ClassifyAnswer]
Recorded = Mapping[GenerateRequest | ClassifyRequest, GenerateAnswer | ClassifyAnswer]


def _no_rule(kind: str) -> Callable[..., object]:
    def fail(request: GenerateRequest | ClassifyRequest) -> object:
        tail = request.messages[-1].content[-160:] if request.messages else ""
        raise LookupError(
            f"ReplayJudge has no recorded answer for this {request.tag or 'untagged'} request and no {kind} "
            f"rule; add it to `recorded` or pass {kind}_rule=... (the prompt ends {tail!r})"
        )

    return fail


@dataclass
class ReplayJudge:
    """Answers `generate` and `classify` from `recorded`, else by calling the given rules on each request.

    Args:
        generate_rule: request -> the judge's text (or a full `GenerateResult`, e.g. one cut at
            max_tokens).
        classify_rule: request -> probabilities over `request.labels`, or the chosen label (probability
            1), or a full `ClassifyResult` (returned as it is, even over other labels).
        model_id: identity used in cache keys; give recorded decisions of different judges different ids.
        recorded: request -> its answer, in the forms the rules return; looked up before the rules.

    Attributes:
        calls: one entry per backend call: ("generate" | "classify", number of requests), so tests can
            see how the engine batched.
    """

    generate_rule: GenerateRule = field(default_factory=lambda: _no_rule("generate"))  # type: ignore[assignment]
    classify_rule: ClassifyRule = field(default_factory=lambda: _no_rule("classify"))  # type: ignore[assignment]
    model_id: str = "replay"
    recorded: Recorded = field(default_factory=dict)
    calls: list[tuple[str, int]] = field(default_factory=list)

    def generate(self, requests: Sequence[GenerateRequest]) -> list[GenerateResult]:
        self.calls.append(("generate", len(requests)))
        out = []
        for request in requests:
            answer = self.recorded[request] if request in self.recorded else self.generate_rule(request)
            out.append(answer if isinstance(answer, GenerateResult) else GenerateResult(str(answer), "stop"))
        return out

    def classify(self, requests: Sequence[ClassifyRequest]) -> list[ClassifyResult]:
        self.calls.append(("classify", len(requests)))
        out = []
        for request in requests:
            answer = self.recorded[request] if request in self.recorded else self.classify_rule(request)
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
