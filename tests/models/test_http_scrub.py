"""The API key never leaves the HTTP client: a server that echoes it back, whole or cut, at any offset of
an error body, a 200 body, a parse error or a logprob token, leaves no part of it in what the client
returns or logs."""

from __future__ import annotations

import json
import logging
import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ascend_eval.models.base import ClassifyRequest, GenerateRequest, Message
from ascend_eval.models.http import EndpointClient
from ascend_eval.models.judge.openai import OpenAIJudge
from ascend_eval.models.scrub import EXCERPT_CHARS
from tests.models.loopback_server import CHAT, Reply, chat_reply, endpoint_config

KEY = "sk-3f9a1c7e5b2d4a6f8e0c9b1d"
# What a leak looks like: any 4 characters of the key in a row. The filler text shares none of them.
LEAK_RUN = 4
OFFSETS = range(EXCERPT_CHARS - 50, EXCERPT_CHARS + 51)  # the key across the excerpt's cut


def leaks(text: str, key: str = KEY, run: int = LEAK_RUN) -> list[str]:
    """The runs of `run` characters of `key` that occur in `text`."""
    return sorted({key[i : i + run] for i in range(len(key) - run + 1) if key[i : i + run] in text})


def logged(caplog: pytest.LogCaptureFixture) -> str:
    """What was logged, object addresses masked: httpcore's DEBUG records name objects by address
    ("at 0x7ff2bc7e5..."), whose hex digits can hold 4 characters of this hex key in a row by chance."""
    return re.sub(r"0x[0-9a-fA-F]+", "0x?", caplog.text)


def padded(offset: int, secret: str = KEY) -> str:
    """`secret` at character `offset` of a long body of filler that shares no character with the key."""
    return "x" * offset + secret + " y" * 200


@pytest.fixture
def client(loopback, monkeypatch):
    monkeypatch.setenv("SCRUB_TEST_KEY", KEY)
    with EndpointClient(endpoint_config(loopback, api_key_env="SCRUB_TEST_KEY", max_retries=0)) as c:
        yield c


@pytest.mark.parametrize("status", [400, 500, 200])
def test_a_key_echoed_at_any_offset_of_a_body_is_scrubbed_before_the_cut(loopback, client, status, caplog):
    caplog.set_level(logging.DEBUG)
    # 200: a body that is not JSON (quoted in the "not valid JSON" error); others: the error excerpt.
    loopback.route(CHAT, lambda body: Reply(padded(body["offset"]), status=status))
    outcomes = client.map("/chat/completions", [{"offset": o} for o in OFFSETS])
    for offset, outcome in zip(OFFSETS, outcomes, strict=True):
        message = str(outcome)
        assert ("not valid JSON" if status == 200 else f"HTTP {status}") in message
        assert leaks(message) == [], f"offset {offset}: {message!r}"
    assert leaks(logged(caplog)) == []


def test_a_key_in_a_json_error_message_is_scrubbed(loopback, client):
    loopback.route(
        CHAT, lambda body: Reply({"error": {"message": padded(body["offset"], f"Bearer {KEY}")}}, status=401)
    )
    outcomes = client.map("/chat/completions", [{"offset": o} for o in OFFSETS])
    assert all("HTTP 401" in str(o) and leaks(str(o)) == [] for o in outcomes)


@pytest.mark.parametrize("cut", [4, 5, 9, len(KEY) - 1])
def test_a_body_cut_inside_the_key_leaves_no_part_of_it(loopback, client, cut):
    # The server's own cut: truncated JSON (a dropped connection, a proxy limit) that ends inside the key.
    loopback.route(CHAT, lambda body: Reply('{"error": "' + "x" * body["offset"] + KEY[:cut]))
    outcomes = client.map("/chat/completions", [{"offset": o} for o in (10, 200, 290, 296)])
    assert all("not valid JSON" in str(o) and leaks(str(o)) == [] for o in outcomes)


def test_a_key_in_the_keys_of_an_unexpected_body_is_scrubbed(loopback, client):
    loopback.enqueue(CHAT, {KEY: 1, "x" * 400 + KEY: 2})

    def parse(data):
        raise ValueError(f"no 'choices' in the response; its keys are {sorted(data)}")

    [outcome] = client.map("/chat/completions", [{}], parse)
    assert "unexpected response body" in str(outcome) and leaks(str(outcome)) == []
    assert len(str(outcome)) < 2 * EXCERPT_CHARS + 200


def test_a_parse_callback_that_fails_oddly_fails_only_its_request(loopback, client):
    loopback.route(CHAT, lambda body: {"n": body["n"]})

    def parse(data):
        if data["n"] == 1:
            raise OverflowError(f"int too large to convert to float near {KEY}")
        return data["n"]

    ok, odd = client.map("/chat/completions", [{"n": 0}, {"n": 1}], parse)
    assert ok == 0
    assert "OverflowError" in str(odd) and leaks(str(odd)) == []


