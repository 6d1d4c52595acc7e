"""Prompts defined once: name, version, English and Chinese instructions, typed examples, typed output.

Two kinds:

* `PromptSpec[In, Out]` asks the judge for JSON that its pydantic output model describes; `request()`
  attaches the model's JSON schema so backends that can constrain decoding do so, and `parse()` turns the
  text into `Out` or a `ParseFailure` that keeps the raw text.
* `ClassifyPromptSpec[In]` asks for one label of a fixed set; the judge answers from next-token
  probabilities (one forward pass), and `parse()` checks them and returns a `Verdict` (a probability per
  label, in the prompt's order) or a `ParseFailure`. A yes/no verdict holds when its positive label's
  probability is above `VERDICT_THRESHOLD`, the one threshold every metric uses.

Given the sample's `SampleBlock`, a prompt is rendered sample first (`prompts/layout.py`): one preamble, the
sample's texts, then the task, so that every request of a sample shares its prefix with the others on a
backend with prefix caching. Without one, or when the input names none of the sample's texts, the static
text (instruction, format, examples) comes first and the input last.
"""

from __future__ import annotations

import json
import logging
import math
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

from pydantic import BaseModel, ValidationError

from ascend_eval.choices import Method
from ascend_eval.errors import BACKEND_ERROR
from ascend_eval.models.base import (
    ClassifyRequest,
    ClassifyResult,
    GenerateRequest,
    GenerateResult,
    GenerationParams,
    Message,
    repeats,
)
from ascend_eval.prompts.calibration import calibration_inputs
from ascend_eval.prompts.json_text import (
    MAX_JSON_DEPTH,
    TOO_DEEP,
    JsonTooDeep,
    first_json,
    salvage_json,
    unique_items,
)
from ascend_eval.prompts.layout import PARTS, Part, SampleBlock, echoed, point, task_heading
from ascend_eval.text.language import Language

logger = logging.getLogger(__name__)

In = TypeVar("In", bound=BaseModel)
Out = TypeVar("Out", bound=BaseModel)


LOOP_CHARS = 96
"""A text cut at max_tokens whose last this-many characters (or more) are one run repeated at least three
times is a loop (what a backend without a loop guard, such as vLLM or an HTTP server, returns from a judge
that looped until its cap): it is read as a loop-stopped answer, not as a truncated one."""

VERDICT_THRESHOLD = 0.5
"""A yes/no verdict holds when p(positive label) is above this, strictly: a judge torn 50/50 does not count
as agreeing. RAGAS's hard 0/1 verdicts are the probabilities 0 and 1, so they read the same either side."""


MAX_WRITTEN_ITEMS = 128
"""The most items of one writer's answer that a metric reads (statements of an answer or reference, entities
of a text, generate mode's attributed sentences): each becomes at least one request, so a judge that floods
(100,000 statements for one sample became 65,000 verdict requests) is read for its first ones only, and the
sample's details say so ("items_cut"). Well above what a real answer gives: the long fidelity pairs' answers
of 170-300 words give 10-30 statements."""


class Written(list):  # type: ignore[type-arg]
    """The items a metric reads of a writer's answer (`first_items`): the first `MAX_WRITTEN_ITEMS`, with how
    many the judge wrote (`given`). A `MetricResult` whose details hold one that was cut says so."""

    def __init__(self, items: Sequence[Any], given: int | None = None) -> None:
        super().__init__(items)
        self.given = len(self) if given is None else given

    @property
    def cut(self) -> bool:
        return self.given > len(self)


def first_items(items: Sequence[Any], limit: int = MAX_WRITTEN_ITEMS) -> Written:
    """`items` up to `limit`, remembering how many there were.

    >>> kept = first_items(["a", "b", "c"], limit=2)
    >>> kept, kept.given, kept.cut
    (['a', 'b'], 3, True)
    """
    return Written(list(items[:limit]), given=len(items))


@dataclass(frozen=True)
class ParseFailure:
    """The judge's answer could not be read as the prompt's output. Scores become NaN with this reason."""

    raw: str
    reason: str


