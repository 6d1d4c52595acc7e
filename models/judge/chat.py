"""Render chat messages into the prompt text a local judge model reads."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ascend_eval.models.base import Message

__all__ = ["FALLBACK_ROLE_NAMES", "ChatRenderer", "render_plain"]

FALLBACK_ROLE_NAMES = {"system": "System", "user": "User", "assistant": "Assistant"}


def render_plain(messages: Sequence[Message]) -> str:
    """The fallback for tokenizers without a chat template: one "Role: content" line per message, then an
    open assistant turn.

    >>> render_plain([Message("system", "Be brief."), Message("user", "Hi")])
    'System: Be brief.\\nUser: Hi\\nAssistant:'
    """
    lines = [f"{FALLBACK_ROLE_NAMES[m.role]}: {m.content}" for m in messages]
    return "\n".join([*lines, f"{FALLBACK_ROLE_NAMES['assistant']}:"])


class ChatRenderer:
    """Turns messages into prompt text with the tokenizer's chat template, the assistant turn opened.

    Args:
        tokenizer: a Hugging Face tokenizer.

    Attributes:
        uses_template: whether the tokenizer's own chat template is used (else `render_plain`).
        add_special_tokens: whether tokenising the rendered text should add BOS and the like. A chat
            template writes its own special tokens, so adding them again would double the BOS; the plain
            fallback writes none.
    """

    def __init__(self, tokenizer: Any) -> None:
        self.tokenizer = tokenizer
        self.uses_template = bool(getattr(tokenizer, "chat_template", None))
        self.add_special_tokens = not self.uses_template

    def render(self, messages: Sequence[Message]) -> str:
        """The prompt text for `messages`, ending where the assistant's answer starts."""
        if not self.uses_template:
            return render_plain(messages)
        chat = [{"role": m.role, "content": m.content} for m in messages]
        try:
            return self._apply(chat)
        except Exception:
            # Some templates (Gemma, early Mistral) reject a system turn; fold it into the first user turn,
            # the way their model cards recommend, and give up only if that fails too.
            if not chat or chat[0]["role"] != "system" or len(chat) < 2 or chat[1]["role"] != "user":
                raise
            merged = [{"role": "user", "content": f"{chat[0]['content']}\n\n{chat[1]['content']}"}, *chat[2:]]
            return self._apply(merged)

    def _apply(self, chat: list[dict[str, str]]) -> str:
        text = self.tokenizer.apply_chat_template(chat, add_generation_prompt=True, tokenize=False)
        if not isinstance(text, str):  # pragma: no cover - guards against a tokenizer returning ids anyway
            raise TypeError(f"apply_chat_template returned {type(text).__name__}, expected str")
        return text