def test_text_returned_from_a_200_body_is_scrubbed(loopback, monkeypatch):
    monkeypatch.setenv("SCRUB_TEST_KEY", KEY)
    judge = OpenAIJudge(endpoint_config(loopback, api_key_env="SCRUB_TEST_KEY"))

    def reply(body):
        text = body["messages"][-1]["content"]
        if text == "?":  # a classify request: a token that is the key, and the key as the reply
            return chat_reply(KEY, top_logprobs=[(KEY, -0.1), ("Sure", -1.0)])
        offset, cut = (int(v) for v in text.split())
        return chat_reply(padded(offset, KEY[:cut]), finish_reason="length")

    loopback.route(CHAT, reply)
    asks = [
        GenerateRequest((Message("user", f"{o} {c}"),)) for o in (0, 75, 80, 300) for c in (len(KEY), 12, 8)
    ]
    for result in judge.generate(asks):
        assert result.error is None and leaks(result.text, run=8) == [], result.text
    [verdict] = judge.classify([ClassifyRequest((Message("user", "?"),), ("Yes", "No"))])
    assert "no label among the top-2" in verdict.error and leaks(verdict.error) == []
    [texty] = OpenAIJudge(judge.config, classify_mode="text").classify(
        [ClassifyRequest((Message("user", "?"),), ("Yes", "No"))]
    )
    assert "starts with none of the labels" in texty.error and leaks(texty.error) == []
    judge.close()


def test_scrubber_rules():
    from ascend_eval.models.scrub import Scrubber

    scrub = Scrubber(KEY)
    assert scrub.text(f"a {KEY} b") == "a *** b"
    assert scrub.text(json.dumps({"k": 'q"' + KEY})) == json.dumps({"k": 'q"***'})
    assert scrub.text("tail " + KEY[:4]) == "tail ***"  # a prefix where a text ends: a cut key
    assert scrub.text(KEY[-4:] + " head") == "*** head"  # a suffix where a text starts
    assert scrub.text("mid " + KEY[5:13] + " mid") == "mid *** mid"  # 8 characters anywhere
    assert scrub.text("mid " + KEY[:5] + " mid") == "mid " + KEY[:5] + " mid"  # too short to tell
    assert scrub.data({"a": [KEY, 1.5, {KEY: None}]}) == {"a": ["***", 1.5, {"***": None}]}
    quoted = Scrubber('ab"c\\d/e&f<g>h')
    for form in ('ab\\"c\\\\d\\/e&f<g>h', 'ab\\"c\\\\d/e&f<g>h', "ab&quot;c\\d/e&amp;f&lt;g&gt;h"):
        assert quoted.text(f"[{form}]") == "[***]", form
    assert Scrubber(None).text(KEY) == KEY


# ---- property: no cut, ours or the server's, leaves 4 characters of the key in a row ------------------

# Keys from printable ASCII without "*" (the redaction mark); filler that shares no character with them,
# so that every key character left in an excerpt can only be a piece of the key. The text before the key
# has no whitespace (which the excerpt squeezes), so its length is where the key starts: often near the cut.
_KEYS = st.text(
    st.characters(min_codepoint=33, max_codepoint=126, exclude_characters="*"), min_size=12, max_size=80
)
_OFFSETS = st.one_of(st.integers(EXCERPT_CHARS - 12, EXCERPT_CHARS + 2), st.integers(0, 420))
_AFTER = st.text(st.sampled_from("中文 é\n\t"), max_size=200)


def _longest_key_run(text: str, key: str) -> int:
    chars, longest, run = set(key) - {"*"}, 0, 0
    for c in text:
        run = run + 1 if c in chars else 0
        longest = max(longest, run)
    return longest


@settings(max_examples=400, deadline=None)
@given(key=_KEYS, offset=_OFFSETS, after=_AFTER, data=st.data())
def test_no_four_key_characters_in_a_row_survive_a_clip(key, offset, after, data):
    from ascend_eval.models.scrub import Scrubber, clip_excerpt

    before = data.draw(st.text(st.sampled_from("中文é"), min_size=offset, max_size=offset))

    # What a server may send: the key whole, a part of 8 or more characters, or the key cut by the
    # server itself (a body that ends inside it, or starts inside it).
    piece = data.draw(st.sampled_from(["whole", "part", "cut_end", "cut_start"]))
    if piece == "whole":
        body = before + key + after
    elif piece == "part":
        start = data.draw(st.integers(0, len(key) - 8))
        body = before + key[start : data.draw(st.integers(start + 8, len(key)))] + after
    elif piece == "cut_end":
        body = before + key[: data.draw(st.integers(4, len(key)))]
    else:
        body = key[-data.draw(st.integers(4, len(key))) :] + after
    assert _longest_key_run(clip_excerpt(body, Scrubber(key)), key) < 4


def test_a_key_in_the_status_lines_reason_phrase_is_scrubbed(loopback, client, caplog):
    # httpx logs every response's status line at INFO, reason phrase included (shown with `-v`).
    caplog.set_level(logging.INFO)
    loopback.enqueue(CHAT, Reply("denied", status=401, reason=f"Invalid key {KEY}"))
    [outcome] = client.map("/chat/completions", [{}])
    assert "HTTP 401" in str(outcome) and "HTTP Request: POST" in caplog.text
    assert leaks(logged(caplog)) == [] and leaks(str(outcome)) == []


def test_model_discovery_scrubs_the_listed_name_and_the_reason_phrase(loopback, monkeypatch, caplog):
    from ascend_eval.models.http import discover_model

    caplog.set_level(logging.INFO)
    monkeypatch.setenv("SCRUB_TEST_KEY", KEY)
    loopback.enqueue("/v1/models", Reply({"data": [{"id": f"judge-{KEY}"}]}, reason=f"OK {KEY}"))
    name = discover_model(loopback.url, api_key_env="SCRUB_TEST_KEY")
    assert name == "judge-***" and "HTTP Request: GET" in caplog.text and leaks(logged(caplog)) == []