@dataclass(frozen=True)
class Verdict:
    """A `ClassifyPromptSpec` answer: the judge's probability for each label, in the prompt's label order.

    >>> v = Verdict(labels=("0", "1"), probs=(0.2, 0.8), positive="1")
    >>> v.p("0"), v.p_positive, v.holds, v.label
    (0.2, 0.8, True, '1')
    >>> Verdict(labels=("0", "1"), probs=(0.5, 0.5), positive="1").holds  # strictly above the threshold
    False
    """

    labels: tuple[str, ...]
    probs: tuple[float, ...]
    positive: str | None = None
    """The label that means "yes" for a yes/no prompt; None for a rating scale."""

    def p(self, label: str) -> float:
        """The probability of `label`."""
        return self.probs[self.labels.index(label)]

    @property
    def p_positive(self) -> float:
        """The probability of the positive label (yes/no prompts only)."""
        if self.positive is None:
            raise ValueError(f"labels {self.labels} have no positive label; read `probs` instead")
        return self.p(self.positive)

    @property
    def holds(self) -> bool:
        """The yes/no verdict: p(positive) > `VERDICT_THRESHOLD`."""
        return self.p_positive > VERDICT_THRESHOLD

    @property
    def label(self) -> str:
        """The most probable label (the first one on a tie)."""
        return self.labels[max(range(len(self.probs)), key=lambda i: (self.probs[i], -i))]


_LABELS = {
    "en": {"example": "Example", "input": "Input", "output": "Output", "now": "Now the real input."},
    "zh": {"example": "示例", "input": "输入", "output": "输出", "now": "下面是需要处理的输入。"},
}
_FORMAT = {
    "en": "Reply with one JSON object and nothing else. It must follow this JSON schema:",
    "zh": "只输出一个 JSON 对象，不要输出其他内容。它必须符合以下 JSON schema：",
}
_ANSWER_WITH = {
    "en": "Reply with exactly one of: {labels}.",
    "zh": "只回答以下之一：{labels}。",
}


def _dump(model: BaseModel) -> str:
    return json.dumps(model.model_dump(mode="json"), ensure_ascii=False)


def _laid_out(
    parts: list[str], laid: tuple[str, dict[str, object]] | None, inputs: BaseModel, language: Language
) -> tuple[Message, ...]:
    """The one message of a prompt: `parts` (instruction, format, then any examples), then the input.
    `laid` is what `layout.point` made of the input: sample first where it points into the sample, else
    task first, with the input as it is. "Now the real input" follows examples."""
    words = _LABELS[language]
    if laid is None:
        item = f"{words['input']}: {_dump(inputs)}\n{words['output']}:"
        return (Message("user", "\n\n".join([*parts, f"{words['now']}\n{item}"])),)
    head, data = laid
    item = f"{words['input']}: {json.dumps(data, ensure_ascii=False)}\n{words['output']}:"
    has_examples = len(parts) > 2  # the instruction and the format line come first
    task = "\n\n".join([*parts, f"{words['now']}\n{item}" if has_examples else item])
    return (Message("user", f"{head}{task_heading(language)}\n{task}"),)


