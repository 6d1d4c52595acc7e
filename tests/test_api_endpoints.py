"""evaluate() against OpenAI-compatible servers: a real HTTP server on 127.0.0.1 that answers the judge's
prompts by fixed rules (statements = sentences; supported = the claim occurs in the context)."""

from __future__ import annotations

import math

import numpy as np
import pytest

import ascend_eval
from ascend_eval.models.base import ClassifyRequest, GenerateRequest, Message
from tests.conftest import NgramEmbedder, statements_rule, support_rule, verdict_tokens
from tests.models.loopback_server import CHAT, EMBEDDINGS, LoopbackServer, Reply, chat_reply, embeddings_reply


def _as_request(body):
    """Rebuild our request from the chat body the server received, to reuse the rules."""
    messages = tuple(Message(m["role"], m["content"]) for m in body["messages"] if m["role"] != "assistant")
    if body.get("logprobs"):
        return ClassifyRequest(messages, ("0", "1"))
    return GenerateRequest(messages)


def judge_route(body):
    request = _as_request(body)
    if isinstance(request, ClassifyRequest):
        yes, no = verdict_tokens(request.messages[-1].content)
        p0, p1 = support_rule(ClassifyRequest(request.messages, (no, yes)))
        return chat_reply(
            yes if p1 > p0 else no,
            prompt_tokens=100,
            completion_tokens=1,
            top_logprobs=[(yes, math.log(p1)), (no, math.log(p0)), ("The", -9.0)],
        )
    return chat_reply(statements_rule(request), prompt_tokens=120, completion_tokens=30)


def embed_route(body):
    return embeddings_reply(NgramEmbedder().embed(body["input"]).tolist())


@pytest.fixture
def server():
    with LoopbackServer() as s:
        s.route(CHAT, judge_route)
        s.route(EMBEDDINGS, embed_route)
        s.enqueue("/v1/models", {"data": [{"id": "loopback-judge"}]})
        yield s


def test_evaluate_through_endpoints_matches_the_in_process_rules(server, rule_judge, ngram_embedder):
    remote = ascend_eval.evaluate(
        "bilingual-example",
        ["faithfulness", "answer_similarity"],
        judge=server.url + "/v1",
        embedder=_embedder(server),
        cache_dir=False,
        progress=False,
    )
    local = ascend_eval.evaluate(
        "bilingual-example",
        ["faithfulness", "answer_similarity"],
        judge=rule_judge,
        embedder=ngram_embedder,
        cache_dir=False,
        progress=False,
    )
    assert remote["faithfulness"] == local["faithfulness"]
    np.testing.assert_allclose(remote["answer_similarity"], local["answer_similarity"], atol=1e-6)
    assert remote.provenance["models"]["judge"] == f"openai:loopback-judge@{server.url}/v1"
    # 12 distinct answers: the flawed twin of each retrieval pair keeps its good row's answer
    assert remote.rounds[0].tokens_in == 12 * 120 and remote.rounds[0].tokens_out == 12 * 30
    bodies = server.bodies(CHAT)
    assert all(b["model"] == "loopback-judge" for b in bodies)
    assert sum(1 for b in bodies if b.get("response_format")) == 12  # statements are schema-constrained


def _embedder(server):
    from ascend_eval.models.embedder.openai import OpenAIEmbedder
    from ascend_eval.models.http import EndpointConfig

    return OpenAIEmbedder(EndpointConfig(url=server.url, model="loopback-embedder"))


def test_a_server_failing_some_requests_loses_only_those_scores(server):
    def flaky(body):
        if "Canberra" in str(body["messages"]):  # the two Australia samples' requests are refused
            return Reply({"error": {"message": "bad request"}}, status=400)
        return judge_route(body)

    server.route(CHAT, flaky)
    result = ascend_eval.evaluate(
        "bilingual-example", ["faithfulness"], judge=server.url, cache_dir=False, progress=False
    )
    reasons = result.nan_reasons("faithfulness")
    assert sum(reasons.values()) == 2 and next(iter(reasons)).startswith("backend_error")
    assert result.aggregates()[0]["count"] == 14


def test_a_judge_that_loops_to_its_cap_is_read_up_to_the_loop(server):
    """A server has no loop guard: a judge that keeps repeating its last statement comes back at its cap
    with finish_reason "length". The statements before the loop (and the repeated one once) are scored;
    a cut answer that does not loop stays NaN with "truncated"."""
    import json

    def looping(body):
        request = _as_request(body)
        if isinstance(request, GenerateRequest) and "capital of Australia" in str(body["messages"]):
            statements = json.loads(statements_rule(request))["statements"]
            last = json.dumps(statements[-1], ensure_ascii=False)
            text = json.dumps({"statements": statements}, ensure_ascii=False)[:-2] + (", " + last) * 20
            return chat_reply(text, finish_reason="length", completion_tokens=256)
        if isinstance(request, GenerateRequest) and "长城" in str(body["messages"]):
            return chat_reply('{"statements": ["长城始建于春秋战国时期', finish_reason="length")
        return judge_route(body)

    def run():
        return ascend_eval.evaluate(
            "bilingual-example", ["faithfulness"], judge=server.url, cache_dir=False, progress=False
        )

    clean = run().rows()
    server.enqueue("/v1/models", {"data": [{"id": "loopback-judge"}]})  # asked again by the second run
    server.route(CHAT, looping)
    rows = run().rows()
    australia, great_wall = (4, 5), (8, 9)  # each question's good row and its flawed twin
    for i in australia:
        assert rows[i]["faithfulness"] == clean[i]["faithfulness"] is not None
    for i in great_wall:
        assert rows[i]["faithfulness"] is None
        assert rows[i]["faithfulness_reason"].startswith("truncated")
    assert [r["faithfulness"] for i, r in enumerate(rows) if i not in great_wall] == [
        r["faithfulness"] for i, r in enumerate(clean) if i not in great_wall
    ]
