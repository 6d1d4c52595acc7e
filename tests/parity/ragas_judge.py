"""A RAGAS LLM and a RAGAS embeddings class that answer from a `Script` instead of a model.

`ScriptedRagasLLM` receives each fully rendered RAGAS prompt, reads back which prompt it is and its input
JSON, and answers with the script's decision in exactly the JSON shape the prompt's pydantic output model
expects. Nothing here knows a sample's position: decisions are found by content, as a real judge sees it.

A legacy RAGAS `PydanticPrompt` renders as (see `ragas/prompt/pydantic_prompt.py`, `to_string`):

    <instruction>
    Please return the output in a JSON format that complies with the following schema as specified in
    JSON Schema:
    <json.dumps(output_model.model_json_schema())>Do not use single quotes ...
    --------EXAMPLES----------- ... Example i / Input: ... / Output: ...
    -----------------------------

    Now perform the same with the following input
    input: <input_model.model_dump_json(indent=4)>
    Output: <one trailing space>

So a prompt is identified by its output schema's `title` plus the keys of its input JSON (the same output
model is not reused across prompts with the same inputs). The input JSON is the last block; any prompt
text nested inside it (the output fixer quotes the original prompt) is JSON-escaped, so the markers below,
which contain real newlines, only match at the outer level.

Adding a metric: write a handler `(inputs: dict, judge: ScriptedRagasLLM) -> str` for each RAGAS prompt the
metric sends (a list of n texts when RAGAS asks for n generations) and register it with
`@ragas_prompt(OutputTitle, *input_keys)`; plain-text prompts (the NV metrics have no JSON) register with
`@ragas_text_prompt(name, predicate)` and receive the whole prompt text.
"""

from __future__ import annotations

import json
import os
import re
import string
from collections import Counter
from collections.abc import Callable, Sequence
from typing import Any

# RAGAS sends usage analytics unless told not to (the flag is read once, at the first event).
os.environ.setdefault("RAGAS_DO_NOT_TRACK", "true")

from langchain_core.outputs import Generation, LLMResult
from ragas.embeddings.base import BaseRagasEmbeddings
from ragas.llms.base import BaseRagasLLM
from ragas.metrics._nv_metrics import AnswerAccuracy as RagasAnswerAccuracy
from ragas.metrics._nv_metrics import ContextRelevance as RagasContextRelevance
from ragas.metrics._nv_metrics import ResponseGroundedness as RagasResponseGroundedness
from ragas.run_config import RunConfig

from tests.parity.script import Script, ScriptMiss

SCHEMA_MARK = "following schema as specified in JSON Schema:\n"
INPUT_MARK = "\nNow perform the same with the following input\ninput: "


def fast_run_config() -> RunConfig:
    """One attempt per call and no backoff: the script answers instantly or not at all, and a retry would
    only hide a bug (and sleep up to `max_wait` seconds per attempt)."""
    return RunConfig(timeout=60, max_retries=1, max_wait=1, max_workers=16)


class UnknownPrompt(LookupError):
    """A prompt no handler claims: register one for the metric being added."""


def read_prompt(text: str) -> tuple[str | None, dict[str, Any] | None]:
    """The output schema title and the input JSON of a rendered RAGAS `PydanticPrompt`, or None for
    either part the text lacks (plain-text prompts have neither)."""
    title = None
    at = text.find(SCHEMA_MARK)
    if at != -1:
        schema, _ = json.JSONDecoder().raw_decode(text, at + len(SCHEMA_MARK))
        title = schema.get("title")
    inputs = None
    at = text.rfind(INPUT_MARK)
    if at != -1:
        inputs, _ = json.JSONDecoder().raw_decode(text, at + len(INPUT_MARK))
    return title, inputs


JsonHandler = Callable[[dict[str, Any], "ScriptedRagasLLM"], "str | list[str]"]
TextHandler = Callable[[str, "ScriptedRagasLLM"], "str | list[str]"]

