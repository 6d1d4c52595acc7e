"""RAGAS's judge and embedding objects -> our model arguments (a `ModelSpec`, or what the user gave us).

RAGAS is handed client objects: `LangchainLLMWrapper(ChatOpenAI(base_url=...))`, `llm_factory(model,
client=OpenAI(base_url=...))`, LangChain or RAGAS embeddings. Each is read for what our runtimes need:
the server's URL and model name (an `http(s)://` endpoint), or a local directory (which then runs on the
NPU, GPU or CPU), plus the key's source, the decoding settings and the client's timeout and retries.
Nothing is imported from RAGAS or LangChain: objects are recognised by their class names.

API keys never go into a spec (`ModelSpec.api_key_env` names a variable). A key the user's object holds is
looked up in the environment (`OPENAI_API_KEY` first); a key written into the script is handed to our
client through a variable of this process only while the client is built (`Secrets`).
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ascend_eval.data.objects import is_type
from ascend_eval.errors import ConfigError
from ascend_eval.models.base import Embedder, Judge, Reranker, Role
from ascend_eval.models.factory import model_spec
from ascend_eval.models.spec import ModelSpec

OPENAI_DEFAULT_BASE = "https://api.openai.com/v1"
KEY_VARIABLE = "ASCEND_EVAL_SECRET_RAGAS_KEY_{}"
"""The process-local variable a key written into the user's script is handed over in, while the client is
built (the secrets convention of `ascend_eval.jobs.secrets`)."""

_INSTRUCTOR_DEFAULTS = {"temperature": 0.01, "top_p": 0.1, "max_tokens": 1024}
"""RAGAS's `InstructorModelArgs` defaults: mapped only when the user changed them, so that our greedy,
per-prompt-capped decoding stays the default."""

_LLM_FIX = (
    "Pass llm=LangchainLLMWrapper(ChatOpenAI(base_url=URL, model=NAME)) or llm_factory(NAME, "
    "client=OpenAI(base_url=URL)) for an OpenAI-compatible server (vLLM, NIM, MindIE), or llm=PATH (a local "
    "checkpoint directory or .gguf file, run on the NPU/GPU/CPU) or an ascend_eval ModelSpec"
)
_EMBEDDINGS_FIX = (
    "Pass embeddings=OpenAIEmbeddings(base_url=URL, model=NAME) for a /v1/embeddings server, "
    "HuggingFaceEmbeddings(model_name=LOCAL_DIR) for a local sentence-transformers model (run on the "
    "NPU/GPU/CPU), or embeddings=PATH, a shipped name ('multilingual-e5-small') or an ascend_eval ModelSpec"
)


@dataclass
class Secrets:
    """Keys found written into the user's script, each under its own process-local variable name."""

    keys: dict[str, str] = field(default_factory=dict)
    """variable name -> key."""

    def variable(self, key: str) -> str:
        """The variable that will hold `key` (the same one for the same key)."""
        for name, value in self.keys.items():
            if value == key:
                return name
        name = KEY_VARIABLE.format(len(self.keys))
        self.keys[name] = key
        return name

    def __contains__(self, spec: object) -> bool:
        return isinstance(spec, ModelSpec) and spec.api_key_env in self.keys

    @contextmanager
    def exposed(self) -> Iterator[None]:
        """The keys in the environment for the duration of the block (our clients read them when built),
        and the variables as they were afterwards."""
        before = {name: os.environ.get(name) for name in self.keys}
        os.environ.update(self.keys)
        try:
            yield
        finally:
            for name, value in before.items():
                if value is None:
                    os.environ.pop(name, None)
                else:
                    os.environ[name] = value


def _ours(value: Any) -> bool:
    """Whether `value` is already one of our model arguments: a path, name, URL or `ModelSpec`."""
    return isinstance(value, str | Path | ModelSpec)


