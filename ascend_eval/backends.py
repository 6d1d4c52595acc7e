"""Turn what a user passes as `judge=`, `embedder=` or `cross_encoder=` into a model runtime.

Accepted everywhere: an object that already implements the role's protocol; the name of a shipped
default model; a local path (a Hugging Face directory, or a `.gguf` file for a judge), optionally written
`local:PATH`; or an `http(s)://` URL of an OpenAI-compatible server.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ascend_eval.models.base import Embedder, Judge, Reranker, Role
from ascend_eval.models.errors import ConfigError
from ascend_eval.models.registry import DEFAULTS, SHIPPED

ModelSpec = str | Path | Any


def _is_url(spec: str) -> bool:
    return spec.startswith(("http://", "https://"))


def _local_path(spec: str | Path, role: Role) -> Path:
    text = str(spec)
    if text in SHIPPED:
        model = SHIPPED[text]
        if model.role != role:
            raise ConfigError(f"{text!r} is a shipped {model.role}, not a {role}.")
        return model.resolve()
    path = Path(text.removeprefix("local:")).expanduser()
    if not path.exists():
        names = [n for n, m in SHIPPED.items() if m.role == role]
        raise ConfigError(
            f"{role}={text!r} is not an existing path, an http(s) URL of an OpenAI-compatible server, or a "
            f"shipped model ({names}). Pass a local model directory or file, or a server URL."
        )
    return path


def _endpoint(url: str, model: str | None, api_key_env: str | None) -> Any:
    from ascend_eval.models.http import EndpointConfig, discover_model

    return EndpointConfig(
        url=url, model=model or discover_model(url, api_key_env=api_key_env), api_key_env=api_key_env
    )


def build_judge(
    spec: ModelSpec, *, device: str | None = None, model: str | None = None, api_key_env: str | None = None
) -> Judge:
    """A judge from an instance, a shipped name, a path (HF directory or GGUF) or a server URL."""
    if spec is None:
        spec = DEFAULTS["judge"]
    if isinstance(spec, Judge):
        return spec
    if isinstance(spec, str) and _is_url(spec):
        from ascend_eval.models.judge.openai import OpenAIJudge

        return OpenAIJudge(_endpoint(spec, model, api_key_env))
    from ascend_eval.models.judge.torch import TorchJudge, TorchJudgeConfig

    return TorchJudge(TorchJudgeConfig(model=str(_local_path(spec, "judge")), device=device))


def build_embedder(
    spec: ModelSpec, *, device: str | None = None, model: str | None = None, api_key_env: str | None = None
) -> Embedder:
    """An embedder from an instance, a shipped name, a sentence-transformers directory or a server URL."""
    if spec is None:
        spec = DEFAULTS["embedder"]
    if isinstance(spec, Embedder):
        return spec
    if isinstance(spec, str) and _is_url(spec):
        from ascend_eval.models.embedder.openai import OpenAIEmbedder

        return OpenAIEmbedder(_endpoint(spec, model, api_key_env))
    from ascend_eval.models.embedder.sentence_transformers import TorchEmbedder, TorchEmbedderConfig

    return TorchEmbedder(TorchEmbedderConfig(model=str(_local_path(spec, "embedder")), device=device))


def build_reranker(
    spec: ModelSpec, *, device: str | None = None, model: str | None = None, api_key_env: str | None = None
) -> Reranker:
    """A cross-encoder from an instance, a local directory or a NIM-style `/v1/ranking` URL.

    No cross-encoder ships offline, so there is no default: metrics that need one ask for it.
    """
    if spec is None:
        raise ConfigError(
            "This metric needs a cross-encoder and none is configured. Pass cross_encoder=PATH (a local "
            "sentence-transformers CrossEncoder directory) or URL (a /v1/ranking endpoint), or use "
            "answer_similarity with method='embedding'."
        )
    if isinstance(spec, Reranker):
        return spec
    if isinstance(spec, str) and _is_url(spec):
        from ascend_eval.models.reranker.openai import OpenAIReranker

        return OpenAIReranker(_endpoint(spec, model, api_key_env))
    from ascend_eval.models.reranker.cross_encoder import TorchReranker, TorchRerankerConfig

    return TorchReranker(TorchRerankerConfig(model=str(_local_path(spec, "reranker")), device=device))
