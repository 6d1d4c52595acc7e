"""Recorded judge outputs (`tests/data/judge/*.json`) served by a `ReplayJudge`.

Each case names a prompt by its tag, the language, the prompt's structured inputs (the fields of its input
model, never the rendered text) and what the judge answered. Loading renders every case's inputs with its
prompt into the very request a metric would send, so the `ReplayJudge` looks answers up by request and
nothing reads a prompt's text back. The format and where the outputs come from: `data/judge/README.md`.

A file holds clean cases and hand-broken variants of them. `recorded_judge("faithfulness")` answers every
clean case; `recorded_judge("faithfulness", variant="code-fenced")` answers the cases of that variant in
place of their clean ones and the clean ones elsewhere.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, replace
from functools import cache, cached_property
from pathlib import Path
from typing import Any

from ascend_eval.models.base import ClassifyRequest, ClassifyResult, GenerateRequest, GenerateResult
from ascend_eval.models.judge.replay import ReplayJudge
from ascend_eval.prompts import PROMPTS, ClassifyPromptSpec

DATA = Path(__file__).parent / "data" / "judge"

Request = GenerateRequest | ClassifyRequest
_CASE_KEYS = {"prompt", "language", "inputs", "params", "output", "variant", "fails", "changed", "note"}
_PARAMS = {"temperature", "seed"}


@dataclass(frozen=True)
class Case:
    """One recorded judge answer.

    Attributes:
        where: "<file>#<index>", for messages.
        prompt: the prompt's tag, `name@version`.
        language: the prompt language the request was rendered in.
        inputs: the prompt's input fields.
        params: generation parameters that differ from the prompt's defaults (a sampled request's
            temperature and seed).
        output: `{"text": ..., "finish_reason"?: ...}` for a JSON prompt; `{"probs": [...]}` over the
            prompt's labels, `{"label": ...}`, or `{"labels": [...], "probs": [...]}` (taken as it is, even
            over other labels) for a classify prompt.
        variant: None for a clean case; otherwise the name of the hand-broken variant it belongs to.
        fails: for a variant the prompt cannot read, the start of the `ParseFailure` reason.
        changed: for a variant that reads as another answer than its clean case (a judge slip).
    """

    where: str
    prompt: str
    language: str
    inputs: Mapping[str, Any]
    params: Mapping[str, Any]
    output: Mapping[str, Any]
    variant: str | None
    fails: str | None
    changed: bool

    @property
    def spec(self) -> Any:
        return PROMPTS[self.prompt]

    @cached_property
    def request(self) -> Request:
        """The request the prompt renders from these inputs: what a metric sends."""
        spec = self.spec
        model = spec.input.model_validate(self.inputs)
        if model.model_dump(mode="json") != dict(self.inputs):
            raise ValueError(f"{self.where}: inputs do not round-trip through {spec.input.__name__}")
        request = spec.request(model, self.language)
        if self.params:
            request = replace(request, params=replace(request.params, **self.params))
        return request

    def answer(self) -> GenerateResult | ClassifyResult | str | list[float]:
        """The judge's answer, in a form `ReplayJudge` returns."""
        out = self.output
        if isinstance(self.spec, ClassifyPromptSpec):
            if "labels" in out:
                return ClassifyResult(tuple(out["labels"]), tuple(float(p) for p in out["probs"]))
            return out["label"] if "label" in out else [float(p) for p in out["probs"]]
        return GenerateResult(out["text"], out.get("finish_reason", "stop"))

    def result(self) -> GenerateResult | ClassifyResult:
        """The answer as the judge's result for this case's request (what `parse` reads)."""
        request = self.request
        judge = ReplayJudge(recorded={request: self.answer()})
        if isinstance(request, ClassifyRequest):
            return judge.classify([request])[0]
        return judge.generate([request])[0]


def _case(where: str, raw: Mapping[str, Any]) -> Case:
    unknown = set(raw) - _CASE_KEYS
    missing = {"prompt", "language", "inputs", "output"} - set(raw)
    if unknown or missing:
        raise ValueError(f"{where}: unknown keys {sorted(unknown)}, missing keys {sorted(missing)}")
    if raw["prompt"] not in PROMPTS:
        raise ValueError(f"{where}: no prompt is tagged {raw['prompt']!r}; known: {sorted(PROMPTS)}")
    if set(raw.get("params", {})) - _PARAMS:
        raise ValueError(f"{where}: params may set only {sorted(_PARAMS)}")
    if ("fails" in raw or "changed" in raw) and "variant" not in raw:
        raise ValueError(f"{where}: only a variant can fail or change; a clean case must read as recorded")
    return Case(
        where=where,
        prompt=raw["prompt"],
        language=raw["language"],
        inputs=raw["inputs"],
        params=raw.get("params", {}),
        output=raw["output"],
        variant=raw.get("variant"),
        fails=raw.get("fails"),
        changed=bool(raw.get("changed", False)),
    )


@cache
def load_cases(name: str) -> tuple[Case, ...]:
    """Every case of `data/judge/<name>.json`, clean ones and variants, checked for consistency."""
    path = DATA / f"{name}.json"
    document = json.loads(path.read_text(encoding="utf-8"))
    if set(document) != {"about", "cases"}:
        raise ValueError(f"{path.name}: expected the keys 'about' and 'cases'")
    cases = tuple(_case(f"{path.name}#{i}", raw) for i, raw in enumerate(document["cases"]))
    clean: dict[Request, Case] = {}
    for case in cases:
        if case.variant is None:
            if case.request in clean:
                raise ValueError(f"{case.where} records the request of {clean[case.request].where} again")
            clean[case.request] = case
    for case in cases:
        if case.variant is not None and case.request not in clean:
            raise ValueError(f"{case.where}: variant {case.variant!r} has no clean case to break")
    return cases


def variants(name: str) -> set[str]:
    """The names of the variants `data/judge/<name>.json` holds."""
    return {c.variant for c in load_cases(name) if c.variant is not None}


def recordings(*names: str, variant: str | None = None) -> dict[Request, Any]:
    """Request -> answer for the clean cases of the named files, with `variant`'s cases in place of
    theirs.

    Raises:
        ValueError: `variant` is in none of the files, or two files record one request differently.
    """
    table: dict[Request, Any] = {}
    for name in names:
        for case in load_cases(name):
            if case.variant is None:
                request, answer = case.request, case.answer()
                if table.get(request, answer) != answer:
                    raise ValueError(f"{case.where} answers a request that another file answers otherwise")
                table[request] = answer
    if variant is not None:
        chosen = [c for name in names for c in load_cases(name) if c.variant == variant]
        if not chosen:
            known = sorted(set().union(*map(variants, names)))
            raise ValueError(f"No variant {variant!r} in {names}; they hold {known}")
        table |= {c.request: c.answer() for c in chosen}
    return table


def recorded_judge(*names: str, variant: str | None = None, model_id: str | None = None) -> ReplayJudge:
    """A `ReplayJudge` answering the recordings of the named files (see `recordings`) and nothing else."""
    label = "+".join(names) + (f"~{variant}" if variant else "")
    return ReplayJudge(recorded=recordings(*names, variant=variant), model_id=model_id or f"recorded:{label}")
