"""Reading the JSON in a judge's text: the first object or array, past code fences, prose and full-width
punctuation, and a looping answer's JSON closed after its last complete item. Bounded: a reply nested past
`MAX_JSON_DEPTH` is not read, and each character is scanned about once."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator

MAX_JSON_DEPTH = 64
"""Most brackets a judge's JSON may nest (a prompt's output nests three). A reply nested deeper is not read
as JSON: its score is NaN with the reason, and one WARNING says so. Reading it would recurse past Python's
limit, and looking for a JSON value from each of its brackets in turn would take quadratic time (hours
for 200,000 `[`)."""


_FENCE = re.compile(r"```(?:json)?\s*(.*?)```", re.DOTALL)
# Full-width punctuation that judges sometimes emit in JSON structure when answering in Chinese.
_FULL_WIDTH = str.maketrans(
    {"“": '"', "”": '"', "：": ":", "，": ",", "｛": "{", "｝": "}", "［": "[", "］": "]"}
)


def _brackets(text: str, start: int = 0) -> Iterator[tuple[int, str]]:
    """Each bracket of `text[start:]` outside JSON strings, with its index; then `(-1, '"')` where the
    text ends inside a string."""
    in_string = escaped = False
    for i in range(start, len(text)):
        ch = text[i]
        if in_string:
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == '"':
                in_string = False
        elif ch == '"':
            in_string = True
        elif ch in "{[]}":
            yield i, ch
    if in_string:
        yield -1, '"'


class JsonTooDeep(ValueError):
    """A judge's text nests brackets more than `MAX_JSON_DEPTH` deep."""


TOO_DEEP = f"the judge output nests brackets more than {MAX_JSON_DEPTH} deep"


def _balanced_blocks(text: str) -> Iterator[str]:
    """For each `{` or `[` of `text` in turn, the balanced block it starts, skipping brackets inside
    strings (those whose brackets do not balance are left out).

    One scan from a bracket settles every bracket it opens on the way, since a scan from one of those
    would read the same characters the same way: so each character is scanned about once, not once per
    bracket before it.

    Raises:
        JsonTooDeep: a block nests more than `MAX_JSON_DEPTH` deep.
    """
    ends: dict[int, int | None] = {}
    """Where the block that each settled bracket starts ends (None: it never closes)."""
    for start, ch in enumerate(text):
        if ch not in "{[":
            continue
        if start not in ends:
            _settle(text, start, ends)
        end = ends[start]
        if end is not None:
            yield text[start : end + 1]


def _settle(text: str, start: int, ends: dict[int, int | None]) -> None:
    """Scan from the bracket at `start` until its block closes, a bracket closes the wrong one, or the
    text ends, and note in `ends` where each bracket opened on the way closes (None: not in this scan)."""
    stack: list[tuple[int, str]] = []
    for i, ch in _brackets(text, start):
        if ch in "{[":
            stack.append((i, "}" if ch == "{" else "]"))
            if len(stack) > MAX_JSON_DEPTH:
                raise JsonTooDeep(TOO_DEEP)
        elif ch in "}]":
            if stack[-1][1] != ch:
                break
            opened, _ = stack.pop()
            ends.setdefault(opened, i)
            if not stack:
                return
    for opened, _ in stack:
        ends.setdefault(opened, None)


def extract_json(text: str) -> object | None:
    """The first JSON object or array in `text`, or None (also where it nests more than `MAX_JSON_DEPTH`
    deep).

    >>> extract_json('Sure! ```json\\n{"a": [1, 2]}\\n``` done')
    {'a': [1, 2]}
    >>> extract_json('{“statements”：［“北京是首都”］}')
    {'statements': ['北京是首都']}
    >>> extract_json('no json here') is None
    True
    >>> extract_json("[" * 200_000) is None
    True
    """
    try:
        return first_json(text)
    except JsonTooDeep:
        return None


def first_json(text: str) -> object | None:
    """`extract_json`, raising `JsonTooDeep` for text that nests more than `MAX_JSON_DEPTH` deep."""
    candidates = [m.group(1) for m in _FENCE.finditer(text)] + [text]
    for candidate in candidates:
        for source in (candidate, candidate.translate(_FULL_WIDTH)):
            for block in _balanced_blocks(source):
                try:
                    return json.loads(block)
                except (ValueError, RecursionError):  # not JSON; an integer of 4,300+ digits
                    continue
    return None


def salvage_json(text: str) -> object | None:
    """The JSON object that `text`, cut off inside a list, holds up to its last complete list item, with
    the open brackets closed; None where no such cut parses.

    >>> salvage_json('{"statements": ["A.", "B.", "B.", "B')
    {'statements': ['A.', 'B.', 'B.']}
    >>> salvage_json('{"statements": ["A') is None
    True
    """
    start = text.find("{")
    if start < 0:
        return None
    body = text[start:]
    cuts = [m.start() + 1 for m in re.finditer(r'["\]}\d]\s*,', body)]
    for cut in reversed(cuts[-64:]):
        head = body[:cut]
        closers = _closers(head)
        if closers is None or len(closers) > MAX_JSON_DEPTH:
            continue
        try:
            return json.loads(head + closers)
        except (ValueError, RecursionError):  # not JSON; an integer of 4,300+ digits
            continue
    return None


def _closers(head: str) -> str | None:
    """The brackets that close what `head` left open, or None where it ends inside a string."""
    stack: list[str] = []
    for _, ch in _brackets(head):
        if ch == '"':
            return None
        if ch in "{[":
            stack.append("}" if ch == "{" else "]")
        elif stack:
            stack.pop()
    return "".join(reversed(stack))


def unique_items(items: list[object]) -> list[object]:
    """`items` with each repeat after the first dropped, in order."""
    seen: set[str] = set()
    out = []
    for item in items:
        key = json.dumps(item, sort_keys=True, ensure_ascii=False)
        if key not in seen:
            seen.add(key)
            out.append(item)
    return out
