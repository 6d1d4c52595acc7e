"""Prompt rendering and parsing."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest

from ascend_eval.models.base import ClassifyResult, GenerateResult
from ascend_eval.prompts import (
    STATEMENT_SUPPORT,
    STATEMENTS,
    VERDICT_THRESHOLD,
    ParseFailure,
    StatementsInput,
    SupportInput,
    Verdict,
)
from ascend_eval.prompts.context_relevance import RELEVANCE_JUDGE_1


def test_static_text_first_sample_last():
    a = STATEMENTS.request(StatementsInput(question="q1", answer="answer one"), "en").messages[0].content
    b = STATEMENTS.request(StatementsInput(question="q2", answer="answer two"), "en").messages[0].content
    shared = next(i for i, (x, y) in enumerate(zip(a, b, strict=False)) if x != y)
    assert a[:shared] == b[:shared]
    assert "answer one" not in a[:shared] and a.endswith("Output:")
    assert len(a) - shared < 60  # only the sample's own input follows the shared prefix


def test_request_carries_schema_and_tag():
    request = STATEMENTS.request(StatementsInput(question="q", answer="a"), "zh")
    schema = json.loads(request.params.json_schema)
    assert schema["properties"]["statements"]["type"] == "array"
    assert request.tag == "statements@1"
    assert "回答" in request.messages[0].content and "示例" in request.messages[0].content


def test_languages_render_differently_for_classify():
    en = STATEMENT_SUPPORT.request(SupportInput(context="c", statement="s"), "en")
    zh = STATEMENT_SUPPORT.request(SupportInput(context="c", statement="s"), "zh")
    assert en.labels == zh.labels == ("0", "1")
    assert "故宫" in zh.messages[0].content and "Eiffel" in en.messages[0].content


def parse(text, finish="stop"):
    return STATEMENTS.parse(GenerateResult(text, finish))


def test_parse_tolerates_fences_prose_and_full_width_punctuation():
    assert parse('```json\n{"statements": ["a"]}\n```').statements == ["a"]
    assert parse('Here you go: {"statements": ["a", "b"]} Hope it helps').statements == ["a", "b"]
    assert parse("{“statements”：［“长江很长。”，“长江在中国。”］}").statements == [
        "长江很长。",
        "长江在中国。",
    ]


def test_parse_failures_keep_raw_text_and_say_why():
    bad = parse('{"statements": "not a list"}')
    assert isinstance(bad, ParseFailure) and bad.raw == '{"statements": "not a list"}'
    assert bad.reason.startswith("parse_failure: statements")
    assert parse("nothing").reason.startswith("parse_failure: no JSON")
    assert parse('{"statements": ["a"]}', finish="length").reason.startswith("truncated")


def test_braces_inside_strings_do_not_confuse_extraction():
    assert parse('{"statements": ["use {x} and [y]"]}').statements == ["use {x} and [y]"]


# ClassifyPromptSpec.parse: label probabilities in, a Verdict (or the reason it is not one) out.


def classify(labels, probs, error=None):
    return STATEMENT_SUPPORT.parse(ClassifyResult(tuple(labels), tuple(probs), error=error))


def test_classify_parse_reads_the_positive_label_with_the_one_threshold():
    verdict = classify(("0", "1"), (0.3, 0.7))
    assert isinstance(verdict, Verdict) and verdict.positive == "1"
    assert (verdict.p_positive, verdict.p("0"), verdict.holds, verdict.label) == (0.7, 0.3, True, "1")
    assert classify(("0", "1"), (VERDICT_THRESHOLD, VERDICT_THRESHOLD)).holds is False  # strictly above


def test_classify_parse_puts_labels_in_the_prompts_order():
    verdict = classify(("1", "0"), (0.8, 0.2))
    assert verdict.labels == ("0", "1") and verdict.probs == (0.2, 0.8) and verdict.holds


@pytest.mark.parametrize(
    ("labels", "probs", "error", "reason"),
    [
        (("0", "1"), (), "timeout after 3 retries", "backend_error: timeout after 3 retries"),
        (("no", "yes"), (0.1, 0.9), None, "parse_failure: the judge answered labels ('no', 'yes')"),
        (("0", "1", "2"), (0.1, 0.2, 0.7), None, "parse_failure: the judge answered labels"),
        (("0", "1"), (0.9,), None, "parse_failure: 1 probabilities for the 2 labels"),
        (("0", "1"), (-0.1, 1.1), None, "parse_failure: label probabilities"),
        (("0", "1"), (float("nan"), 1.0), None, "parse_failure: label probabilities"),
        (("0", "1"), (0.0, 0.0), None, "parse_failure: label probabilities"),
    ],
)
def test_classify_parse_failures_say_why_and_keep_the_answer(labels, probs, error, reason):
    failure = classify(labels, probs, error)
    assert isinstance(failure, ParseFailure) and failure.reason.startswith(reason)
    kept = json.loads(failure.raw)
    assert kept["labels"] == list(labels) and len(kept["probs"]) == len(probs)


def test_parse_all_stops_at_the_first_failure():
    good, bad = ClassifyResult(("0", "1"), (0.4, 0.6)), ClassifyResult(("0", "1"), (), error="oom")
    assert [v.p_positive for v in STATEMENT_SUPPORT.parse_all([good, good])] == [0.6, 0.6]
    assert STATEMENT_SUPPORT.parse_all([good, bad, good]).reason == "backend_error: oom"


def test_rating_prompts_have_no_positive_label():
    verdict = RELEVANCE_JUDGE_1.classify.parse(ClassifyResult(("0", "1", "2"), (0.2, 0.3, 0.5)))
    assert verdict.positive is None and verdict.label == "2"
    with pytest.raises(ValueError, match="no positive label"):
        _ = verdict.holds


def test_a_positive_label_must_be_one_of_the_labels():
    with pytest.raises(ValueError, match="positive label 'yes'"):
        replace(STATEMENT_SUPPORT, positive="yes")


def test_generate_parse_reports_backend_errors():
    failure = STATEMENTS.parse(GenerateResult.failed("connection refused"))
    assert failure.reason == "backend_error: connection refused"


def test_every_prompt_is_registered_once_by_its_tag():
    import ascend_eval.prompts as prompts
    from ascend_eval.prompts import PROMPTS

    assert all(tag == spec.tag for tag, spec in PROMPTS.items())
    assert STATEMENTS in PROMPTS.values() and STATEMENT_SUPPORT in PROMPTS.values()
    assert len(PROMPTS) == 23  # 11 prompts, and 6 rating judges in both a classify and a JSON form
    with pytest.raises(ValueError, match="Two prompts are tagged 'statements@1'"):
        prompts.prompts_by_tag(STATEMENTS, replace(STATEMENTS, instruction={"en": "other", "zh": "其他"}))


def test_a_loop_stopped_answer_keeps_its_complete_items_once():
    """The loop guard stops a judge that keeps repeating a statement; what it wrote before the loop, and
    the repeated item once, is the answer; a loop before any complete item is a failure with its reason."""
    from ascend_eval.prompts.statements import STATEMENTS

    looped = GenerateResult(
        text='{"statements": ["Paris is in France.", "It is big.", "It is big.", "It is big.", "It is b',
        finish_reason="repetition",
    )
    assert STATEMENTS.parse(looped).statements == ["Paris is in France.", "It is big."]
    hopeless = GenerateResult(
        text='{"statements": ["&&&&&&&&&&&&&&&&&&&&&&&&&&&&&&', finish_reason="repetition"
    )
    failure = STATEMENTS.parse(hopeless)
    assert failure.reason.startswith("repetition:")
    # The same text cut by max_tokens is still a failure: only a loop is known to add nothing more.
    assert STATEMENTS.parse(replace(looped, finish_reason="length")).reason.startswith("truncated")


def test_an_answer_that_looped_until_max_tokens_reads_like_a_loop_stopped_one():
    """vLLM and HTTP servers have no loop guard: a judge that loops runs to its cap and comes back with
    finish_reason "length". Its looping tail shows what it was, so it is read as the guard would have."""
    from ascend_eval.prompts.statements import STATEMENTS

    head = '{"statements": ["Paris is in France.", "It is big.", '
    looped_to_cap = GenerateResult(text=head + '"It is big.", ' * 12 + '"It is', finish_reason="length")
    assert STATEMENTS.parse(looped_to_cap).statements == ["Paris is in France.", "It is big."]
    zh = GenerateResult(text='{"statements": ["巴黎在法国。", ' + '"它很大。", ' * 30, finish_reason="length")
    assert STATEMENTS.parse(zh).statements == ["巴黎在法国。", "它很大。"]
    hopeless = STATEMENTS.parse(GenerateResult(text='{"statements": ["' + "&" * 200, finish_reason="length"))
    assert hopeless.reason.startswith("repetition: the judge repeated the same text over and over until")
    # a long answer cut at the cap that does not loop stays truncated
    varied = head + ", ".join(f'"Fact number {k} holds."' for k in range(20))
    cut = STATEMENTS.parse(GenerateResult(text=varied, finish_reason="length"))
    assert cut.reason.startswith("truncated")
