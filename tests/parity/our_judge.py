"""Our side of the parity proof: a `ReplayJudge` and an `Embedder` answering our requests from a `Script`.

Requests are told apart by their prompt's name (`request.tag` is `name@version`), and their inputs are
read back out of the rendered prompt with `tests.conftest.sample_input`, so the answers go through the
same rendering and parsing as a real judge's.

Adding a metric: write a handler `(inputs: dict, script: Script, request) -> answer` for each of our prompts
it uses and register it with `@our_prompt("<prompt name>")`. A generate prompt answers the judge's raw
text; a classify prompt answers one of `request.labels` (or the probabilities over them). Most handlers
read only the inputs; answer_relevancy's reads the request's sampling seed.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
from numpy.typing import NDArray

from ascend_eval.models.base import ClassifyRequest, GenerateRequest
from ascend_eval.models.judge.replay import ReplayJudge
from ascend_eval.prompts.context_recall import CONTEXT_ATTRIBUTION
from ascend_eval.prompts.context_usefulness import (
    CONTEXT_USEFUL,
    CONTEXT_USEFUL_VERDICT,
    NOT_USEFUL,
    USEFUL,
)
from ascend_eval.prompts.correctness import CORRECTNESS
from ascend_eval.prompts.entities import ENTITIES
from ascend_eval.prompts.nli import STATEMENT_SUPPORT, SUPPORTED, UNSUPPORTED
from ascend_eval.prompts.nli_json import STATEMENT_VERDICTS
from ascend_eval.prompts.question_generation import RESPONSE_QUESTION
from ascend_eval.prompts.statements import STATEMENTS
from tests.conftest import sample_input
from tests.parity.script import NV_SCALES, Script, ScriptMiss, ragas_reading

Handler = Callable[[dict[str, Any], Script, GenerateRequest | ClassifyRequest], Any]

OUR_PROMPTS: dict[str, Handler] = {}
"""Our prompt name (the tag without `@version`) -> its handler."""


def our_prompt(name: str) -> Callable[[Handler], Handler]:
    def register(handler: Handler) -> Handler:
        if name in OUR_PROMPTS:
            raise ValueError(f"Two handlers for our prompt {name!r}.")
        OUR_PROMPTS[name] = handler
        return handler

    return register


class ScriptedJudge:
    """Builds the `ReplayJudge` and keeps what it saw.

    Attributes:
        judge: the `ReplayJudge` to pass to `ascend_eval.evaluate(judge=...)`.
        calls: prompt name -> requests answered.
        errors: every failure (unknown prompt, missing decision). The engine turns a failed backend call
            into NaN for the whole batch, so the parity test asserts this list is empty.
    """

    def __init__(self, script: Script, model_id: str = "parity-script") -> None:
        self.script = script
        self.calls: Counter[str] = Counter()
        self.errors: list[str] = []
        self.judge = ReplayJudge(generate_rule=self._answer, classify_rule=self._answer, model_id=model_id)

    def _answer(self, request: GenerateRequest | ClassifyRequest) -> Any:
        name = request.tag.partition("@")[0]
        handler = OUR_PROMPTS.get(name)
        try:
            if handler is None:
                raise LookupError(
                    f"No handler for our prompt {request.tag!r}; register one in tests/parity/our_judge.py."
                )
            answer = handler(sample_input(request), self.script, request)
        except Exception as e:  # the engine would NaN the whole batch: keep it for the test to see
            self.errors.append(f"{type(e).__name__}: {e}")
            raise
        self.calls[name] += 1
        return answer


class ScriptedEmbedder:
    """An `Embedder` returning the script's vectors as float32 rows (the protocol's dtype; the script
    only holds float32-exact values, so nothing is rounded).

    Unlike a real embedder the rows are not re-normalised here: the vectors must reach both libraries
    unchanged, and both compute the cosine with their own normalisation.
    """

    model_id = "parity-script-embedder"

    def __init__(self, script: Script) -> None:
        self.script = script
        self.calls: list[tuple[str, int]] = []
        self.errors: list[str] = []

    def embed(self, texts: Sequence[str], *, kind: str = "document") -> NDArray[np.float32]:
        self.calls.append((kind, len(texts)))
        try:
            rows = [self.script.embedding(t) for t in texts]
        except ScriptMiss as e:
            self.errors.append(str(e))
            raise
        return np.asarray(rows, dtype=np.float32).reshape(len(texts), -1)


# ---------------------------------------------------------------------------------------------------
# Handlers. faithfulness: STATEMENTS (generate, JSON), then STATEMENT_SUPPORT (classify "0"/"1") per
# statement, or with judge_mode="generate" one statement_verdicts request (JSON, RAGAS's procedure).
# ---------------------------------------------------------------------------------------------------


@our_prompt(STATEMENTS.name)
def _statements(inputs: dict[str, Any], script: Script, request: Any) -> str:
    return script.statements_text(inputs["question"], inputs["answer"])


@our_prompt(STATEMENT_SUPPORT.name)
def _support(inputs: dict[str, Any], script: Script, request: Any) -> str:
    return SUPPORTED if script.verdict(inputs["context"], inputs["statement"]) else UNSUPPORTED


@our_prompt(STATEMENT_VERDICTS.name)
def _verdicts(inputs: dict[str, Any], script: Script, request: Any) -> str:
    return script.verdicts_text(inputs["context"], inputs["statements"])


# answer_correctness: STATEMENTS for the response and the reference, then STATEMENT_SUPPORT per statement
# (each response statement against the reference, each reference statement against the response), or in
# generate mode one CORRECTNESS call: the same derivation as RAGAS's classifier.
@our_prompt(CORRECTNESS.name)
def _correctness(inputs: dict[str, Any], script: Script, request: Any) -> str:
    return script.correctness_text(
        inputs["question"], inputs["response_statements"], inputs["reference_statements"]
    )


# answer_relevancy: RESPONSE_QUESTION once per seed 0..strictness-1; seed i gets the script's generation i.
@our_prompt(RESPONSE_QUESTION.name)
def _question(inputs: dict[str, Any], script: Script, request: Any) -> str:
    return script.question_texts(inputs["response"])[request.params.seed]


# context_precision / context_utilization: one request per context, Classify or JSON.
@our_prompt(CONTEXT_USEFUL.name)
def _useful(inputs: dict[str, Any], script: Script, request: Any) -> str:
    return USEFUL if script.useful(inputs["question"], inputs["context"], inputs["answer"]) else NOT_USEFUL


@our_prompt(CONTEXT_USEFUL_VERDICT.name)
def _useful_verdict(inputs: dict[str, Any], script: Script, request: Any) -> str:
    return script.useful_text(inputs["question"], inputs["context"], inputs["answer"])


# context_recall: classify mode is STATEMENTS + STATEMENT_SUPPORT (above); generate mode is RAGAS's call.
@our_prompt(CONTEXT_ATTRIBUTION.name)
def _attribution(inputs: dict[str, Any], script: Script, request: Any) -> str:
    return script.attribution_text(inputs["question"], inputs["context"], inputs["answer"])


# context_entity_recall (extractor="judge").
@our_prompt(ENTITIES.name)
def _entities(inputs: dict[str, Any], script: Script, request: Any) -> str:
    return script.entities_text(inputs["text"])


# The NV metrics: two judges each, a Classify prompt (labels = the scale's digits) and its JSON form
# (`<name>_json`). Both answer the rating RAGAS reads from the judge's scripted free text. A text without
# a rating is answered verbatim to the JSON prompt (it fails to parse, as RAGAS's does); a Classify judge
# always rates, so it answers the lowest label and such cases are not compared in classify mode.
_NV_FIELDS = {
    "nv_accuracy": ("question", "answer", "reference_answer"),  # question, response, reference
    "nv_context_relevance": ("question", "context"),
    "nv_response_groundedness": ("context", "response"),
}


def _register_nv(metric: str, judge: int, kind: str) -> None:
    def handler(inputs: dict[str, Any], script: Script, request: Any) -> str:
        text = script.rating_text(metric, judge, [inputs[f] for f in _NV_FIELDS[metric]])
        reading = ragas_reading(metric, text)
        if kind == "classify":
            return str(NV_SCALES[metric][0] if reading is None else reading)
        return text if reading is None else json.dumps({"rating": reading})

    our_prompt(f"{metric}_judge{judge}" + ("_json" if kind == "generate" else ""))(handler)


for _metric in NV_SCALES:
    for _judge in (1, 2):
        for _kind in ("classify", "generate"):
            _register_nv(_metric, _judge, _kind)
