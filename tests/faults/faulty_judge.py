"""A loopback judge that misbehaves on chosen samples only: the fault suite's server.

It answers by the rules of `tests.test_api_endpoints.judge_route` (statements = the answer's sentences;
supported = the claim occurs in the context), except for the requests of a sample whose case number has a
fault: those get garbage, truncated JSON, an empty `choices`, a 429 with Retry-After, a 500, a hang, a
connection closed mid-body, logprobs without any label token, an HTML page, or a body that echoes the API
key at a chosen offset. Every sample's prompt carries its case number ("case-007"), so the server knows
whose request it is.
"""

from __future__ import annotations

import json
import re
import threading
import time
from collections import Counter, defaultdict
from dataclasses import dataclass
from typing import Any, Literal

from tests.models.loopback_server import CHAT, LoopbackServer, Reply, chat_reply
from tests.test_api_endpoints import judge_route

KEY = "sk-Zq8vXw3Ry7Lp2Tn6Kd4Hb9Mc5Jf1Gs"
"""The API key of the suite: mixed case, so that no run of it occurs by chance in what a run writes."""
KEY_ENV = "ASCEND_EVAL_FAULT_SUITE_KEY"
OFFSETS = range(250, 351)
"""Where the echoed key starts in a body: all around the 300-character cut of error excerpts."""

Phase = Literal["statements", "verdict"]


@dataclass(frozen=True)
class Fault:
    kind: str
    phase: Phase
    """Which of the sample's requests misbehaves: its statement extraction or its verdict."""
    reason: str | None
    """A part of the NaN reason it must give; None when the client recovers (the score is the clean one)."""
    retried: bool = False
    """Whether the client tries again (then it takes max_retries + 1 attempts), else it takes one."""
    offset: int = 0


FIXED: dict[int, Fault] = {
    0: Fault("garbage", "statements", "not valid JSON"),
    1: Fault("truncated_json", "statements", "not valid JSON"),
    2: Fault("empty_choices", "statements", "'choices' is an empty list"),
    3: Fault("rate_limited_twice", "statements", None),  # 429 + Retry-After twice, then the answer
    4: Fault("server_error", "verdict", "HTTP 500", retried=True),  # and it echoes the key
    5: Fault("hang", "verdict", "timed out", retried=True),
    6: Fault("closed_mid_body", "statements", "RemoteProtocolError", retried=True),
    7: Fault("no_label_tokens", "verdict", "no label among the top-3 next tokens"),
    8: Fault("html_page", "statements", "It is an HTML page"),
    9: Fault("closed_mid_body_once", "verdict", None),
}
KEY_IN_ERROR = 10  # cases 10..110: an HTTP 400 body with the key at OFFSETS
KEY_IN_TEXT = KEY_IN_ERROR + len(OFFSETS)  # 111..211: a 200 body that is not JSON, key at OFFSETS
KEY_IN_REPLY = KEY_IN_TEXT + len(OFFSETS)  # 212..312: a chat reply whose text has the key at OFFSETS
CLEAN = KEY_IN_REPLY + len(OFFSETS)  # 313..324: no fault
CASES = CLEAN + 12


def fault_of(case: int) -> Fault | None:
    if case in FIXED:
        return FIXED[case]
    for start, kind, reason in (
        (KEY_IN_ERROR, "key_in_error_body", "HTTP 400"),
        (KEY_IN_TEXT, "key_in_200_text", "not valid JSON"),
        (KEY_IN_REPLY, "key_in_reply", "parse_failure"),
    ):
        if start <= case < start + len(OFFSETS):
            return Fault(kind, "statements", reason, offset=OFFSETS[case - start])
    return None


