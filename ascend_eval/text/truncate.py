"""Cut long documents to a budget of tokens or characters, from either end.

`side` names the end that is cut, as NeMo Evaluator's `truncate_long_documents` does: "end" keeps the
beginning of the text, "start" keeps its end.
"""

from __future__ import annotations

import unicodedata
from typing import Literal, Protocol

Side = Literal["end", "start"]
_SIDES = ("end", "start")

NIM_CHARACTER_LIMIT = 65_535
"""The per-document character limit of NVIDIA's embedding and ranking NIMs: the one length limit of the
library. NeMo Evaluator's `truncate_long_documents` cuts to it (its SDK's `DOCUMENT_CHARACTER_LIMIT`,
65535; the documentation rounds it to "65k"); jobs cut given contexts, and the RAG pipeline corpus
documents, to it."""

_REPLACEMENT = "\ufffd"


class TextTokenizer(Protocol):
    """What `truncate_by_tokens` needs: the HF tokenizer `encode`/`decode` pair."""

    def encode(self, text: str, add_special_tokens: bool = ...) -> list[int]: ...

    def decode(self, token_ids: list[int]) -> str: ...


def _check(side: str, limit: int, name: str) -> None:
    if side not in _SIDES:
        raise _config_error(
            f"side={side!r} is not a truncation side; valid sides are {list(_SIDES)}. "
            "Pass side='end' to keep the beginning of the text or side='start' to keep its end."
        )
    if limit < 0:
        raise _config_error(f"{name}={limit} is negative. Pass a limit of 0 or more.")


def _config_error(message: str) -> Exception:
    # Imported when raising only: `ascend_eval.models` pulls in numpy, and `import ascend_eval.text` should
    # stay light.
    from ascend_eval.errors import ConfigError

    return ConfigError(message)


def truncate_by_tokens(text: str, tokenizer: TextTokenizer, max_tokens: int, side: Side = "end") -> str:
    """Cut `text` to at most `max_tokens` tokens of `tokenizer`, from the end or from the start.

    A text that already fits is returned unchanged. Otherwise the kept tokens are decoded, so the result
    is in the tokenizer's own rendering (an uncased WordPiece tokenizer lowercases, and writes the
    characters it cannot encode as "[UNK]"; byte-level BPE reproduces the text exactly). A byte-level
    token can hold part of a multi-byte character; a cut there would decode to U+FFFD, so such a boundary
    token is dropped as well (unless the text itself contains U+FFFD). The result is re-encoded and
    shortened further in the rare case that the decoded text tokenizes longer than `max_tokens`.

    Args:
        text: The document.
        tokenizer: Anything with HF-style `encode(text, add_special_tokens=False) -> list[int]` and
            `decode(ids) -> str`, such as a transformers tokenizer.
        max_tokens: The budget, without special tokens. 0 gives "".
        side: "end" cuts the end (keeps the beginning); "start" cuts the start (keeps the end).

    Returns:
        `text` itself when it fits, else the decoded kept tokens.

    Raises:
        ConfigError: `max_tokens` is negative or `side` is not "end" or "start".
    """
    _check(side, max_tokens, "max_tokens")
    ids = list(tokenizer.encode(text, add_special_tokens=False))
    if len(ids) <= max_tokens:
        return text
    guard_replacement = _REPLACEMENT not in text
    keep = max_tokens
    while keep > 0:
        kept = ids[:keep] if side == "end" else ids[len(ids) - keep :]
        out = tokenizer.decode(kept)
        boundary = out[-1:] if side == "end" else out[:1]
        if guard_replacement and boundary == _REPLACEMENT:
            keep -= 1  # the cut split a character's bytes: drop the partial token
            continue
        if len(tokenizer.encode(out, add_special_tokens=False)) <= max_tokens:
            return out
        keep -= 1
    return ""


def _is_mark(ch: str) -> bool:
    return unicodedata.category(ch).startswith("M")


def truncate_by_chars(text: str, max_chars: int = NIM_CHARACTER_LIMIT, side: Side = "end") -> str:
    """Cut `text` to at most `max_chars` characters (code points), from the end or from the start.

    The cut never separates a combining mark from the character before it: the cut moves to keep or drop
    them together, so the result may be a character or two shorter than `max_chars`.

    Args:
        text: The document.
        max_chars: The budget in characters; NeMo Evaluator's default is 65,535.
        side: "end" cuts the end (keeps the beginning); "start" cuts the start (keeps the end).

    Returns:
        `text` itself when it fits, else its first (side="end") or last (side="start") characters.

    Raises:
        ConfigError: `max_chars` is negative or `side` is not "end" or "start".

    >>> truncate_by_chars("爱因斯坦出生于德国乌尔姆。", 4)
    '爱因斯坦'
    >>> truncate_by_chars("爱因斯坦出生于德国乌尔姆。", 4, side="start")
    '乌尔姆。'
    >>> truncate_by_chars("short", 10)
    'short'
    """
    _check(side, max_chars, "max_chars")
    if len(text) <= max_chars:
        return text
    if side == "end":
        cut = max_chars
        while cut > 0 and _is_mark(text[cut]):
            cut -= 1  # text[cut] is dropped, so its base character goes too
        return text[:cut]
    cut = len(text) - max_chars
    while cut < len(text) and _is_mark(text[cut]):
        cut += 1  # its base character is dropped, so the mark goes too
    return text[cut:]
