"""`OpenAIJudge` and the shared HTTP client against a real loopback server: request bodies, results,
retries, per-request failures, concurrency and the handling of the API key."""

from __future__ import annotations

import json
import logging
import math
import os
import socket
import time

import pytest

from ascend_eval.models.base import (
    ClassifyRequest,
    GenerateRequest,
    GenerationParams,
    Judge,
    Message,
)
from ascend_eval.models.errors import ConfigError
from ascend_eval.models.http import EndpointClient, EndpointConfig
from ascend_eval.models.judge.openai import OpenAIJudge, label_probs
from tests.models.loopback_server import CHAT, Reply, chat_reply, endpoint_config

SECRET = "sk-loopback-7f3a9c1e5b2d4a6f8e0c"


def ask(text: str, params: GenerationParams | None = None) -> GenerateRequest:
    return GenerateRequest(messages=(Message("user", text),), params=params or GenerationParams())


def yes_no(
    text: str = "Is it?", answer_prefix: str = "", labels: tuple[str, ...] = ("Yes", "No")
) -> ClassifyRequest:
    return ClassifyRequest(messages=(Message("user", text),), labels=labels, answer_prefix=answer_prefix)


def last_user_text(body: dict) -> str:
    return body["messages"][-1]["content"]


# ---- generate ----------------------------------------------------------------------------------------


def test_is_a_judge_with_a_model_id(loopback):
    judge = OpenAIJudge(endpoint_config(loopback, model="qwen2.5-7b"))
    assert isinstance(judge, Judge)
    assert judge.model_id == f"openai:qwen2.5-7b@{loopback.url}/v1"
    assert judge.generate([]) == [] and judge.classify([]) == []


def test_generate_keeps_input_order_under_parallelism(loopback):
    # Later requests answer sooner, so completion order is roughly the reverse of input order.
    n = 12
    loopback.route(
        CHAT,
        lambda body: Reply(
            chat_reply("echo " + last_user_text(body)), delay=0.02 * (n - int(last_user_text(body)[1:]))
        ),
    )
    judge = OpenAIJudge(endpoint_config(loopback, parallelism=4))
    results = judge.generate([ask(f"q{i}") for i in range(n)])
    assert [r.text for r in results] == [f"echo q{i}" for i in range(n)]
    assert all(r.finish_reason == "stop" and r.error is None for r in results)
    assert 1 < loopback.peak_concurrency <= 4


def test_generate_request_body(loopback):
    loopback.route(CHAT, lambda body: chat_reply("{}"))
    schema = {"type": "object", "properties": {"verdict": {"type": "integer"}}, "required": ["verdict"]}
    params = GenerationParams(
        max_tokens=64,
        temperature=0.7,
        top_p=0.9,
        seed=11,
        stop=("\n\n",),
        json_schema=GenerationParams.schema_text(schema),
    )
    request = GenerateRequest(
        messages=(Message("system", "Be strict."), Message("user", "Judge this.")), params=params
    )
    OpenAIJudge(endpoint_config(loopback, model="m1")).generate([request, ask("plain")])

    with_schema, plain = sorted(loopback.bodies(CHAT), key=lambda b: len(b["messages"]), reverse=True)
    assert with_schema == {
        "model": "m1",
        "messages": [{"role": "system", "content": "Be strict."}, {"role": "user", "content": "Judge this."}],
        "max_tokens": 64,
        "temperature": 0.7,
        "top_p": 0.9,
        "seed": 11,
        "stop": ["\n\n"],
        "response_format": {
            "type": "json_schema",
            "json_schema": {"name": "output", "schema": schema, "strict": True},
        },
    }
    assert "response_format" not in plain and "stop" not in plain
    assert plain["max_tokens"] == 512 and plain["temperature"] == 0.0
    headers = loopback.requests[0].headers
    assert headers["content-type"] == "application/json"
    assert "authorization" not in headers  # no key configured, no header


def test_generate_usage_and_finish_reasons(loopback):
    loopback.route(
        CHAT,
        lambda body: {
            "cut": chat_reply(
                '{"verdict": 1, "reas', finish_reason="length", prompt_tokens=30, completion_tokens=8
            ),
            "done": chat_reply("fine", prompt_tokens=12, completion_tokens=2),
            "filtered": chat_reply("", finish_reason="content_filter"),
            "thinking": chat_reply(None, finish_reason="length", completion_tokens=8),
        }[last_user_text(body)],
    )
    cut, done, filtered, thinking = OpenAIJudge(endpoint_config(loopback)).generate(
        [ask("cut"), ask("done"), ask("filtered"), ask("thinking")]
    )
    assert (cut.text, cut.finish_reason, cut.prompt_tokens, cut.completion_tokens) == (
        '{"verdict": 1, "reas',
        "length",
        30,
        8,
    )
    assert (done.text, done.finish_reason, done.prompt_tokens, done.completion_tokens) == (
        "fine",
        "stop",
        12,
        2,
    )
    assert filtered.finish_reason == "stop" and filtered.error is None
    assert (thinking.text, thinking.finish_reason) == ("", "length")