@dataclass(frozen=True)
class PromptSpec(Generic[In, Out]):
    """A prompt whose answer is JSON described by `output`."""

    name: str
    version: int
    instruction: Mapping[Language, str]
    input: type[In]
    output: type[Out]
    examples: Mapping[Language, Sequence[tuple[In, Out]]] = field(default_factory=dict)
    max_tokens: int = 512
    sample_first: bool = True
    """Whether this prompt takes the sample-first layout when a run renders in it
    (`prompts/layout.py`); False keeps it task first in every layout, for prompts whose verdicts were
    measured worse sample first (docs/metrics.md, "Prompt layout")."""
    sample_first_parts: frozenset[Part] = PARTS
    """The sample's parts this prompt's input may point to sample first; an input that is only other
    parts keeps the task-first layout."""
    writes_from: tuple[str, ...] = ()
    """The input fields whose text the judge copies or rewrites into its answer (statements from an answer,
    entities from a text, a question from a response). Such a prompt carries all of its input's texts in
    its own request in every layout, never a pointer into the sample block: on long answers a judge asked
    to rewrite "the answer in the sample above" wrote that pointer back as its statements, and a good answer
    and its flawed twin scored alike (docs/metrics.md, "Prompt layout"). Its answer is also checked for
    such echoes (`parse`)."""

    def __post_init__(self) -> None:
        unknown = [f for f in self.writes_from if f not in self.input.model_fields]
        if unknown:
            raise ValueError(f"{self.tag}: writes_from names {unknown}, not fields of {self.input.__name__}")

    @property
    def tag(self) -> str:
        return f"{self.name}@{self.version}"

    @property
    def lays_out_sample_first(self) -> bool:
        """Whether a run in the sample-first layout renders this prompt after the sample block: a prompt
        that opted out (`sample_first`) or that writes from its input (`writes_from`) never is."""
        return self.sample_first and not self.writes_from

    def json_schema(self) -> str:
        return GenerationParams.schema_text(self.output.model_json_schema())

    def render(self, inputs: In, language: Language, block: SampleBlock | None = None) -> tuple[Message, ...]:
        words = _LABELS[language]
        parts = [self.instruction[language], f"{_FORMAT[language]}\n{self.json_schema()}"]
        for i, (x, y) in enumerate(self.examples.get(language, ()), start=1):
            parts.append(
                f"{words['example']} {i}\n{words['input']}: {_dump(x)}\n{words['output']}: {_dump(y)}"
            )
        data, shown = inputs.model_dump(mode="json"), block if self.lays_out_sample_first else None
        laid = point(data, shown, language, self.sample_first_parts)
        return _laid_out(parts, laid, inputs, language)

    def request(
        self,
        inputs: In,
        language: Language,
        block: SampleBlock | None = None,
        *,
        max_tokens: int | None = None,
    ) -> GenerateRequest:
        params = GenerationParams(max_tokens=max_tokens or self.max_tokens, json_schema=self.json_schema())
        return GenerateRequest(messages=self.render(inputs, language, block), params=params, tag=self.tag)

    def _salvage(self, text: str, how: str) -> Out | ParseFailure:
        """A looping answer, stopped by a loop guard (`TorchJudgeConfig.loop_guard`) or at max_tokens: its
        JSON up to the last complete list item, closed, with each list's repeated items kept once (the loop
        added nothing else)."""
        why = f"repetition: the judge repeated the same text over and over {how}; a larger judge loops less"
        failure = ParseFailure(text, why)
        data = salvage_json(text)
        if not isinstance(data, dict):
            return failure
        data = {k: unique_items(v) if isinstance(v, list) else v for k, v in data.items()}
        try:
            return self.output.model_validate(data)
        except ValidationError:
            return failure

    def parse(self, result: GenerateResult, *, question: str = "") -> Out | ParseFailure:
        """Read the judge's text as `Out`, tolerating code fences, prose around the JSON and full-width
        punctuation. Output cut at max_tokens is a failure, never parsed silently, unless it ends in a loop
        (`LOOP_CHARS`): then it is read like a loop-stopped answer. A prompt that writes from its input
        (`writes_from`) fails with an "echo: ..." reason when what it wrote repeats the layout's wording or
        is the sample's `question` itself (`layout.echoed`): that is the prompt read back, not an answer,
        and is never scored."""
        parsed = self._parse(result)
        if isinstance(parsed, ParseFailure) or not self.writes_from:
            return parsed
        why = echoed(written_texts(parsed), question)
        return parsed if why is None else ParseFailure(result.text, f"echo: {why}")

    def _parse(self, result: GenerateResult) -> Out | ParseFailure:
        if result.error is not None:
            return ParseFailure(result.text, f"{BACKEND_ERROR}: {result.error}")
        if result.finish_reason == "repetition":
            return self._salvage(result.text, "and was stopped")
        if result.finish_reason == "length":
            if repeats(result.text, LOOP_CHARS):
                return self._salvage(result.text, "until max_tokens")
            return ParseFailure(result.text, "truncated: the judge reached max_tokens; raise max_tokens")
        try:
            data = first_json(result.text)
        except JsonTooDeep:
            logger.warning(
                "A judge reply to %s (%d characters) nests brackets more than %d deep; it is not read as "
                "JSON, and what it answers scores NaN.",
                self.tag,
                len(result.text),
                MAX_JSON_DEPTH,
            )
            return ParseFailure(result.text, f"parse_failure: {TOO_DEEP}")
        if data is None:
            return ParseFailure(result.text, "parse_failure: no JSON object in the judge output")
        try:
            return self.output.model_validate(data)
        except ValidationError as e:
            first = e.errors()[0]
            where = ".".join(str(p) for p in first["loc"]) or "<root>"
            return ParseFailure(result.text, f"parse_failure: {where}: {first['msg']}")


