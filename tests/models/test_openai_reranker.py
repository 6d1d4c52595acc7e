"""`OpenAIReranker` against the loopback server's NIM-style `/v1/ranking` endpoint."""

from __future__ import annotations

import numpy as np
import pytest

from ascend_eval.models.base import Reranker
from ascend_eval.models.errors import BackendError, ConfigError
from ascend_eval.models.reranker.openai import OpenAIReranker
from tests.models.loopback_server import RANKING, Reply, endpoint_config, ranking_reply


def logit_of(query: str, passage: str) -> float:
    """A score that depends on both sides, so a pair scored against the wrong query shows up."""
    return float(passage.removeprefix("p")) + (0.5 if query == "q2" else 0.0)


def serve_rankings(body: dict) -> Reply:
    query = body["query"]["text"]
    return Reply(ranking_reply([logit_of(query, p["text"]) for p in body["passages"]]), delay=0.02)


def test_groups_by_query_and_keeps_input_order(loopback):
    loopback.route(RANKING, serve_rankings)
    pairs = [("q1", "p1"), ("q2", "p2"), ("q1", "p3"), ("q2", "p4"), ("q1", "p5"), ("q3", "p6")]
    reranker = OpenAIReranker(endpoint_config(loopback, model="rerank-qa", parallelism=4), batch_size=2)
    assert isinstance(reranker, Reranker)
    scores = reranker.score(pairs)
    assert scores.dtype == np.float32 and scores.shape == (6,)
    np.testing.assert_allclose(scores, [logit_of(q, p) for q, p in pairs])

    sent = sorted(
        (b["query"]["text"], tuple(p["text"] for p in b["passages"])) for b in loopback.bodies(RANKING)
    )
    assert sent == [("q1", ("p1", "p3")), ("q1", ("p5",)), ("q2", ("p2", "p4")), ("q3", ("p6",))]
    assert all(
        b["model"] == "rerank-qa" and set(b) == {"model", "query", "passages"}
        for b in loopback.bodies(RANKING)
    )
    assert 1 < loopback.peak_concurrency <= 4


def test_empty_input(loopback):
    assert OpenAIReranker(endpoint_config(loopback)).score([]).shape == (0,)
    assert loopback.requests == []


def test_failure_raises_with_the_reason(loopback):
    loopback.route(
        RANKING,
        lambda body: (
            Reply({"detail": "passage too long"}, status=400)
            if body["query"]["text"] == "q2"
            else serve_rankings(body)
        ),
    )
    reranker = OpenAIReranker(endpoint_config(loopback))
    with pytest.raises(BackendError) as raised:
        reranker.score([("q1", "p1"), ("q2", "p2")])
    message = str(raised.value)
    assert message.startswith(reranker.model_id) and "1 of 2 ranking requests failed" in message
    assert "HTTP 400" in message and "passage too long" in message


@pytest.mark.parametrize(
    ("reply", "reason"),
    [
        ({"results": []}, "no 'rankings' list"),
        ({"rankings": [{"index": 0, "logit": 1.0}, {"index": 5, "logit": 0.0}]}, "indices are not 0..1"),
        ({"rankings": [{"index": 0, "logit": 1.0}]}, "ranked 1 passages of the 2 sent"),
        ({"rankings": [{"index": 0, "logit": 1.0}, {"index": 1}]}, "unexpected response body"),
        ({"rankings": [{"index": 0, "logit": 1.0}, {"index": 1, "logit": "NaN"}]}, "non-finite logit"),
    ],
)
def test_unexpected_bodies_raise(loopback, reply, reason):
    loopback.enqueue(RANKING, Reply(reply))
    with pytest.raises(BackendError, match=reason):
        OpenAIReranker(endpoint_config(loopback)).score([("q", "p0"), ("q", "p1")])
    assert len(loopback.requests) == 1


def test_settings_are_validated(loopback):
    with pytest.raises(ConfigError, match="batch_size"):
        OpenAIReranker(endpoint_config(loopback), batch_size=0)
