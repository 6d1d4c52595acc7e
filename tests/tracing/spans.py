"""Reading finished spans back: by kind, as a tree."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ascend_eval.engine import tracing as t


def kind(spans: Sequence[Any], value: str) -> list[Any]:
    """The spans whose `openinference.span.kind` is `value`."""
    return [s for s in spans if s.attributes.get(t.OI_SPAN_KIND) == value]


def run_span(spans: Sequence[Any]) -> Any:
    (run,) = [s for s in spans if s.name == t.RUN_SPAN]
    return run


def stage_spans(spans: Sequence[Any]) -> dict[str, Any]:
    """Stage label -> its span."""
    return {s.attributes[t.STAGE]: s for s in kind(spans, t.OI_CHAIN) if t.STAGE in s.attributes}


def call_spans(spans: Sequence[Any]) -> list[Any]:
    return [s for s in spans if s.attributes.get(t.OI_SPAN_KIND) in (t.OI_LLM, t.OI_EMBEDDING, t.OI_RERANKER)]


def parent_of(span: Any, spans: Sequence[Any]) -> Any:
    """The finished span that is `span`'s parent, or None."""
    if span.parent is None:
        return None
    return next((s for s in spans if s.context.span_id == span.parent.span_id), None)


KEY_ATTRIBUTES = (
    t.OI_SPAN_KIND,
    t.SAMPLES,
    t.REQUESTS,
    t.CACHE_HITS,
    t.SENT,
    t.FAILED,
    t.LLM_TOKEN_COUNT_PROMPT,
    t.LLM_TOKEN_COUNT_COMPLETION,
    t.TOKENS_PROMPT,
    t.NAN_COUNT,
)


def tree(spans: Sequence[Any]) -> str:
    """The spans as an indented tree, children by start time, with their key attributes."""
    children: dict[Any, list[Any]] = {}
    ids = {s.context.span_id for s in spans}
    for s in sorted(spans, key=lambda s: s.start_time):
        parent = s.parent.span_id if s.parent is not None and s.parent.span_id in ids else None
        children.setdefault(parent, []).append(s)
    lines: list[str] = []

    def walk(parent: Any, depth: int) -> None:
        for s in children.get(parent, []):
            keys = [k for k in KEY_ATTRIBUTES if k in s.attributes]
            shown = ", ".join(f"{k.removeprefix('ascend_eval.')}={s.attributes[k]}" for k in keys)
            status = "" if s.status.is_ok else f" [{s.status.status_code.name}]"
            lines.append(f"{'  ' * depth}{s.name}{status}  ({shown})")
            walk(s.context.span_id, depth + 1)

    walk(None, 0)
    return "\n".join(lines)