@dataclass(frozen=True)
class ClassifyPromptSpec(Generic[In]):
    """A prompt whose answer is one of `labels`, read from next-token probabilities."""

    name: str
    version: int
    instruction: Mapping[Language, str]
    input: type[In]
    labels: tuple[str, ...]
    examples: Mapping[Language, Sequence[tuple[In, str]]] = field(default_factory=dict)
    answer_prefix: str = ""
    positive: str | None = None
    """For a yes/no prompt, the label meaning "yes" (`Verdict.holds` reads it); None for a rating scale."""
    anchors: Mapping[Language, Sequence[tuple[In, In]]] = field(default_factory=dict)
    """(yes-input, no-input) pairs per language that calibrate this yes/no prompt (`prompts/calibration.py`);
    a language without them is calibrated on the generic sentence anchors."""
    sample_first: bool = True
    """Whether this prompt takes the sample-first layout when a run renders in it
    (`prompts/layout.py`); False keeps it task first in every layout, for prompts whose verdicts were
    measured worse sample first (docs/metrics.md, "Prompt layout")."""
    sample_first_examples: bool = False
    """Whether the few-shot examples stay in the sample-first layout, after the task. No prompt keeps
    them: tried on context usefulness and the groundedness ratings (2026-12-06), examples between the
    sample and the input lost more fidelity pairs than none (`benchmarks/fidelity.py`'s experiments)."""
    sample_first_parts: frozenset[Part] = PARTS
    """The sample's parts this prompt's input may point to sample first (`PromptSpec.sample_first_parts`)."""

    def __post_init__(self) -> None:
        if self.positive is not None and self.positive not in self.labels:
            raise ValueError(f"{self.tag}: positive label {self.positive!r} is not one of {self.labels}")
        if self.anchors and self.positive is None:
            raise ValueError(f"{self.tag}: calibration anchors need a yes/no prompt (a positive label)")

    @property
    def tag(self) -> str:
        return f"{self.name}@{self.version}"

    @property
    def lays_out_sample_first(self) -> bool:
        """Whether a run in the sample-first layout renders this prompt after the sample block
        (`PromptSpec.lays_out_sample_first`): unless it opted out (`sample_first`)."""
        return self.sample_first

    def render(self, inputs: In, language: Language, block: SampleBlock | None = None) -> tuple[Message, ...]:
        words = _LABELS[language]
        answer_with = _ANSWER_WITH[language].format(labels=", ".join(self.labels))
        parts = [self.instruction[language], answer_with]
        data, shown = inputs.model_dump(mode="json"), block if self.sample_first else None
        laid = point(data, shown, language, self.sample_first_parts)
        if laid is None or self.sample_first_examples:  # sample first has none by default (prompts/layout.py)
            for i, (x, label) in enumerate(self.examples.get(language, ()), start=1):
                parts.append(
                    f"{words['example']} {i}\n{words['input']}: {_dump(x)}\n{words['output']}: {label}"
                )
        return _laid_out(parts, laid, inputs, language)

    def request(self, inputs: In, language: Language, block: SampleBlock | None = None) -> ClassifyRequest:
        return ClassifyRequest(
            messages=self.render(inputs, language, block),
            labels=self.labels,
            answer_prefix=self.answer_prefix,
            tag=self.tag,
        )

    def calibration_requests(
        self, method: Method, language: Language, sample_first: bool = False
    ) -> list[ClassifyRequest]:
        """The requests whose answers place this yes/no prompt's threshold (`prompts/calibration.py`),
        laid out by `anchor_requests`. Content-free inputs are always task first: a block of "N/A" is no
        sample."""
        inputs = calibration_inputs(self.input, method, language, self.anchors.get(language, ()))
        if method != "anchored":
            return [self.request(x, language) for x in inputs]
        return self.anchor_requests(inputs, language, sample_first)

    def anchor_requests(
        self, inputs: Sequence[In], language: Language, sample_first: bool = False
    ) -> list[ClassifyRequest]:
        """Requests about labelled anchor inputs, laid out as the requests they calibrate: task first, or
        with `sample_first` each after a block of its own texts (never the sample's: those would sit beside
        the anchors), without the few-shot examples, as a sample-first request has none."""
        if not (sample_first and self.sample_first):
            return [self.request(x, language) for x in inputs]
        return [self.request(x, language, SampleBlock.of_input(x.model_dump())) for x in inputs]

    def parse(self, result: ClassifyResult) -> Verdict | ParseFailure:
        """Check the judge's label probabilities and return them in this prompt's label order.

        Args:
            result: the judge's answer to a request of this prompt.

        Returns:
            A `Verdict`, or a `ParseFailure` (raw: the result as JSON) when the backend reported an error
            ("backend_error: ...") or the probabilities cannot be this prompt's answer ("parse_failure: ...":
            other labels than the prompt's, one probability per label missing, a negative or non-finite
            probability, or all of them zero). Labels in another order are reordered, not rejected.
        """
        raw = json.dumps({"labels": list(result.labels), "probs": list(result.probs)}, ensure_ascii=False)
        if result.error is not None:
            return ParseFailure(raw, f"{BACKEND_ERROR}: {result.error}")
        if sorted(result.labels) != sorted(self.labels):
            asked = f"{self.tag} asks for {self.labels}"
            return ParseFailure(raw, f"parse_failure: the judge answered labels {result.labels}; {asked}")
        if len(result.probs) != len(result.labels):
            return ParseFailure(
                raw, f"parse_failure: {len(result.probs)} probabilities for the {len(result.labels)} labels"
            )
        if not all(math.isfinite(p) and p >= 0 for p in result.probs) or not any(result.probs):
            return ParseFailure(raw, "parse_failure: label probabilities must be finite, >= 0 and not all 0")
        probs = tuple(float(result.probs[result.labels.index(label)]) for label in self.labels)
        return Verdict(labels=self.labels, probs=probs, positive=self.positive)

    def parse_all(self, results: Sequence[ClassifyResult]) -> list[Verdict] | ParseFailure:
        """`parse` of each result, in order, or the first failure: a score that needs every verdict is
        NaN when one of them cannot be read."""
        verdicts = []
        for result in results:
            parsed = self.parse(result)
            if isinstance(parsed, ParseFailure):
                return parsed
            verdicts.append(parsed)
        return verdicts