def test_missing_usage_counts_zero(loopback):
    reply = chat_reply("ok")
    del reply["usage"]
    loopback.enqueue(CHAT, reply)
    [result] = OpenAIJudge(endpoint_config(loopback)).generate([ask("x")])
    assert (result.text, result.prompt_tokens, result.completion_tokens) == ("ok", 0, 0)


# ---- retries and per-request failures ---------------------------------------------------------------


def test_timeouts_are_retried_then_fail_only_that_request(loopback):
    loopback.route(
        CHAT,
        lambda body: (
            Reply(chat_reply("late"), delay=1.0) if last_user_text(body) == "slow" else chat_reply("on time")
        ),
    )
    judge = OpenAIJudge(endpoint_config(loopback, request_timeout=0.2, max_retries=1))
    start = time.monotonic()
    fast, slow, fast2 = judge.generate([ask("fast"), ask("slow"), ask("fast")])
    assert time.monotonic() - start < 1.5
    assert fast.text == fast2.text == "on time"
    assert slow.finish_reason == "error" and slow.text == ""
    assert "timed out" in slow.error and "after 2 attempt(s)" in slow.error
    assert [last_user_text(b) for b in loopback.bodies(CHAT)].count("slow") == 2


def test_429_retry_after_is_honoured(loopback):
    loopback.enqueue(
        CHAT, Reply({"error": "slow down"}, status=429, headers={"Retry-After": "0.3"}), chat_reply("ok")
    )
    judge = OpenAIJudge(endpoint_config(loopback, backoff_base=0.001, backoff_max=5.0))
    start = time.monotonic()
    [result] = judge.generate([ask("x")])
    elapsed = time.monotonic() - start
    assert result.text == "ok"
    assert 0.28 <= elapsed < 2.0
    assert len(loopback.requests) == 2


def test_retry_after_is_capped_by_backoff_max(loopback):
    loopback.enqueue(CHAT, Reply("busy", status=503, headers={"Retry-After": "120"}), chat_reply("ok"))
    start = time.monotonic()
    [result] = OpenAIJudge(endpoint_config(loopback, backoff_max=0.1)).generate([ask("x")])
    assert result.text == "ok" and time.monotonic() - start < 1.0


def test_500_is_retried(loopback):
    loopback.enqueue(CHAT, Reply("oops", status=500), Reply("oops", status=502), chat_reply("ok"))
    client = EndpointClient(endpoint_config(loopback, max_retries=2))
    assert client.post("/chat/completions", {"model": "m"})["choices"][0]["message"]["content"] == "ok"
    assert len(loopback.requests) == 3 and client.retries == 2


def test_500_until_retries_run_out(loopback):
    loopback.route(CHAT, lambda body: Reply({"error": {"message": "CUDA out of memory"}}, status=500))
    [result] = OpenAIJudge(endpoint_config(loopback, max_retries=2)).generate([ask("x")])
    assert len(loopback.requests) == 3
    assert (
        "after 3 attempt(s)" in result.error
        and "HTTP 500" in result.error
        and "CUDA out of memory" in result.error
    )


def test_400_is_not_retried_and_fails_only_that_request(loopback):
    def reply(body):
        if last_user_text(body) == "too long":
            return Reply(
                {"error": {"message": "maximum context length is 4096 tokens" + " pad" * 200}}, status=400
            )
        return chat_reply("ok")

    loopback.route(CHAT, reply)
    ok, bad = OpenAIJudge(endpoint_config(loopback)).generate([ask("fine"), ask("too long")])
    assert ok.text == "ok"
    assert bad.finish_reason == "error"
    assert "HTTP 400" in bad.error and "maximum context length is 4096 tokens" in bad.error
    assert len(bad.error) < 600  # an excerpt of the body, not all of it
    assert [last_user_text(b) for b in loopback.bodies(CHAT)].count("too long") == 1


