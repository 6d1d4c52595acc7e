"""Prompt rendering and parsing."""

from __future__ import annotations

import json

from ascend_eval.models.base import GenerateResult
from ascend_eval.prompts import STATEMENT_SUPPORT, STATEMENTS, ParseFailure, StatementsInput, SupportInput


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