def yes_no_forms(
    name: str,
    task: Mapping[Language, str],
    reason_first: Mapping[Language, str],
    input: type[In],
    output: type[Out],
    examples: Mapping[Language, Sequence[tuple[In, Out]]],
    anchors: Mapping[Language, Sequence[tuple[In, In]]],
    *,
    sample_first: bool = True,
    labels: tuple[str, str] = ("0", "1"),
) -> tuple[ClassifyPromptSpec[In], PromptSpec[In, Out]]:
    """One yes/no judgement in its two forms: a `Classify` prompt `name` read from the probabilities of
    its `labels` (no, yes: "0" and "1" unless given; calibrated on `anchors`), and the JSON prompt
    `name_verdict` for the "generate" judge mode, whose `output` has `reason` then `verdict` (1 for yes)
    and whose instruction asks for the reason first. The same `examples` teach both: the classify form
    reads their verdicts as its labels; both take `sample_first` (`PromptSpec.sample_first`)."""
    no, yes = labels
    classify = ClassifyPromptSpec(
        name=name,
        version=1,
        instruction=dict(task),
        input=input,
        labels=(no, yes),
        positive=yes,
        examples={
            lang: [(x, yes if y.verdict else no) for x, y in pairs]  # type: ignore[attr-defined]
            for lang, pairs in examples.items()
        },
        anchors=anchors,
        sample_first=sample_first,
    )
    generate = PromptSpec(
        name=f"{name}_verdict",
        version=1,
        instruction={lang: task[lang] + reason_first[lang] for lang in task},
        input=input,
        output=output,
        examples=examples,
        max_tokens=256,
        sample_first=sample_first,
    )
    return classify, generate


def written_texts(answer: BaseModel) -> list[str]:
    """The texts a JSON answer wrote (every string in it, lists and nested objects included), less the
    reasons it gives, which may quote anything: what an echo check reads.

    >>> from ascend_eval.prompts.statements import Statements
    >>> written_texts(Statements(statements=["A.", "B."]))
    ['A.', 'B.']
    """

    def walk(value: object, key: str = "") -> Iterator[str]:
        if isinstance(value, str):
            if key != "reason":
                yield value
        elif isinstance(value, dict):
            for k, v in value.items():
                yield from walk(v, str(k))
        elif isinstance(value, list):
            for item in value:
                yield from walk(item, key)

    return list(walk(answer.model_dump(mode="json")))
