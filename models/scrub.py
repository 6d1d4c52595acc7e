"""Keeping an endpoint's API key out of every text that leaves a client: error messages, logs, results.

Text that a server sends back (an error body, a reason phrase, a 200 body) or that a library raises may
quote the key, whole or cut anywhere. `Scrubber` removes it; `clip_excerpt` cuts a text to a message's
length without leaving a piece of the key at the cut, and without a control character in it
(`escape_controls`): an escape sequence a server sends must not move a terminal's cursor, set its title
or fake lines of a log.
"""

from __future__ import annotations

import html
import json
import re
from typing import Any
from urllib.parse import quote

EXCERPT_CHARS = 300
CONTROLS = re.compile("[\x00-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")
"""Control characters (C0, DEL and C1, the escape sequences' ESC and CSI among them) and Unicode's bidi
controls, which reorder the text around them."""
_REDACTED = "***"
# A run of the key this long is redacted wherever it occurs; where a text starts or ends (where a cut,
# ours or the server's, may have split the key) a shorter run already is.
_KEY_RUN = 8
_KEY_EDGE = 4


class Scrubber:
    """Removes one API key from text that came from a server or a library, whole or in part.

    The key is replaced wherever it occurs whole, also as JSON, HTML or a URL would escape it; so is any
    run of 8 of its characters (a server may echo part of a key), and, where a text ends, a run of 4 or
    more from the key's start (or, where a text starts, from its end): what a cut inside the key leaves.

    >>> scrub = Scrubber("sk-0123456789abcdef")
    >>> scrub.text("bad key sk-0123456789abcdef; 3456789abc; cut: sk-01")
    'bad key ***; ***; cut: ***'
    """

    def __init__(self, key: str | None) -> None:
        self._key = key or ""
        escaped = json.dumps(self._key)[1:-1]
        forms = {
            self._key,
            escaped,
            escaped.replace("/", "\\/"),
            html.escape(self._key),
            quote(self._key, safe=""),
        }
        # Longest first, so that a form is never left half-replaced by a shorter one inside it.
        self._forms = sorted((f for f in forms if f), key=len, reverse=True)
        self._run = min(_KEY_RUN, len(self._key))
        self._runs = {self._key[i : i + self._run] for i in range(len(self._key) - self._run + 1)}
        self._edge = min(_KEY_EDGE, len(self._key))

    @property
    def key(self) -> str:
        return self._key

    def whole(self, text: str) -> str:
        """`text` with every full occurrence of the key replaced; fast enough for a body of any size."""
        for form in self._forms:
            text = text.replace(form, _REDACTED)
        return text

    def text(self, text: str) -> str:
        """`text` with the key replaced whole and in part (see the class docstring)."""
        if not self._key or not text:
            return text
        text = self.whole(text)
        spans = []
        for run in self._runs:
            start = text.find(run)
            while start != -1:
                spans.append((start, start + self._run))
                start = text.find(run, start + 1)
        key, size = self._key, len(text)
        for n in range(min(len(key), size), self._edge - 1, -1):
            if text.endswith(key[:n]):
                spans.append((size - n, size))
                break
        for n in range(min(len(key), size), self._edge - 1, -1):
            if text.startswith(key[-n:]):
                spans.append((0, n))
                break
        if not spans:
            return text
        merged: list[list[int]] = []
        for start, stop in sorted(spans):
            if merged and start <= merged[-1][1]:
                merged[-1][1] = max(merged[-1][1], stop)
            else:
                merged.append([start, stop])
        out, end = [], 0
        for start, stop in merged:
            out += [text[end:start], _REDACTED]
            end = stop
        out.append(text[end:])
        return "".join(out)

    def data(self, value: Any) -> Any:
        """Parsed JSON with every string in it scrubbed (keys of objects too)."""
        if not self._key:
            return value
        if isinstance(value, str):
            return self.text(value)
        if isinstance(value, dict):
            return {self.data(k): self.data(v) for k, v in value.items()}
        if isinstance(value, list):
            if all(not isinstance(v, (str, list, dict)) for v in value):
                return value  # numbers only (an embedding): nothing to scrub, and the common case
            return [self.data(v) for v in value]
        return value


def escape_controls(text: str) -> str:
    """`text` with each of `CONTROLS` written as its Python escape, so that it is shown instead of acted
    on by a terminal or a log viewer, and a reader still sees what was sent.

    >>> escape_controls("ok\x1b]0;title\x07\x1b[2J\u202e!")
    'ok\\\\x1b]0;title\\\\x07\\\\x1b[2J\\\\u202e!'
    """
    return CONTROLS.sub(lambda m: m.group().encode("unicode_escape").decode("ascii"), text)


def clip_excerpt(text: str, scrubber: Scrubber) -> str:
    """`text` from a server or a library, fit for a message: whitespace runs made one space, control
    characters escaped (`escape_controls`), at most `EXCERPT_CHARS` characters, and no 4 characters of
    the API key in a row.

    The order matters. The whole text loses every full key first; the cut's neighbourhood then loses
    every part of one (so a part that straddles the cut goes too), and the excerpt once more after the
    cut: what our cut leaves of a part, or a body the server itself cut inside the key, ends the text.

    >>> scrub = Scrubber("sk-0123456789abcdef")
    >>> clip_excerpt("x" * 297 + "sk-0123456789abcdef, more", scrub)[-6:]
    'xx***…'
    >>> clip_excerpt("x" * 295 + "456789abcdef, more", scrub)[-6:]  # part of the key, across the cut
    '***, …'
    """
    text = escape_controls(" ".join(scrubber.whole(text).split()))
    cut = len(text) > EXCERPT_CHARS
    if cut:
        text = scrubber.text(text[: EXCERPT_CHARS + len(scrubber.key)])[:EXCERPT_CHARS]
    text = scrubber.text(text)
    return text + "…" if cut else text