JSON_PROMPTS: dict[tuple[str, frozenset[str]], tuple[str, JsonHandler]] = {}
"""(output schema title, input keys) -> (a readable name, the handler)."""
TEXT_PROMPTS: list[tuple[str, Callable[[str], bool], TextHandler]] = []
"""(a readable name, does this plain-text prompt match?, the handler)."""


def ragas_prompt(
    title: str, *input_keys: str, name: str | None = None
) -> Callable[[JsonHandler], JsonHandler]:
    """Register the handler of the RAGAS JSON prompt with this output model title and these input keys."""

    def register(handler: JsonHandler) -> JsonHandler:
        key = (title, frozenset(input_keys))
        if key in JSON_PROMPTS:
            raise ValueError(f"Two handlers for the RAGAS prompt {key}.")
        JSON_PROMPTS[key] = (name or handler.__name__, handler)
        return handler

    return register


def ragas_text_prompt(name: str, matches: Callable[[str], bool]) -> Callable[[TextHandler], TextHandler]:
    """Register the handler of a plain-text RAGAS prompt (no JSON schema), chosen by `matches(text)`."""

    def register(handler: TextHandler) -> TextHandler:
        TEXT_PROMPTS.append((name, matches, handler))
        return handler

    return register


class ScriptedRagasLLM(BaseRagasLLM):
    """A `BaseRagasLLM` whose every answer comes from the script.

    Attributes:
        calls: handler name -> number of prompts answered (e.g. {"statement_generator": 35, ...}),
            including those the output fixer re-asks.
        errors: every failure inside the judge (unknown prompt, missing decision). RAGAS turns these into
            NaN scores, so the parity test asserts this list is empty.
    """

    def __init__(self, script: Script, run_config: RunConfig | None = None) -> None:
        super().__init__(
            run_config=run_config or fast_run_config(), multiple_completion_supported=True, cache=None
        )
        self.script = script
        self.calls: Counter[str] = Counter()
        self.generations: Counter[tuple[str, int]] = Counter()
        """(handler name, n) -> LLM calls asking for n generations (a fixer's inner call is not one)."""
        self.errors: list[str] = []

    def answer(self, text: str) -> str | list[str]:
        """The judge's output for one rendered prompt."""
        return self._dispatch(text)[1]

    def _dispatch(self, text: str) -> tuple[str, str | list[str]]:
        title, inputs = read_prompt(text)
        if title is not None and inputs is not None:
            found = JSON_PROMPTS.get((title, frozenset(inputs)))
            if found is not None:
                name, handler = found
                self.calls[name] += 1
                return name, handler(inputs, self)
        for name, matches, text_handler in TEXT_PROMPTS:
            if matches(text):
                self.calls[name] += 1
                return name, text_handler(text, self)
        raise UnknownPrompt(
            f"No handler for the RAGAS prompt with output model {title!r} and input keys "
            f"{sorted(inputs or {})}; register one in tests/parity/ragas_judge.py. "
            f"Prompt starts: {text[:120]!r}"
        )

    def _result(self, prompt: Any, n: int) -> LLMResult:
        try:
            name, out = self._dispatch(prompt.to_string())
        except Exception as e:  # RAGAS would turn it into a quiet NaN: keep it for the test to see
            self.errors.append(f"{type(e).__name__}: {e}")
            raise
        self.generations[(name, n)] += 1
        texts = [out] * n if isinstance(out, str) else list(out)
        if len(texts) != n:
            message = f"a handler returned {len(texts)} generations for n={n}"
            self.errors.append(message)
            raise ValueError(message)
        return LLMResult(generations=[[Generation(text=t) for t in texts]])

    def generate_text(
        self,
        prompt: Any,
        n: int = 1,
        temperature: float = 0.01,
        stop: list[str] | None = None,
        callbacks: Any = None,
    ) -> LLMResult:
        return self._result(prompt, n)

    async def agenerate_text(
        self,
        prompt: Any,
        n: int = 1,
        temperature: float | None = 0.01,
        stop: list[str] | None = None,
        callbacks: Any = None,
    ) -> LLMResult:
        return self._result(prompt, n)

    def is_finished(self, response: LLMResult) -> bool:
        # A scripted answer is complete by construction (no max_tokens cut).
        return True

    def __repr__(self) -> str:
        return f"ScriptedRagasLLM(calls={dict(self.calls)})"