def _runtime(value: Any) -> bool:
    """Whether `value` is one of our model runtimes (checked after RAGAS's and LangChain's classes, since
    the runtime protocols are structural)."""
    return isinstance(value, Judge | Embedder | Reranker)


def _named(value: Any) -> str:
    return f"{type(value).__module__}.{type(value).__name__}"


def _secret_text(value: Any) -> str | None:
    """The key a client holds: a plain string or a pydantic `SecretStr`."""
    if value is None:
        return None
    reveal = getattr(value, "get_secret_value", None)
    text = reveal() if callable(reveal) else value
    return text if isinstance(text, str) and text.strip() else None


def _key_source(key: str | None, secrets: Secrets) -> str | None:
    """The environment variable that holds `key` (OPENAI_API_KEY first), or a process-local one for a key
    written into the script; None for no key."""
    if key is None:
        return None
    if os.environ.get("OPENAI_API_KEY") == key:
        return "OPENAI_API_KEY"
    for name in sorted(os.environ):
        if os.environ[name] == key and not name.startswith(KEY_VARIABLE.format("")):
            return name
    return secrets.variable(key)


def _seconds(timeout: Any) -> float | None:
    """A client timeout in seconds: a number, an `httpx.Timeout` (its read timeout) or a (connect, read)
    pair; None when unset."""
    if isinstance(timeout, bool) or timeout is None:
        return None
    if isinstance(timeout, int | float):
        return float(timeout) if timeout > 0 else None
    if isinstance(timeout, tuple) and timeout:
        return _seconds(timeout[-1])
    return _seconds(getattr(timeout, "read", None))


def _endpoint_spec(
    role: Role, url: str, model: str | None, key: str | None, secrets: Secrets, **settings: Any
) -> ModelSpec:
    fields = {k: v for k, v in settings.items() if v is not None}
    return model_spec(
        url.rstrip("/"),
        role,
        served_model_name=model or None,
        api_key_env=_key_source(key, secrets),
        **fields,
    )


def _openai_client(client: Any, what: str) -> Any:
    """The `openai.OpenAI` / `AsyncOpenAI` client inside an instructor-patched one."""
    inner = client
    for _ in range(3):  # instructor wraps the client once; a LiteLLM or other adapter has no base_url
        if is_type(inner, "openai", "OpenAI", "AsyncOpenAI"):
            return inner
        inner = getattr(inner, "client", None)
        if inner is None:
            break
    raise ConfigError(
        f"{what}: its client is a {_named(client)}, not an openai.OpenAI / AsyncOpenAI client, so its "
        f"server cannot be read. {_LLM_FIX}."
    )


def judge_arg(llm: Any, secrets: Secrets, *, what: str = "llm") -> Any:
    """Our judge argument for what RAGAS was given as `llm` (or a metric's `llm`).

    Raises:
        ConfigError: an LLM object that runs somewhere we cannot reach (a provider SDK other than an
            OpenAI-compatible server, a Hub model id), named, with what to pass instead.
    """
    if llm is None or _ours(llm):
        return llm
    if is_type(llm, "ragas", "LangchainLLMWrapper"):
        return judge_arg(llm.langchain_llm, secrets, what=f"{what} (LangchainLLMWrapper)")
    if is_type(llm, "ragas", "InstructorLLM"):
        return _instructor_judge(llm, secrets, what)
    if is_type(llm, "langchain_openai", "AzureChatOpenAI", "AzureOpenAI"):
        raise ConfigError(
            f"{what} is {_named(llm)}: Azure OpenAI deployments are not mapped (their URLs carry the "
            f"deployment and API version). {_LLM_FIX}."
        )
    if is_type(llm, "langchain_openai", "ChatOpenAI", "OpenAI") or is_type(
        llm, "langchain_community", "ChatOpenAI"
    ):
        return _endpoint_spec(
            "judge",
            llm.openai_api_base or os.environ.get("OPENAI_BASE_URL") or OPENAI_DEFAULT_BASE,
            llm.model_name,
            _secret_text(llm.openai_api_key),
            secrets,
            temperature=getattr(llm, "temperature", None),
            top_p=getattr(llm, "top_p", None),
            max_tokens=getattr(llm, "max_tokens", None),
            request_timeout=_seconds(getattr(llm, "request_timeout", None)),
            max_retries=getattr(llm, "max_retries", None),
        )
    local = _local_pipeline_dir(llm)
    if local is not None:
        return model_spec(local, "judge")
    if _runtime(llm):
        return llm
    raise ConfigError(f"{what} is {_named(llm)}, which ascend-eval cannot map onto a judge. {_LLM_FIX}.")


