"""Turn what a user passes as `judge=`, `embedder=` or `cross_encoder=` into a model runtime.

Local models are wrapped in `Deferred`: their weights load when the first request reaches them.

Accepted everywhere: an object that already implements the role's protocol; the name of a shipped
default model; a local path (a Hugging Face directory, or a `.gguf` file for a judge), optionally written
`local:PATH`; or an `http(s)://` URL of an OpenAI-compatible server.

`backend` picks the runtime for local models: "torch" (transformers / sentence-transformers, the default
that "auto" means) or "vllm" (vLLM's offline engine; vllm-ascend on NPUs). Both name a model by its files
(`local_model_id`), so they share the request cache. A URL or an instance ignores it.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, Literal

from ascend_eval.models.base import (
    ClassifyRequest,
    ClassifyResult,
    Embedder,
    EmbedKind,
    GenerateRequest,
    GenerateResult,
    Judge,
    Reranker,
    Role,
)
from ascend_eval.models.errors import ConfigError, MissingDependencyError
from ascend_eval.models.weights.paths import local_model_id
from ascend_eval.models.weights.registry import DEFAULTS, SHIPPED

logger = logging.getLogger("ascend_eval.backends")

ModelSpec = str | Path | Any
Backend = Literal["auto", "torch", "vllm"]
BACKENDS = ("auto", "torch", "vllm")


class Deferred:
    """A local model runtime that loads its weights on first use.

    Cache keys need only the model's identity, which comes from its files, so a run whose requests are all
    cached (a finished run re-opened, or a resumed one past a model's last round) never loads that model.
    It implements every role's methods; only the wrapped backend's role is ever called.
    """

    def __init__(self, model_id: str, role: Role, build: Callable[[], Any]) -> None:
        self.model_id = model_id
        self.role = role
        self._build = build
        self._backend: Any = None

    @property
    def loaded(self) -> bool:
        return self._backend is not None

    def backend(self) -> Any:
        if self._backend is None:
            started = time.perf_counter()
            self._backend = self._build()
            if self._backend.model_id != self.model_id:  # the identity the cache was keyed with must hold
                raise ConfigError(
                    f"{self.role} loaded as {self._backend.model_id!r}, expected {self.model_id!r}: "
                    "the model files changed while loading. Run again."
                )
            logger.info("loaded %s %s in %.1fs", self.role, self.model_id, time.perf_counter() - started)
        return self._backend

    def generate(self, requests: Sequence[GenerateRequest]) -> list[GenerateResult]:
        return self.backend().generate(requests) if requests else []

    def classify(self, requests: Sequence[ClassifyRequest]) -> list[ClassifyResult]:
        return self.backend().classify(requests) if requests else []

    def embed(self, texts: Sequence[str], *, kind: EmbedKind = "document") -> Any:
        return self.backend().embed(texts, kind=kind)

    def score(self, pairs: Sequence[tuple[str, str]]) -> Any:
        return self.backend().score(pairs)

    def close(self) -> None:
        if self._backend is not None and hasattr(self._backend, "close"):
            self._backend.close()

    def __repr__(self) -> str:
        return f"Deferred({self.role}={self.model_id!r}, loaded={self.loaded})"


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


def _use_vllm(backend: str, role: Role) -> bool:
    """Whether `backend` asks for vLLM; checks that vLLM is installed before any model loads.

    >>> _use_vllm("auto", "judge"), _use_vllm("torch", "embedder")
    (False, False)
    """
    if backend not in BACKENDS:
        raise ConfigError(f"{role} backend={backend!r}; valid: {', '.join(map(repr, BACKENDS))}.")
    if backend != "vllm":
        return False
    from ascend_eval.models.vllm_runtime import VLLM_INSTALL, vllm_installed

    if not vllm_installed():
        raise MissingDependencyError(
            f"The vllm {role} backend needs vLLM, which is not installed: {VLLM_INSTALL}."
        )
    return True


def _endpoint(url: str, model: str | None, api_key_env: str | None) -> Any:
    from ascend_eval.models.http import EndpointConfig, discover_model

    return EndpointConfig(
        url=url, model=model or discover_model(url, api_key_env=api_key_env), api_key_env=api_key_env
    )


def build_judge(
    spec: ModelSpec,
    *,
    device: str | None = None,
    model: str | None = None,
    api_key_env: str | None = None,
    backend: Backend = "auto",
) -> Judge:
    """A judge from an instance, a shipped name, a path (HF directory or GGUF) or a server URL; a local one
    runs on `backend` ("auto" = "torch", or "vllm")."""
    if spec is None:
        spec = DEFAULTS["judge"]
    if isinstance(spec, Judge):
        return spec
    if isinstance(spec, str) and _is_url(spec):
        from ascend_eval.models.judge.openai import OpenAIJudge

        return OpenAIJudge(_endpoint(spec, model, api_key_env))
    vllm = _use_vllm(backend, "judge")
    from ascend_eval.models.weights.gguf import resolve_checkpoint

    path = resolve_checkpoint(_local_path(spec, "judge"))  # a GGUF converts once; its directory names it
    if vllm:
        from ascend_eval.models.judge.vllm import VllmJudge, VllmJudgeConfig

        vllm_config = VllmJudgeConfig(model=str(path), device=device)  # validated now, started on first use
        return Deferred(local_model_id(path), "judge", lambda: VllmJudge(vllm_config))  # type: ignore[return-value]
    from ascend_eval.models.judge.torch import TorchJudge, TorchJudgeConfig

    config = TorchJudgeConfig(model=str(path), device=device)  # validated now, loaded on first use
    return Deferred(local_model_id(path), "judge", lambda: TorchJudge(config))  # type: ignore[return-value]


def build_embedder(
    spec: ModelSpec,
    *,
    device: str | None = None,
    model: str | None = None,
    api_key_env: str | None = None,
    backend: Backend = "auto",
) -> Embedder:
    """An embedder from an instance, a shipped name, a sentence-transformers directory or a server URL; a
    local one runs on `backend` ("auto" = "torch", or "vllm")."""
    if spec is None:
        spec = DEFAULTS["embedder"]
    if isinstance(spec, Embedder):
        return spec
    if isinstance(spec, str) and _is_url(spec):
        from ascend_eval.models.embedder.openai import OpenAIEmbedder

        return OpenAIEmbedder(_endpoint(spec, model, api_key_env))
    vllm = _use_vllm(backend, "embedder")
    from ascend_eval.models.embedder.sentence_transformers import (
        TorchEmbedder,
        TorchEmbedderConfig,
        check_model_dir,
    )

    path = check_model_dir(_local_path(spec, "embedder"), what="embedder")
    if vllm:
        from ascend_eval.models.embedder.vllm import VllmEmbedder, VllmEmbedderConfig

        vllm_config = VllmEmbedderConfig(model=str(path), device=device)
        return Deferred(local_model_id(path), "embedder", lambda: VllmEmbedder(vllm_config))  # type: ignore[return-value]
    config = TorchEmbedderConfig(model=str(path), device=device)
    return Deferred(local_model_id(path), "embedder", lambda: TorchEmbedder(config))  # type: ignore[return-value]


def build_reranker(
    spec: ModelSpec,
    *,
    device: str | None = None,
    model: str | None = None,
    api_key_env: str | None = None,
    backend: Backend = "auto",
) -> Reranker:
    """A cross-encoder from an instance, a local directory or a NIM-style `/v1/ranking` URL; a local one
    runs on `backend` ("auto" = "torch", or "vllm").

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
    vllm = _use_vllm(backend, "reranker")
    from ascend_eval.models.embedder.sentence_transformers import check_model_dir
    from ascend_eval.models.reranker.cross_encoder import TorchReranker, TorchRerankerConfig

    path = check_model_dir(_local_path(spec, "reranker"), what="cross_encoder")
    if vllm:
        from ascend_eval.models.reranker.vllm import VllmReranker, VllmRerankerConfig

        vllm_config = VllmRerankerConfig(model=str(path), device=device)
        return Deferred(local_model_id(path), "reranker", lambda: VllmReranker(vllm_config))  # type: ignore[return-value]
    config = TorchRerankerConfig(model=str(path), device=device)
    return Deferred(local_model_id(path), "reranker", lambda: TorchReranker(config))  # type: ignore[return-value]
