"""Model runtimes for a job spec's models: HTTP endpoints with the spec's timeouts and secrets, or local
models on the device.

A spec `url` is either
* an `http(s)://` URL: NeMo writes the endpoint's full path (`.../v1/chat/completions`, `.../v1/ranking`);
  our endpoint clients take the server's base URL and add the path themselves, so the path is dropped;
* `local:PATH` or `local:NAME` (a shipped model, or `default` for the role's default), or a bare path or
  shipped name: loaded on the device on first use.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Sequence
from typing import Any

from ascend_eval.jobs.secrets import SecretStore
from ascend_eval.jobs.spec import InferenceParams, JudgeLLM, ModelRef, RetrieverModel
from ascend_eval.models.base import (
    ClassifyRequest,
    ClassifyResult,
    GenerateRequest,
    GenerateResult,
    Judge,
    Role,
)

logger = logging.getLogger("ascend_eval.jobs")

_PATH_SUFFIXES = ("/chat/completions", "/completions", "/embeddings", "/ranking", "/reranking", "/rerank")


def is_http(url: str) -> bool:
    return url.startswith(("http://", "https://"))


def endpoint_base(url: str) -> str:
    """The server's base URL for a URL that may name one endpoint of it.

    >>> endpoint_base("https://integrate.api.nvidia.com/v1/chat/completions")
    'https://integrate.api.nvidia.com/v1'
    >>> endpoint_base("https://ai.api.nvidia.com/v1/ranking/")
    'https://ai.api.nvidia.com/v1'
    >>> endpoint_base("http://127.0.0.1:8000")
    'http://127.0.0.1:8000'
    """
    base = url.strip().rstrip("/")
    for suffix in _PATH_SUFFIXES:
        if base.endswith(suffix):
            return base[: -len(suffix)]
    return base


def local_spec(url: str, role: Role) -> str:
    """What `build_judge` / `build_embedder` / `build_reranker` accept for a local spec `url`.

    >>> local_spec("local:default", "judge")
    'smollm2-135m-instruct'
    >>> local_spec("local:/models/qwen", "judge")
    '/models/qwen'
    """
    from ascend_eval.models.weights.registry import DEFAULTS

    target = url.removeprefix("local:")
    if target == "default":
        if role not in DEFAULTS:
            from ascend_eval.models.errors import ConfigError

            raise ConfigError(
                f"url 'local:default': no {role} ships by default. Give a local {role} directory "
                "(local:/path/to/model) or an http(s) URL."
            )
        return DEFAULTS[role]
    return target


class InferenceParamsJudge:
    """A judge whose generation requests use the spec's `inference_params` (max_tokens, temperature,
    top_p) instead of each prompt's defaults.

    The overrides are part of `model_id`, so cached answers produced with other settings are not reused.
    Classification requests (verdicts read from next-token probabilities) generate nothing, so these
    settings do not apply to them.
    """

    def __init__(self, judge: Judge, params: InferenceParams) -> None:
        self.judge = judge
        self.overrides = {k: v for k, v in params.model_dump().items() if v is not None}
        tag = ",".join(f"{k}={v}" for k, v in sorted(self.overrides.items()))
        self.model_id = f"{judge.model_id}+{tag}" if tag else judge.model_id

    def generate(self, requests: Sequence[GenerateRequest]) -> list[GenerateResult]:
        tuned = [
            dataclasses.replace(r, params=dataclasses.replace(r.params, **self.overrides)) for r in requests
        ]
        return self.judge.generate(tuned)

    def classify(self, requests: Sequence[ClassifyRequest]) -> list[ClassifyResult]:
        return self.judge.classify(requests)

    def close(self) -> None:
        close = getattr(self.judge, "close", None)
        if close is not None:
            close()

    def __repr__(self) -> str:
        return f"InferenceParamsJudge({self.judge!r}, {self.overrides})"


class ModelFactory:
    """Builds each spec model once: the same local model named twice (judge and RAG model) loads once.

    Every runtime it builds is closed by `close()`.

    Args:
        secrets: where `api_key_secret` names are looked up.
        device: the device for local models (None: the ASCEND_EVAL_DEVICE setting, else auto).
    """

    def __init__(self, secrets: SecretStore, device: str | None = None) -> None:
        self.secrets = secrets
        self.device = device
        self._built: dict[tuple[Any, ...], Any] = {}

    def judge(self, settings: JudgeLLM) -> Judge:
        """The judge LLM, with the spec's timeouts, retries, parallelism and inference params."""
        judge = self._build(
            settings.model,
            "judge",
            request_timeout=settings.request_timeout,
            max_retries=settings.max_retries,
            parallelism=settings.parallelism,
        )
        if settings.inference_params is not None:
            return InferenceParamsJudge(judge, settings.inference_params)  # type: ignore[return-value]
        return judge  # type: ignore[no-any-return]

    def generator(self, ref: ModelRef) -> Judge:
        """The RAG model that writes answers."""
        return self._build(ref, "judge")  # type: ignore[no-any-return]

    def embedder(self, ref: RetrieverModel) -> Any:
        return self._build(ref, "embedder", nim=ref.format == "nim")

    def reranker(self, ref: RetrieverModel) -> Any:
        return self._build(ref, "reranker")

    def _build(self, ref: ModelRef, role: Role, *, nim: bool = False, **endpoint: float | int | None) -> Any:
        settings = {k: v for k, v in endpoint.items() if v is not None}
        if not is_http(ref.url):
            key: tuple[Any, ...] = (role, ref.url)  # one copy of the weights, whatever the endpoint settings
            if key not in self._built:
                self._built[key] = self._local(ref, role, settings)
            return self._built[key]
        key = (role, ref.url, ref.name, ref.api_key_secret, nim, tuple(sorted(settings.items())))
        if key not in self._built:
            self._built[key] = self._endpoint(ref, role, nim, settings)
        return self._built[key]

    def _endpoint(self, ref: ModelRef, role: Role, nim: bool, settings: dict[str, Any]) -> Any:
        from ascend_eval.models.http import EndpointConfig, discover_model

        base = endpoint_base(ref.url)
        key = self.secrets.resolve(ref.api_key_secret).endpoint_kwargs() if ref.api_key_secret else {}
        name = ref.name or discover_model(base, **key)
        config = EndpointConfig(url=base, model=name, **key, **settings)
        logger.info("%s: endpoint %s model %s", role, config.url, name)
        if role == "judge":
            from ascend_eval.models.judge.openai import OpenAIJudge

            return OpenAIJudge(config)
        if role == "embedder":
            from ascend_eval.models.embedder.openai import OpenAIEmbedder

            return OpenAIEmbedder(config, send_input_type=nim)
        from ascend_eval.models.reranker.openai import OpenAIReranker

        return OpenAIReranker(config)

    def _local(self, ref: ModelRef, role: Role, settings: dict[str, Any]) -> Any:
        from ascend_eval.backends import build_embedder, build_judge, build_reranker

        unused = (["api_key_secret"] if ref.api_key_secret else []) + sorted(settings)
        if unused:
            # Harmless (a spec written for endpoints, pointed at a local model) but worth a line in the log.
            logger.info("%s %s is local: %s do not apply", role, ref.url, ", ".join(unused))
        build = {"judge": build_judge, "embedder": build_embedder, "reranker": build_reranker}[role]
        return build(local_spec(ref.url, role), device=self.device)

    def close(self) -> None:
        for backend in self._built.values():
            close = getattr(backend, "close", None)
            if close is not None:
                close()
        self._built.clear()
