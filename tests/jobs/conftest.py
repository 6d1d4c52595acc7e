"""Fixtures for the job tests: the seed's NeMo specs, a loopback OpenAI-compatible judge that answers by
fixed rules, and a private jobs folder and secrets store per test."""

from __future__ import annotations

import copy
import json
import math
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from ascend_eval.jobs import Jobs, SecretStore
from ascend_eval.models.base import ClassifyRequest, GenerateRequest, Message
from tests.conftest import NgramEmbedder, statements_rule, support_rule, verdict_tokens
from tests.models.loopback_server import CHAT, EMBEDDINGS, LoopbackServer, chat_reply, embeddings_reply

SPECS = Path(__file__).parent / "specs"
NEMO_SPECS = sorted(SPECS.glob("nemo_*.json"))


def nemo_spec(name: str) -> dict[str, Any]:
    """One of the seed's example specs, as NeMo wrote it."""
    return json.loads((SPECS / f"nemo_{name}.json").read_text(encoding="utf-8"))


class RuleJudgeServer:
    """A loopback judge: statements = the answer's sentences; supported = the claim occurs in the
    context; as the RAG model it answers with the first context passage. Embeddings are hashed
    character trigrams. `hold_classify` makes verdict requests wait (to kill a job mid-run)."""

    def __init__(self, server: LoopbackServer) -> None:
        self.server = server
        self.hold_classify = threading.Event()
        server.route(CHAT, self._chat)
        server.route(EMBEDDINGS, lambda body: embeddings_reply(NgramEmbedder().embed(body["input"]).tolist()))

    @property
    def url(self) -> str:
        return self.server.url + "/v1/chat/completions"  # NeMo's style: the endpoint's full path

    def _chat(self, body: dict[str, Any]) -> dict[str, Any]:
        messages = tuple(
            Message(m["role"], m["content"]) for m in body["messages"] if m["role"] != "assistant"
        )
        if body.get("logprobs"):
            while self.hold_classify.is_set():
                self.server.closing.wait(0.05)
                if self.server.closing.is_set():
                    break
            yes, no = verdict_tokens(messages[-1].content)
            p0, p1 = support_rule(ClassifyRequest(messages, (no, yes)))
            return chat_reply(yes, top_logprobs=[(yes, math.log(p1)), (no, math.log(p0))])
        if "Question:" in messages[-1].content and "Input:" not in messages[-1].content:
            # the RAG model's prompt (the pipeline): answer with the first context passage
            first = messages[-1].content.split("[1] ", 1)[-1].split("\n", 1)[0]
            return chat_reply(first, prompt_tokens=40, completion_tokens=10)
        return chat_reply(statements_rule(GenerateRequest(messages)), prompt_tokens=50, completion_tokens=10)

    def generate_bodies(self) -> list[dict[str, Any]]:
        return [b for b in self.server.bodies(CHAT) if not b.get("logprobs")]

    def classify_bodies(self) -> list[dict[str, Any]]:
        return [b for b in self.server.bodies(CHAT) if b.get("logprobs")]


@pytest.fixture
def judge_server() -> Iterator[RuleJudgeServer]:
    with LoopbackServer() as server:
        yield RuleJudgeServer(server)


@pytest.fixture
def secrets(tmp_path: Path) -> SecretStore:
    return SecretStore(tmp_path / "secrets")


@pytest.fixture
def jobs(tmp_path: Path, secrets: SecretStore) -> Jobs:
    return Jobs(tmp_path / "jobs", secrets=secrets)


def inline_spec_for(judge_url: str, *, secret: str | None = "judge-api-key") -> dict[str, Any]:
    """The seed's inline-dataset example with its judge pointed at `judge_url`; everything else unchanged."""
    spec = copy.deepcopy(nemo_spec("inline"))
    judge = spec["metric_params"]["judge_llm"]["model"]
    judge["url"] = judge_url
    if secret is None:
        judge.pop("api_key_secret")
    else:
        judge["api_key_secret"] = secret
    return spec