class ScriptedRagasEmbeddings(BaseRagasEmbeddings):
    """Legacy RAGAS embeddings (`BaseRagasEmbeddings`) returning the script's vectors.

    The legacy `AnswerSimilarity` has no `aembed_text`, so it awaits `embed_text(text)`, which goes
    `embed_texts([text])` -> `aembed_documents([text])` (one call per text). The other three methods are
    there for metrics that embed queries (answer_relevancy: `embed_query`, `embed_documents`).
    """

    def __init__(self, script: Script) -> None:
        super().__init__(cache=None)
        self.script = script
        self.set_run_config(fast_run_config())
        self.calls: Counter[str] = Counter()
        self.errors: list[str] = []

    def _vectors(self, method: str, texts: Sequence[str]) -> list[list[float]]:
        self.calls[method] += 1
        try:
            return [self.script.embedding(t) for t in texts]
        except ScriptMiss as e:
            self.errors.append(str(e))
            raise

    def embed_query(self, text: str) -> list[float]:
        return self._vectors("embed_query", [text])[0]

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        return self._vectors("embed_documents", texts)

    async def aembed_query(self, text: str) -> list[float]:
        return self._vectors("aembed_query", [text])[0]

    async def aembed_documents(self, texts: list[str]) -> list[list[float]]:
        return self._vectors("aembed_documents", texts)


# ---------------------------------------------------------------------------------------------------
# Handlers. faithfulness: StatementGeneratorPrompt, then NLIStatementPrompt (ragas/metrics/_faithfulness.py).
# ---------------------------------------------------------------------------------------------------


@ragas_prompt("StatementGeneratorOutput", "question", "answer", name="statement_generator")
def _statements(inputs: dict[str, Any], judge: ScriptedRagasLLM) -> str:
    return judge.script.statements_text(inputs["question"], inputs["answer"])


@ragas_prompt("NLIStatementOutput", "context", "statements", name="nli_statements")
def _nli(inputs: dict[str, Any], judge: ScriptedRagasLLM) -> str:
    return judge.script.verdicts_text(inputs["context"], inputs["statements"])


@ragas_prompt("StringIO", "output_string", "prompt_value", name="fix_output_format")
def _fix(inputs: dict[str, Any], judge: ScriptedRagasLLM) -> str:
    """RAGAS's `FixOutputFormat` (one extra call after a failed parse): the judge is shown its bad output
    and the original prompt. It answers the script's `fix` entry if there is one, else the same decision
    again, wrapped as `StringIO` (`{"text": ...}`)."""
    bad = inputs["output_string"]
    fixed = judge.script.find("fix", (bad,))
    if fixed is None:
        again = judge.answer(inputs["prompt_value"])
        # When one of n generations failed, the judge repeats that one.
        fixed = again if isinstance(again, str) else (bad if bad in again else again[0])
    return json.dumps({"text": fixed}, ensure_ascii=False)


# ---------------------------------------------------------------------------------------------------
# answer_correctness (ragas/metrics/_answer_correctness.py): StatementGeneratorPrompt for the response and
# the reference, then CorrectnessClassifier once (TP/FP/FN lists), derived from the per-statement verdicts.
# ---------------------------------------------------------------------------------------------------


@ragas_prompt("ClassificationWithReason", "question", "answer", "ground_truth", name="correctness_classifier")
def _correctness(inputs: dict[str, Any], judge: ScriptedRagasLLM) -> str:
    return judge.script.correctness_text(inputs["question"], inputs["answer"], inputs["ground_truth"])