def test_connection_refused_is_retried_then_fails(loopback):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    client = EndpointClient(
        EndpointConfig(url=f"http://127.0.0.1:{port}", model="m", max_retries=1, backoff_base=0.01)
    )
    [outcome] = client.map("/chat/completions", [{"model": "m"}])
    assert outcome.status is None and outcome.attempts == 2 and "ConnectError" in str(outcome)


@pytest.mark.parametrize(
    ("reply", "reason"),
    [
        (Reply('{"choices": [{"message": '), "not valid JSON"),
        (Reply({"object": "chat.completion", "error": "model warming up"}), "no 'choices' in the response"),
        (Reply({"choices": [{"message": {"role": "assistant", "content": 42}}]}), "no text content"),
        (Reply({"choices": [{"index": 0}]}), "has no 'message'"),
        (Reply([1, 2]), "expected a JSON object"),
        (Reply("<html><title>Sign in</title></html>", content_type="text/html"), "It is an HTML page"),
    ],
)
def test_malformed_bodies_fail_without_retry(loopback, reply, reason):
    loopback.enqueue(CHAT, reply)
    [result] = OpenAIJudge(endpoint_config(loopback)).generate([ask("x")])
    assert result.finish_reason == "error" and reason in result.error
    assert len(loopback.requests) == 1


def test_malformed_body_with_a_5xx_is_retried(loopback):
    loopback.enqueue(CHAT, Reply("<html>Bad Gateway</html>", status=502), chat_reply("ok"))
    [result] = OpenAIJudge(endpoint_config(loopback)).generate([ask("x")])
    assert result.text == "ok" and len(loopback.requests) == 2


# ---- classify ---------------------------------------------------------------------------------------


def test_classify_with_logprobs_digits(loopback):
    loopback.route(
        CHAT,
        lambda body: chat_reply(
            "1",
            prompt_tokens=40,
            top_logprobs=[("1", math.log(0.6)), ("0", math.log(0.3)), ("The", math.log(0.1))],
        ),
    )
    judge = OpenAIJudge(endpoint_config(loopback, model="m2"), top_logprobs=5)
    [result] = judge.classify([yes_no(labels=("0", "1"))])
    assert result.error is None and result.labels == ("0", "1")
    assert result.probs == pytest.approx((1 / 3, 2 / 3))
    assert result.label == "1" and result.prompt_tokens == 40
    [body] = loopback.bodies(CHAT)
    assert body == {
        "model": "m2",
        "messages": [{"role": "user", "content": "Is it?"}],
        "max_tokens": 1,
        "temperature": 0.0,
        "logprobs": True,
        "top_logprobs": 5,
    }


def test_classify_yes_no_sums_variants_of_each_label(loopback):
    top = [
        (" Yes", math.log(0.4)),
        ("Yes", math.log(0.2)),
        ("Y", math.log(0.1)),  # a prefix of "Yes" only
        (" No", math.log(0.1)),
        ("\n", math.log(0.1)),
        ("Maybe", math.log(0.1)),
    ]
    loopback.route(CHAT, lambda body: chat_reply(" Yes", top_logprobs=top))
    [result] = OpenAIJudge(endpoint_config(loopback)).classify([yes_no()])
    assert result.probs == pytest.approx((0.7 / 0.8, 0.1 / 0.8))


def test_label_probs_token_mapping():
    # Equal beats prefix: "1" is the label "1", not a prefix of "10".
    assert label_probs([("1", 0.0)], ("1", "10")) == [1.0, 0.0]
    # "N" is a prefix of both "No" and "Neutral": it counts for neither.
    assert label_probs([("N", 0.0), ("Yes", math.log(0.5))], ("Yes", "No", "Neutral")) == [1.0, 0.0, 0.0]
    # Chinese labels: the first character alone is a unique prefix.
    assert label_probs([("不", math.log(0.3)), ("支持", math.log(0.1))], ("支持", "不支持")) == pytest.approx(
        [0.25, 0.75]
    )
    assert label_probs([(" ", 0.0), ("", 0.0)], ("Yes", "No")) is None


def test_classify_answer_prefix_uses_the_vllm_extension(loopback):
    loopback.route(CHAT, lambda body: chat_reply("1", top_logprobs=[("1", -0.5), ("0", -1.5)]))
    [result] = OpenAIJudge(endpoint_config(loopback)).classify(
        [yes_no(answer_prefix='{"verdict": ', labels=("0", "1"))]
    )
    assert result.error is None
    [body] = loopback.bodies(CHAT)
    assert body["messages"][-1] == {"role": "assistant", "content": '{"verdict": '}
    assert body["continue_final_message"] is True and body["add_generation_prompt"] is False