def _instructor_judge(llm: Any, secrets: Secrets, what: str) -> ModelSpec:
    provider = str(getattr(llm, "provider", "openai")).lower()
    if provider not in ("openai", "vllm"):
        raise ConfigError(
            f"{what} is llm_factory(..., provider={provider!r}); only OpenAI-compatible clients are mapped. "
            f"{_LLM_FIX}."
        )
    client = _openai_client(llm.client, f"{what} (llm_factory)")
    args = dict(getattr(llm, "model_args", None) or {})
    changed = {k: args[k] for k in _INSTRUCTOR_DEFAULTS if k in args and args[k] != _INSTRUCTOR_DEFAULTS[k]}
    return _endpoint_spec(
        "judge",
        str(client.base_url),
        llm.model,
        _secret_text(getattr(client, "api_key", None)),
        secrets,
        request_timeout=_seconds(getattr(client, "timeout", None)),
        max_retries=getattr(client, "max_retries", None),
        **changed,
    )


def _local_pipeline_dir(llm: Any) -> str | None:
    """The local checkpoint directory of a LangChain Hugging Face pipeline LLM, or None for another LLM.

    Raises:
        ConfigError: a Hugging Face pipeline whose `model_id` is not a local directory (a Hub id).
    """
    if is_type(llm, "langchain_huggingface", "ChatHuggingFace") or is_type(
        llm, "langchain_community", "ChatHuggingFace"
    ):
        llm = llm.llm
    if not (
        is_type(llm, "langchain_huggingface", "HuggingFacePipeline")
        or is_type(llm, "langchain_community", "HuggingFacePipeline")
    ):
        return None
    model_id = str(getattr(llm, "model_id", "") or "")
    if not Path(model_id).expanduser().is_dir():
        raise ConfigError(
            f"llm is a HuggingFacePipeline of model_id={model_id!r}, which is not a local directory, and no "
            "model hub is used here. Pass the checkpoint's local directory: "
            "HuggingFacePipeline.from_model_id(model_id='/models/Qwen2.5-7B-Instruct', ...) or llm=PATH."
        )
    return model_id


