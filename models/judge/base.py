"""`TokenJudge`: what the judges that tokenise their own prompts share, `TorchJudge` and `VllmJudge`.

Both read the same checkpoint directory (a `.gguf` file becomes one through `resolve_checkpoint`), name it
alike (so the request cache is shared between them), render chats with the same `ChatRenderer`, tokenise
with the checkpoint's own tokenizer and read the same label tokens, so that they see identical inputs and
differ only in the engine that runs the model. The label probabilities both compute come from one op,
`kernels.label_softmax`. *(lm-eval's `TemplateLM`, under `HFLM` and `VLLM`.)*

transformers is imported when a judge is built, not when this module is imported.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ascend_eval.models.base import ClassifyRequest, GenerateRequest
from ascend_eval.models.errors import BackendError, ConfigError, MissingDependencyError
from ascend_eval.models.judge.chat import ChatRenderer
from ascend_eval.models.weights.gguf import resolve_checkpoint
from ascend_eval.models.weights.paths import local_model_id

__all__ = ["LABEL_CONTEXT_CHARS", "LabelIds", "TokenJudge", "check_judge_model"]

LabelIds = tuple[tuple[int, ...], ...]
"""Per label of a request, the token ids that spell it as the answer's first token."""

LABEL_CONTEXT_CHARS = 32
"""How much of the prompt's end is re-tokenised to see how a label's first token joins the prompt."""


def check_judge_model(owner: str, model: str | Path) -> None:
    """The check of a judge config's `model` (`owner` names the config in the message).

    Raises:
        ConfigError: `model` is neither an existing `.gguf` file nor a directory with a config.json.
    """
    path = Path(model).expanduser()
    if path.suffix.lower() == ".gguf":
        if not path.is_file():
            raise ConfigError(f"{owner}.model='{model}': no such GGUF file.")
    elif not (path / "config.json").is_file():
        raise ConfigError(
            f"{owner}.model='{model}' is neither a .gguf file nor a checkpoint directory "
            "with a config.json. Pass a local directory (nothing is downloaded) or a .gguf file."
        )


def load_tokenizer(path: Path, trust_remote_code: bool) -> Any:
    """The checkpoint's own Hugging Face tokenizer, from the directory alone.

    Raises:
        MissingDependencyError: transformers is not installed.
        BackendError: the directory has no loadable tokenizer.
    """
    try:
        import transformers
    except ImportError as e:
        raise MissingDependencyError(
            f"The torch and vllm judges need transformers ({e}). Install it with "
            "`pip install 'ascend-eval[torch]'`, or reinstall vLLM."
        ) from e
    try:
        return transformers.AutoTokenizer.from_pretrained(
            path, local_files_only=True, trust_remote_code=trust_remote_code
        )
    except (OSError, ValueError) as e:
        raise BackendError(f"Could not load the tokenizer of '{path}': {e}") from e