def test_classify_no_label_in_top_n(loopback):
    loopback.route(CHAT, lambda body: chat_reply("The", top_logprobs=[("The", -0.1), ("I", -2.0)]))
    [result] = OpenAIJudge(endpoint_config(loopback)).classify([yes_no()])
    assert result.probs == () and result.labels == ("Yes", "No")
    assert result.error.startswith("no label among the top-2 next tokens: ['The', 'I']")


def test_classify_without_logprobs_points_to_text_mode(loopback):
    loopback.route(CHAT, lambda body: chat_reply("Yes"))  # a server that ignores logprobs=true
    [result] = OpenAIJudge(endpoint_config(loopback)).classify([yes_no()])
    assert result.probs == () and "no logprobs" in result.error and "classify_mode='text'" in result.error


def test_classify_keeps_order_and_isolates_failures(loopback):
    def reply(body):
        text = last_user_text(body)
        if text == "broken":
            return Reply("nope", status=422)
        p = float(text)
        return Reply(
            chat_reply("Yes", top_logprobs=[("Yes", math.log(p)), ("No", math.log(1 - p))]), delay=0.01
        )

    loopback.route(CHAT, reply)
    results = OpenAIJudge(endpoint_config(loopback)).classify(
        [yes_no("0.9"), yes_no("broken"), yes_no("0.2"), yes_no("0.5")]
    )
    assert [r.probs[0] if r.probs else None for r in results] == pytest.approx([0.9, None, 0.2, 0.5])
    assert "HTTP 422" in results[1].error


def test_classify_text_mode(loopback):
    replies = {
        "a": " Yes, because the context says so.",
        "b": "No",
        "c": "Verdict: Yes",
        "d": "Maybe",
        "e": "10",
    }
    loopback.route(CHAT, lambda body: chat_reply(replies[last_user_text(body)], prompt_tokens=9))
    judge = OpenAIJudge(endpoint_config(loopback), classify_mode="text")
    a, b, c, d = judge.classify(
        [yes_no("a"), yes_no("b"), yes_no("c", answer_prefix="Verdict:"), yes_no("d")]
    )
    assert (a.probs, b.probs, c.probs) == ((1.0, 0.0), (0.0, 1.0), (1.0, 0.0))
    assert a.prompt_tokens == 9
    assert d.probs == () and "starts with none of the labels" in d.error
    [e] = judge.classify([yes_no("e", labels=("1", "10"))])
    assert e.label == "10"
    body = next(b for b in loopback.bodies(CHAT) if last_user_text(b) == "c")
    assert body["max_tokens"] == 8 and body["temperature"] == 0.0
    assert "logprobs" not in body and "continue_final_message" not in body


def test_judge_settings_are_validated(loopback):
    with pytest.raises(ConfigError, match="classify_mode"):
        OpenAIJudge(endpoint_config(loopback), classify_mode="logits")  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match="top_logprobs"):
        OpenAIJudge(endpoint_config(loopback), top_logprobs=0)


# ---- configuration ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("given", "normalised"),
    [
        ("http://127.0.0.1:8000", "http://127.0.0.1:8000/v1"),
        ("http://127.0.0.1:8000/", "http://127.0.0.1:8000/v1"),
        ("https://api.openai.com/v1/", "https://api.openai.com/v1"),
        ("http://gateway:9000/mindie", "http://gateway:9000/mindie/v1"),
    ],
)
def test_url_is_normalised(given, normalised):
    config = EndpointConfig(url=given, model="m")
    assert config.url == normalised and config.endpoint("/embeddings") == normalised + "/embeddings"


@pytest.mark.parametrize(
    ("settings", "message"),
    [
        ({"url": "127.0.0.1:8000"}, "http"),
        ({"url": "http://127.0.0.1:8000/v1/chat/completions"}, "Drop '/chat/completions'"),
        ({"url": "http://user:pw@127.0.0.1:8000"}, "credentials"),
        ({"model": " "}, "model"),
        ({"request_timeout": 0}, "request_timeout"),
        ({"max_retries": -1}, "max_retries"),
        ({"parallelism": 0}, "parallelism"),
        ({"backoff_base": 2.0, "backoff_max": 1.0}, "backoff"),
        ({"api_key_env": "A", "api_key_file": "/tmp/k"}, "only one"),
        ({"api_key_file": "/nonexistent/key"}, "cannot be read"),
    ],
)
def test_invalid_config_is_refused(settings, message):
    with pytest.raises(ConfigError, match=message):
        EndpointConfig(**{"url": "http://127.0.0.1:8000", "model": "m", **settings})