def embedder_arg(embeddings: Any, secrets: Secrets, *, what: str = "embeddings") -> Any:
    """Our embedder argument for what RAGAS was given as `embeddings` (or a metric's `embeddings`).

    Raises:
        ConfigError: embeddings we cannot reach (another provider, a Hub model id, a cross-encoder, a
            `dimensions` setting), named, with what to pass instead.
    """
    if embeddings is None or _ours(embeddings):
        return embeddings
    if is_type(embeddings, "ragas", "LangchainEmbeddingsWrapper"):
        return embedder_arg(embeddings.embeddings, secrets, what=f"{what} (LangchainEmbeddingsWrapper)")
    if is_type(embeddings, "langchain_openai", "AzureOpenAIEmbeddings"):
        raise ConfigError(
            f"{what} is {_named(embeddings)}: Azure deployments are not mapped. {_EMBEDDINGS_FIX}."
        )
    if is_type(embeddings, "langchain_openai", "OpenAIEmbeddings") or is_type(
        embeddings, "langchain_community", "OpenAIEmbeddings"
    ):
        if getattr(embeddings, "dimensions", None) is not None:
            raise ConfigError(
                f"{what} is OpenAIEmbeddings(dimensions={embeddings.dimensions}); our embedding client "
                "sends no `dimensions`, so the vectors would differ. Drop dimensions= (serve the size "
                "you want) or pass another embedder."
            )
        return _endpoint_spec(
            "embedder",
            embeddings.openai_api_base or os.environ.get("OPENAI_BASE_URL") or OPENAI_DEFAULT_BASE,
            embeddings.model,
            _secret_text(embeddings.openai_api_key),
            secrets,
            request_timeout=_seconds(getattr(embeddings, "request_timeout", None)),
            max_retries=getattr(embeddings, "max_retries", None),
        )
    if is_type(embeddings, "ragas", "OpenAIEmbeddings"):  # RAGAS's own provider, embedding_factory("openai")
        client = _openai_client(embeddings.client, f"{what} (ragas OpenAIEmbeddings)")
        return _endpoint_spec(
            "embedder",
            str(client.base_url),
            embeddings.model,
            _secret_text(getattr(client, "api_key", None)),
            secrets,
        )
    local = _local_embeddings(embeddings, what)
    if local is not None:
        return local
    if _runtime(embeddings):
        return embeddings
    raise ConfigError(
        f"{what} is {_named(embeddings)}, which ascend-eval cannot map onto an embedder. {_EMBEDDINGS_FIX}."
    )


def _local_embeddings(embeddings: Any, what: str) -> ModelSpec | None:
    """A spec for Hugging Face embeddings of a local directory (LangChain's or RAGAS's), else None."""
    if is_type(embeddings, "langchain_huggingface", "HuggingFaceEmbeddings") or is_type(
        embeddings, "langchain_community", "HuggingFaceEmbeddings"
    ):
        name = embeddings.model_name
        kwargs: Mapping[str, Any] = embeddings.model_kwargs or {}
        device = kwargs.get("device")
    elif is_type(embeddings, "ragas", "HuggingFaceEmbeddings"):  # RAGAS's modern provider
        if embeddings.use_api:
            raise ConfigError(
                f"{what} is ragas HuggingFaceEmbeddings(use_api=True), the Hugging Face Inference API, "
                f"which is not mapped. {_EMBEDDINGS_FIX}."
            )
        name, device = embeddings.model, embeddings.device
    elif is_type(embeddings, "ragas", "HuggingfaceEmbeddings"):  # RAGAS's legacy wrapper
        if embeddings.is_cross_encoder:
            raise ConfigError(
                f"{what} is ragas HuggingfaceEmbeddings(model_name={embeddings.model_name!r}), a "
                "cross-encoder. Pass it to ascend-eval as cross_encoder=PATH with "
                "ascend_eval.metrics.AnswerSimilarity(method='cross_encoder') instead."
            )
        name, device = embeddings.model_name, (embeddings.model_kwargs or {}).get("device")
    else:
        return None
    if not Path(str(name)).expanduser().is_dir():
        raise ConfigError(
            f"{what} is {type(embeddings).__name__}(model_name={name!r}), which is not a local directory, "
            "and no model hub is used here. Pass the model's local directory, e.g. "
            "HuggingFaceEmbeddings(model_name='/models/bge-m3'), or a shipped name as "
            "embeddings='multilingual-e5-small'."
        )
    return model_spec(str(name), "embedder", device=str(device) if device is not None else None)


def with_run_config(spec: Any, run_config: Any) -> Any:
    """An endpoint spec with RAGAS's `RunConfig` applied (timeout, max_retries, max_workers), which RAGAS
    gives precedence over the client's own settings; anything else as it is."""
    if run_config is None or not isinstance(spec, ModelSpec) or not spec.is_endpoint:
        return spec
    changes = {
        "request_timeout": _seconds(getattr(run_config, "timeout", None)),
        "max_retries": getattr(run_config, "max_retries", None),
        "parallelism": getattr(run_config, "max_workers", None),
    }
    return spec.replace(**{k: v for k, v in changes.items() if v is not None})
