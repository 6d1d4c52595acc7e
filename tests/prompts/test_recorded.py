"""Every recorded judge output (tests/data/judge/*.json) read by its prompt's `parse`.

Clean cases must read; a hand-broken variant must read exactly like the clean case it breaks (fences,
prose, full-width punctuation, numbers as text), or as another answer when it is marked `changed` (a judge
slip the metric has to handle), or fail with the reason it is marked with (cut at max_tokens, no JSON, off
the schema, other labels).
"""

from __future__ import annotations

import pytest

from ascend_eval.prompts import PROMPTS, ParseFailure
from tests.recorded_judge import DATA, Case, load_cases

FILES = sorted(p.stem for p in DATA.glob("*.json"))
CASES = [case for name in FILES for case in load_cases(name)]


def clean_of(case: Case) -> Case:
    name = case.where.partition("#")[0].removesuffix(".json")
    return next(c for c in load_cases(name) if c.variant is None and c.request == case.request)


def test_the_recordings_exist_and_cover_every_prompt():
    assert {"faithfulness", "answer_correctness", "nv_metrics"} <= set(FILES)
    assert {case.prompt for case in CASES} == set(PROMPTS)
    assert {case.language for case in CASES} == {"en", "zh"}


def test_the_breakages_the_style_guide_names_are_recorded():
    breakages = {case.variant for case in CASES}
    assert {"truncated", "code-fenced", "full-width", "wrong-labels"} <= breakages


@pytest.mark.parametrize("case", [c for c in CASES if c.variant is None], ids=lambda c: c.where)
def test_clean_cases_read(case):
    parsed = case.spec.parse(case.result())
    assert not isinstance(parsed, ParseFailure), f"{case.where}: {parsed.reason}"


@pytest.mark.parametrize("case", [c for c in CASES if c.variant is not None], ids=lambda c: c.where)
def test_broken_variants_read_as_marked(case):
    parsed = case.spec.parse(case.result())
    clean = case.spec.parse(clean_of(case).result())
    if case.fails is not None:
        assert isinstance(parsed, ParseFailure), f"{case.where} should fail with {case.fails!r}"
        assert parsed.reason.startswith(case.fails), parsed.reason
    elif case.changed:
        assert not isinstance(parsed, ParseFailure), f"{case.where}: {parsed.reason}"
        assert parsed != clean
    else:
        assert parsed == clean, f"{case.where} reads otherwise than its clean case"