class TokenJudge:
    """The base of the judges that run a checkpoint themselves and read its tokens.

    Args:
        model: a checkpoint directory or a `.gguf` file (converted once, then cached).
        trust_remote_code: allow the checkpoint's own tokenizer code to run.

    Attributes:
        checkpoint: the checkpoint directory the model loads from.
        model_id: the checkpoint's directory name plus a short content hash (see `paths.local_model_id`),
            the same for every backend, so that they share the request cache.
        tokenizer: the checkpoint's own tokenizer; every prompt is tokenised by it.
        chat: renders messages into prompt text with the tokenizer's chat template.
        max_model_len: the longest prompt plus output, in tokens; None means unlimited. The subclass sets
            it once it knows its engine's limit.

    Raises:
        ConfigError: `model` is neither a `.gguf` file nor a checkpoint directory.
        MissingDependencyError: transformers (or, for GGUF, gguf) is missing.
        BackendError: the tokenizer cannot be loaded.
    """

    def __init__(self, model: str | Path, *, trust_remote_code: bool) -> None:
        self.checkpoint = resolve_checkpoint(model)
        self.model_id = local_model_id(self.checkpoint)
        self.tokenizer = load_tokenizer(self.checkpoint, trust_remote_code)
        self.chat = ChatRenderer(self.tokenizer)
        self.max_model_len: int | None = None
        self._label_cache: dict[tuple[str, str], tuple[int, ...]] = {}

    # ------------------------------------------------------------------ prompts

    def encode_prompts(self, texts: Sequence[str]) -> list[list[int]]:
        """Token ids of rendered prompts (special tokens added only where the chat template writes none)."""
        enc = self.tokenizer(list(texts), add_special_tokens=self.chat.add_special_tokens)
        return [list(ids) for ids in enc["input_ids"]]

    def generate_prompts(self, requests: Sequence[GenerateRequest]) -> list[list[int]]:
        """Each request's prompt tokens: its chat rendered with the assistant turn opened."""
        return self.encode_prompts([self.chat.render(r.messages) for r in requests])

    def classify_prompts(self, requests: Sequence[ClassifyRequest]) -> tuple[list[list[int]], list[LabelIds]]:
        """Each request's prompt tokens (the chat rendered with the assistant turn opened, then
        `answer_prefix`) and its labels' token ids (`label_matrix`).

        Raises:
            ConfigError: two labels of a request start with the same token.
        """
        texts = [self.chat.render(r.messages) + r.answer_prefix for r in requests]
        return self.encode_prompts(texts), [
            self.label_matrix(t, r.labels) for t, r in zip(texts, requests, strict=True)
        ]

    # ------------------------------------------------------------------ label tokens

    def label_matrix(self, prompt_text: str, labels: Sequence[str]) -> LabelIds:
        """The token ids of each label as the answer's first token after `prompt_text` (see
        `label_token_ids`).

        Raises:
            ConfigError: two labels share a token, so their probabilities could not be told apart.
        """
        tail = prompt_text[-LABEL_CONTEXT_CHARS:]
        ids = tuple(self.label_token_ids(tail, label) for label in labels)
        owner: dict[int, str] = {}
        for label, toks in zip(labels, ids, strict=True):
            for t in toks:
                if t in owner and owner[t] != label:
                    raise ConfigError(
                        f"Labels {owner[t]!r} and {label!r} both start with token {t} "
                        f"({self.tokenizer.decode([t])!r}), so their probabilities cannot be told apart. "
                        "Use labels whose first tokens differ (e.g. 'Yes'/'No', or single digits)."
                    )
                owner[t] = label
        return ids

    def label_token_ids(self, tail: str, label: str) -> tuple[int, ...]:
        """The first token of `label` as the tokenizer writes it right after the prompt's `tail`, plus the
        first token of " " + label when that differs and is not bare whitespace.

        Raises:
            ConfigError: the label encodes to no tokens.
        """
        key = (tail, label)
        cached = self._label_cache.get(key)
        if cached is not None:
            return cached

        def encode(text: str) -> list[int]:
            return list(self.tokenizer(text, add_special_tokens=False)["input_ids"])

        base, joined = encode(tail), encode(tail + label)
        if len(joined) > len(base) and joined[: len(base)] == base:
            first = joined[len(base)]
        else:
            # The label merged with the prompt's last characters into one token; the prompt the model reads
            # ends before the label, so take the label's own first token instead.
            own = encode(label)
            if not own:
                raise ConfigError(f"Label {label!r} encodes to no tokens; use a non-empty label.")
            first = own[0]
        ids = [first]
        spaced = encode(" " + label)
        if spaced and spaced[0] != first and self.tokenizer.decode([spaced[0]]).strip():
            ids.append(spaced[0])
        result = tuple(ids)
        self._label_cache[key] = result
        return result

    # ------------------------------------------------------------------ length limits

    def too_long(self, n_tokens: int, room: int) -> str | None:
        """Why a prompt of `n_tokens` that needs `room` tokens after it does not fit `max_model_len`, or
        None when it fits."""
        if self.max_model_len is not None and n_tokens + room > self.max_model_len:
            need = "" if room == 0 else f" plus at least {room} generated token"
            return (
                f"The prompt has {n_tokens} tokens{need}, over max_model_len={self.max_model_len} of judge "
                f"{self.model_id}. Shorten the inputs (e.g. fewer or shorter contexts) or raise "
                "max_model_len."
            )
        return None

    def new_token_cap(self, prompt_len: int, max_tokens: int) -> int:
        """How many tokens a request may generate after its prompt: `max_tokens`, cut to what is left of
        `max_model_len` (at least 1)."""
        if self.max_model_len is None:
            return max_tokens
        return max(1, min(max_tokens, self.max_model_len - prompt_len))