# answer_relevancy (ragas/metrics/_answer_relevance.py): ResponseRelevancePrompt, one call with n=strictness.
@ragas_prompt("ResponseRelevanceOutput", "response", name="response_relevance")
def _questions(inputs: dict[str, Any], judge: ScriptedRagasLLM) -> list[str]:
    return judge.script.question_texts(inputs["response"])


# context_precision / context_utilization (ragas/metrics/_context_precision.py): ContextPrecisionPrompt
# once per retrieved context, "answer" being the reference or the response.
@ragas_prompt("Verification", "question", "context", "answer", name="context_precision")
def _useful(inputs: dict[str, Any], judge: ScriptedRagasLLM) -> str:
    return judge.script.useful_text(inputs["question"], inputs["context"], inputs["answer"])


# context_recall (ragas/metrics/_context_recall.py): ContextRecallClassificationPrompt, one call over the
# reference ("answer") and the joined contexts.
@ragas_prompt("ContextRecallClassifications", "question", "context", "answer", name="context_recall")
def _attribution(inputs: dict[str, Any], judge: ScriptedRagasLLM) -> str:
    return judge.script.attribution_text(inputs["question"], inputs["context"], inputs["answer"])


# context_entity_recall (ragas/metrics/_context_entities_recall.py): ExtractEntitiesPrompt for the reference,
# then for the joined contexts.
@ragas_prompt("EntitiesList", "text", name="entities")
def _entities(inputs: dict[str, Any], judge: ScriptedRagasLLM) -> str:
    return judge.script.entities_text(inputs["text"])


# ---------------------------------------------------------------------------------------------------
# The NV metrics (ragas/metrics/_nv_metrics.py) format plain-text templates (class attributes) and call
# `agenerate_text` directly. Each template becomes a regular expression that reads its fields back.
# ---------------------------------------------------------------------------------------------------


def _template_fields(template: str) -> Callable[[str], dict[str, str] | None]:
    parts = []
    for literal, field_name, _, _ in string.Formatter().parse(template):
        parts.append(re.escape(literal))
        if field_name is not None:
            parts.append(f"(?P<{field_name}>.*?)")
    pattern = re.compile("".join(parts), re.DOTALL)

    def fields(text: str) -> dict[str, str] | None:
        match = pattern.fullmatch(text)
        return None if match is None else match.groupdict()

    return fields


def _nv_inputs(metric: str, fields: dict[str, str]) -> tuple[str, ...]:
    if metric == "nv_accuracy":
        # The template's slots are named by position; the labels say which text fills which.
        by_label = {
            fields["answer0"]: fields["sentence_inference"],
            fields["answer1"]: fields["sentence_true"],
        }
        return fields["query"], by_label["User Answer"], by_label["Reference Answer"]
    if metric == "nv_context_relevance":
        return fields["query"], fields["context"]
    return fields["context"], fields["response"]


def _register_nv(metric: str, judge_number: int, template: str) -> None:
    fields = _template_fields(template)

    def handler(text: str, judge: ScriptedRagasLLM) -> str:
        found = fields(text)
        assert found is not None
        return judge.script.rating_text(metric, judge_number, _nv_inputs(metric, found))

    ragas_text_prompt(f"{metric}_judge{judge_number}", lambda text: fields(text) is not None)(handler)


for _metric, _cls, _templates in (
    ("nv_accuracy", RagasAnswerAccuracy, ("template_accuracy1", "template_accuracy2")),
    ("nv_context_relevance", RagasContextRelevance, ("template_relevance1", "template_relevance2")),
    (
        "nv_response_groundedness",
        RagasResponseGroundedness,
        ("template_groundedness1", "template_groundedness2"),
    ),
):
    for _number, _attribute in enumerate(_templates, start=1):
        _register_nv(_metric, _number, getattr(_cls, _attribute))