# ---- the API key ------------------------------------------------------------------------------------


def assert_no_secret(*texts: str) -> None:
    for text in texts:
        assert SECRET not in text


def test_key_from_env_is_sent_and_never_shown(loopback, monkeypatch, caplog):
    caplog.set_level(logging.DEBUG)
    monkeypatch.setenv("LOOPBACK_API_KEY", SECRET)

    def echo_auth(body):
        # A careless server that echoes the credentials back in its error body.
        status = {"401": 401, "500": 500}.get(last_user_text(body))
        return (
            Reply({"error": f"bad credentials Bearer {SECRET}"}, status=status)
            if status
            else chat_reply("ok")
        )

    loopback.route(CHAT, echo_auth)
    config = endpoint_config(loopback, api_key_env="LOOPBACK_API_KEY", max_retries=1)
    judge = OpenAIJudge(config)
    ok, unauthorised, server_error = judge.generate([ask("fine"), ask("401"), ask("500")])

    assert ok.text == "ok"
    assert {r.headers["authorization"] for r in loopback.requests} == {f"Bearer {SECRET}"}
    assert "HTTP 401" in unauthorised.error and "Check the API key" in unauthorised.error
    assert "bad credentials Bearer ***" in unauthorised.error and "HTTP 500" in server_error.error
    assert "retry 1 of 1" in caplog.text  # the retry was logged, scrubbed
    with EndpointClient(config) as client:  # the client the judge holds, built from the same config
        client_repr = repr(client)
    assert_no_secret(
        repr(config),
        str(config),
        repr(judge),
        str(judge),
        client_repr,
        unauthorised.error,
        server_error.error,
        caplog.text,
        json.dumps([r.getMessage() for r in caplog.records]),
    )


def test_key_from_a_private_file(loopback, tmp_path, caplog):
    caplog.set_level(logging.DEBUG)
    key_file = tmp_path / "key"
    key_file.write_text(SECRET + "\n")
    key_file.chmod(0o600)
    loopback.route(CHAT, lambda body: chat_reply("ok"))
    config = endpoint_config(loopback, api_key_file=str(key_file))
    judge = OpenAIJudge(config)
    assert judge.generate([ask("x")])[0].text == "ok"
    assert loopback.requests[0].headers["authorization"] == f"Bearer {SECRET}"
    with EndpointClient(config) as client:  # the client the judge holds, built from the same config
        assert_no_secret(repr(config), repr(judge), repr(client), caplog.text)


@pytest.mark.skipif(os.name != "posix", reason="file modes are POSIX")
def test_key_file_readable_by_others_is_refused(tmp_path):
    key_file = tmp_path / "key"
    key_file.write_text(SECRET)
    key_file.chmod(0o644)
    with pytest.raises(ConfigError, match="chmod 600") as raised:
        EndpointConfig(url="http://127.0.0.1:1", model="m", api_key_file=str(key_file))
    assert_no_secret(str(raised.value))
    # Also when the file is opened up after the config was built.
    key_file.chmod(0o600)
    config = EndpointConfig(url="http://127.0.0.1:1", model="m", api_key_file=str(key_file))
    key_file.chmod(0o640)
    with pytest.raises(ConfigError, match="chmod 600"):
        EndpointClient(config)


def test_missing_or_malformed_key_is_refused_without_showing_it(monkeypatch):
    monkeypatch.delenv("LOOPBACK_MISSING_KEY", raising=False)
    with pytest.raises(ConfigError, match="LOOPBACK_MISSING_KEY"):
        EndpointClient(
            EndpointConfig(url="http://127.0.0.1:1", model="m", api_key_env="LOOPBACK_MISSING_KEY")
        )
    monkeypatch.setenv("LOOPBACK_BAD_KEY", SECRET + " trailing words")
    with pytest.raises(ConfigError, match="spaces or non-ASCII") as raised:
        EndpointClient(EndpointConfig(url="http://127.0.0.1:1", model="m", api_key_env="LOOPBACK_BAD_KEY"))
    assert_no_secret(str(raised.value))