def dataset() -> dict[str, list[Any]]:
    """One sample per case, in the ragas columnar format. A faulty case has one statement (one verdict
    request); half the clean ones have two, one of them unsupported."""
    rows: dict[str, list[Any]] = {"question": [], "contexts": [], "answer": [], "ground_truth": []}
    for case in range(CASES):
        name = f"widget case-{case:03d}"
        answer = f"The {name} is blue." if case % 3 else f"The {name} is red."
        if case >= CLEAN and case % 2:
            answer += f" The {name} was made in 2021."
        rows["question"].append(f"What colour is the {name}?")
        rows["contexts"].append([f"The {name} is blue. The {name} was made in 2020."])
        rows["answer"].append(answer)
        rows["ground_truth"].append(f"The {name} is blue.")
    return rows


_CASE = re.compile(r"case-(\d{3})")


def _echo(offset: int, tail: str = " and so on") -> str:
    return "x" * offset + KEY + tail * 30


class FaultyJudge:
    """Routes `server`'s chat requests: the rules, or a case's fault while `faults` is on."""

    def __init__(self, server: LoopbackServer) -> None:
        self.server = server
        self.faults = False
        self.skip: set[str] = set()
        """Fault kinds answered cleanly in this run (the hang, for a client with a long timeout)."""
        self.attempts: Counter[tuple[int, Phase]] = Counter()
        self.times: defaultdict[tuple[int, Phase], list[float]] = defaultdict(list)
        self._lock = threading.Lock()
        server.route(CHAT, self._chat)
        server.route("/v1/models", lambda body: {"object": "list", "data": [{"id": "loopback-judge"}]})

    @property
    def url(self) -> str:
        return self.server.url + "/v1"

    def reset(self, *, faults: bool, skip: frozenset[str] = frozenset()) -> None:
        with self._lock:
            self.faults, self.skip = faults, set(skip)
            self.attempts.clear()
            self.times.clear()

    def _chat(self, body: dict[str, Any]) -> Reply | dict[str, Any]:
        phase: Phase = "verdict" if body.get("logprobs") else "statements"
        match = _CASE.search(body["messages"][-1]["content"])
        case = int(match.group(1)) if match else -1
        with self._lock:
            self.attempts[case, phase] += 1
            self.times[case, phase].append(time.monotonic())
            attempt = self.attempts[case, phase]
        clean = judge_route(body)
        fault = fault_of(case)
        if not self.faults or fault is None or fault.phase != phase or fault.kind in self.skip:
            return clean
        return _misbehave(fault, attempt, clean)


def _misbehave(fault: Fault, attempt: int, clean: dict[str, Any]) -> Reply | dict[str, Any]:
    kind = fault.kind
    if kind == "garbage":
        return Reply("Sure! The statements are: the widget, and its colour.", content_type="text/plain")
    if kind == "truncated_json":
        text = json.dumps(clean)
        return Reply(text[: len(text) // 2])
    if kind == "empty_choices":
        return {**clean, "choices": []}
    if kind == "rate_limited_twice":
        if attempt <= 2:
            return Reply({"error": {"message": "rate limited"}}, status=429, headers={"Retry-After": "0.2"})
        return clean
    if kind == "server_error":
        return Reply({"error": {"message": "CUDA out of memory; " + _echo(300)}}, status=500)
    if kind == "hang":
        return Reply(clean, delay=30)  # cut short when the server closes
    if kind == "closed_mid_body" or (kind == "closed_mid_body_once" and attempt == 1):
        return Reply(clean, close_after=40)
    if kind == "closed_mid_body_once":
        return clean
    if kind == "no_label_tokens":
        return chat_reply("The", top_logprobs=[("The", -0.1), ("Based", -1.5), ("I", -2.5)])
    if kind == "html_page":
        page = "<!DOCTYPE html><html><head><title>Sign in</title></head><body><form>...</form></body></html>"
        return Reply(page, content_type="text/html")
    if kind == "key_in_error_body":
        return Reply(_echo(fault.offset), status=400, content_type="text/plain")
    if kind == "key_in_200_text":
        return Reply(_echo(fault.offset), content_type="text/plain")
    if kind == "key_in_reply":
        return chat_reply(_echo(fault.offset), prompt_tokens=120, completion_tokens=30)
    raise AssertionError(f"unknown fault {kind}")
