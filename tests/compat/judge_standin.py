"""A scripted OpenAI-compatible judge for end-to-end tests of the compatibility layers: it answers every
prompt our metrics send, by fixed rules, over real HTTP (a `LoopbackServer` route for
/v1/chat/completions).

* classify requests (`logprobs`): "1" (supported, useful) with p=0.9 when the statement occurs in the
  context, or the context shares a sentence with the answer; else 0.3. "2" and "4" are candidates too,
  for ratings.
* JSON requests (`response_format`): a value of the response's schema, filled from the sample: string
  lists are the answer's sentences (statements, entities), strings the answer itself (generated
  questions), integers 0 (not noncommittal), booleans true.
"""

from __future__ import annotations

import json
import math
from typing import Any

from ascend_eval.models.base import ClassifyRequest, Message
from tests.conftest import sample_input, split_sentences
from tests.models.loopback_server import chat_reply


def _input(body: dict[str, Any]) -> dict[str, Any]:
    messages = tuple(Message(m["role"], m["content"]) for m in body["messages"] if m["role"] != "assistant")
    try:
        return sample_input(ClassifyRequest(messages, ("0", "1")))
    except (AssertionError, ValueError):
        return {}


def _text(data: dict[str, Any]) -> str:
    for key in ("answer", "response", "reference", "text"):
        if isinstance(data.get(key), str) and data[key]:
            return data[key]
    return "答案。"


def _fill(schema: dict[str, Any], defs: dict[str, Any], data: dict[str, Any], name: str = "") -> Any:
    """A value of `schema` (pydantic's JSON schema, with $defs) built from the sample's input."""
    if "$ref" in schema:
        return _fill(defs[schema["$ref"].rsplit("/", 1)[-1]], defs, data, name)
    for combo in ("anyOf", "oneOf", "allOf"):
        if combo in schema:
            return _fill(schema[combo][0], defs, data, name)
    kind = schema.get("type")
    if kind == "object":
        props = schema.get("properties", {})
        return {key: _fill(sub, defs, data, key) for key, sub in props.items()}
    if kind == "array":
        items = schema.get("items", {})
        if items.get("type") == "string":
            return split_sentences(_text(data)) or [_text(data)]
        return [_fill(items, defs, data, name)]
    if kind == "string":
        if "enum" in schema:
            return schema["enum"][0]
        return data.get("statement") or _text(data)
    if kind == "integer":
        return 1 if name in ("verdict", "attributed") else 0
    if kind == "number":
        return 0.5
    if kind == "boolean":
        return True
    return None


def _holds(data: dict[str, Any]) -> bool:
    """A statement holds when it occurs in the context; a context is useful when it shares a sentence with
    the answer."""
    context = str(data.get("context", ""))
    item = data.get("statement")
    if isinstance(item, str) and item:
        return item.rstrip("。.!！?？") in context
    answer = str(data.get("answer", ""))
    return any(s.rstrip("。.!！?？") in context for s in split_sentences(answer)) or (
        bool(context) and context.rstrip("。.!！?？") in answer
    )


def judge_route(body: dict[str, Any]) -> dict[str, Any]:
    """The reply to one chat completion request."""
    data = _input(body)
    if body.get("logprobs"):
        p = 0.9 if _holds(data) else 0.3
        candidates = [("1", p), ("0", (1 - p) * 0.8), ("2", (1 - p) * 0.1), ("4", (1 - p) * 0.1)]
        return chat_reply(
            "1" if p > 0.5 else "0",
            prompt_tokens=80,
            completion_tokens=1,
            top_logprobs=[(t, math.log(q)) for t, q in candidates],
        )
    response_format = body.get("response_format") or {}
    schema = response_format.get("json_schema", {}).get("schema")
    if schema is None:
        return chat_reply(_text(data), prompt_tokens=80, completion_tokens=10)
    value = _fill(schema, schema.get("$defs", {}), data)
    return chat_reply(json.dumps(value, ensure_ascii=False), prompt_tokens=100, completion_tokens=20)