def test_discover_model_reads_the_first_listed_model(loopback):
    from ascend_eval.models.errors import BackendError
    from ascend_eval.models.factory import resolve
    from ascend_eval.models.http import discover_model

    loopback.enqueue("/v1/models", {"object": "list", "data": [{"id": "qwen2.5-7b"}, {"id": "other"}]})
    assert discover_model(loopback.url) == "qwen2.5-7b"
    loopback.enqueue("/v1/models", {"object": "list", "data": [{"id": "served-judge"}]})
    judge = resolve(loopback.url + "/v1", "judge")
    assert judge.model_id == f"openai:served-judge@{loopback.url}/v1"
    judge.close()
    loopback.enqueue("/v1/models", {"object": "list", "data": []})
    with pytest.raises(BackendError, match="lists no model"):
        discover_model(loopback.url)
    with pytest.raises(BackendError, match="Is the server running"):
        discover_model("http://127.0.0.1:9")


@pytest.mark.parametrize("choices", [[], None, {"0": {}}])
def test_empty_choices_say_what_came_back_and_what_to_check(loopback, choices):
    # An empty list: e.g. a content filter (Azure's prompt_filter_results) or a proxy that dropped them.
    body = {
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "choices": choices,
        "usage": {"prompt_tokens": 7},
    }
    if choices is None:
        del body["choices"]
    loopback.enqueue(CHAT, body)
    [result] = OpenAIJudge(endpoint_config(loopback)).generate([ask("x")])
    assert result.finish_reason == "error" and len(loopback.requests) == 1
    if choices == []:
        assert "'choices' is an empty list" in result.error
        assert "Check the server's log for this request" in result.error
    elif choices is None:
        assert "no 'choices' in the response" in result.error
    else:
        assert "'choices' is a dict, not a list" in result.error
    assert "keys are ['choices', 'id', 'object', 'usage']" in result.error or choices is None


def test_a_vllm_server_gets_the_loop_guard_and_ends_loops_itself(loopback):
    """A server whose /v1/models says it is vLLM is asked, once, to stop looping replies itself (vLLM's
    `repetition_detection`), and its finish_reason "repetition" comes through; classify requests carry
    no such field."""
    loopback.enqueue("/v1/models", {"object": "list", "data": [{"id": "m", "owned_by": "vllm"}]})
    loopback.route(CHAT, lambda body: chat_reply("cat cat cat", finish_reason="repetition"))
    judge = OpenAIJudge(endpoint_config(loopback), loop_guard=None)
    first = judge.generate([ask("a"), ask("b")])
    judge.generate([ask("c")])
    judge.classify([yes_no()])
    judge.close()
    assert [r.finish_reason for r in first] == ["repetition", "repetition"]
    paths = [r.path for r in loopback.requests]
    assert paths.count("/v1/models") == 1 and paths[0] == "/v1/models"
    chats = [r.body for r in loopback.requests if r.path == CHAT]
    guarded = [b for b in chats if "repetition_detection" in b]
    assert len(guarded) == 3
    assert guarded[0]["repetition_detection"] == {
        "min_pattern_size": 16,
        "max_pattern_size": 48,
        "min_count": 3,
    }
    assert "repetition_detection" not in chats[-1]  # the classify request


@pytest.mark.parametrize(
    "models",
    [
        Reply({"object": "list", "data": [{"id": "m", "owned_by": "openai"}]}),
        Reply({"error": "not found"}, status=404),
        Reply("<html>sign in</html>", content_type="text/html"),
    ],
)
def test_other_servers_get_no_field_they_may_refuse(loopback, models):
    loopback.enqueue("/v1/models", models)
    loopback.route(CHAT, lambda body: chat_reply("ok"))
    judge = OpenAIJudge(endpoint_config(loopback), loop_guard=None)
    [result] = judge.generate([ask("a")])
    judge.close()
    assert result.error is None
    assert all("repetition_detection" not in r.body for r in loopback.requests if r.path == CHAT)


def test_an_explicit_loop_guard_needs_no_probe(loopback):
    loopback.route(CHAT, lambda body: chat_reply("ok"))
    on = OpenAIJudge(endpoint_config(loopback), loop_guard=30)
    off = OpenAIJudge(endpoint_config(loopback))  # the default: nothing a non-vLLM server may refuse
    on.generate([ask("a")])
    off.generate([ask("b")])
    on.close()
    off.close()
    assert [r.path for r in loopback.requests] == [CHAT, CHAT]
    assert loopback.requests[0].body["repetition_detection"]["max_pattern_size"] == 30
    assert "repetition_detection" not in loopback.requests[1].body
    with pytest.raises(ConfigError, match="loop_guard"):
        OpenAIJudge(endpoint_config(loopback), loop_guard=-1)
