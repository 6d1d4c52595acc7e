"""The model backend registry: every runtime `ascend_eval.models.factory.build` makes, by (role, backend).

Each backend registers its builder next to its runtime class, with `register` as a decorator::

    @register("judge", "torch")
    def build_torch_judge(spec: ModelSpec) -> Judge:
        return lazy_local(spec, LazyJudge, TorchJudgeConfig, TorchJudge)

The backend of an endpoint is its server's API ("openai", or "tei" for text-embeddings-inference's native
routes); that of a local model, `ModelSpec.local_backend` ("torch", "vllm", whose engine settings
`ENGINE_SETTINGS` names). `ascend_eval.models.backends` imports every backend module, so that all are
registered; this module imports none of them, and no backend module imports its engine (torch, vLLM, ...)
at the top: an engine is imported only when one of its runtimes loads.

The steps builders share are here too: an endpoint's client settings (`endpoint_config`, `tei_config`),
and a local model checked now and wrapped to load on first use (`lazy_local`, `local_path`).
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable, Mapping
from pathlib import Path
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, TypeVar

from ascend_eval.models.base import Embedder, Judge, Reranker, Role
from ascend_eval.models.device import DEVICE_ENV, resolve_device
from ascend_eval.models.errors import ConfigError, MissingDependencyError
from ascend_eval.models.spec import ENGINE_SETTINGS, ModelSpec, with_article

if TYPE_CHECKING:
    from ascend_eval.models.http import EndpointConfig
    from ascend_eval.models.lazy import LazyModel

__all__ = [
    "ROLE_KEYS",
    "Builder",
    "Runtime",
    "endpoint_config",
    "lazy_local",
    "local_path",
    "register",
    "registered",
    "tei_config",
]

logger = logging.getLogger("ascend_eval.models.factory")

Runtime = Judge | Embedder | Reranker
Builder = Callable[[ModelSpec], Any]
"""Makes the runtime of a spec whose role is the one the builder is registered for."""
B = TypeVar("B", bound=Builder)
L = TypeVar("L", bound="LazyModel[Any]")
C = TypeVar("C")

ROLE_KEYS: dict[Role, str] = {"judge": "judge", "embedder": "embedder", "reranker": "cross_encoder"}
"""Role -> the setting that gives its model (`evaluate(cross_encoder=...)`, `<setting>_backend`): the one
map of them, where the messages about them are written (`ascend_eval.config` reads it)."""

_BUILDERS: dict[tuple[Role, str], Builder] = {}


def register(role: Role, backend: str) -> Callable[[B], B]:
    """Register the decorated function as the builder of `role`'s runtime on `backend`.

    Raises:
        ValueError: another builder is registered for the pair.
    """

    def add(build: B) -> B:
        known = _BUILDERS.get((role, backend))
        if known is not None and _where(known) != _where(build):
            raise ValueError(
                f"({role!r}, {backend!r}) is already built by {known.__module__}.{known.__qualname__}."
            )
        # The same function from the same file is the same builder, its module imported again (reloaded,
        # or under another name, as doctest collection does): the first stays, with the classes it uses.
        _BUILDERS.setdefault((role, backend), build)
        return build

    return add


def _where(build: Builder) -> tuple[str, str]:
    code = getattr(build, "__code__", None)
    return (code.co_filename if code else build.__module__), build.__qualname__


def registered() -> Mapping[tuple[Role, str], Builder]:
    """The builders registered so far, by (role, backend) (all of them once `models.backends` is imported)."""
    return MappingProxyType(_BUILDERS)


def endpoint_config(spec: ModelSpec, *, parallelism: int | None = None) -> EndpointConfig:
    """The client settings of an OpenAI-compatible server on the URL's base; without `served_model_name`
    the model is the first the server lists (`GET /v1/models`).

    Args:
        spec: an endpoint's spec.
        parallelism: requests in flight when the spec sets none (else `EndpointConfig`'s default).
    """
    from ascend_eval.models.http import EndpointConfig, discover_model, endpoint_base

    key, settings = _endpoint_settings(spec)
    if parallelism is not None:
        settings.setdefault("parallelism", parallelism)
    base = endpoint_base(spec.model)
    name = spec.served_model_name or discover_model(base, **key)
    config = EndpointConfig(url=base, model=name, **key, **settings)
    logger.info("%s: endpoint %s model %s", spec.role, config.url, name)
    return config


def tei_config(spec: ModelSpec) -> tuple[EndpointConfig, int]:
    """The client settings of TEI's native API for a URL ending in its route, and the inputs per request:
    the model and the server's batch limit come from `GET /info` unless `served_model_name` names it."""
    from ascend_eval.models.http import EndpointConfig
    from ascend_eval.models.tei_api import DEFAULT_BATCH, read_info, tei_base, tei_route

    key, settings = _endpoint_settings(spec)
    base = tei_base(spec.model)
    config = EndpointConfig(
        url=base, model=spec.served_model_name or "tei", under_v1=False, **key, **settings
    )
    batch = DEFAULT_BATCH
    if spec.served_model_name is None:
        info = read_info(config)
        config = EndpointConfig(url=base, model=info.model_id, under_v1=False, **key, **settings)
        batch = info.max_client_batch_size
    route = tei_route(spec.model)
    logger.info(
        "%s: TEI %s%s model %s, %d inputs per request", spec.role, config.url, route, config.model, batch
    )
    return config, batch


def _endpoint_settings(spec: ModelSpec) -> tuple[dict[str, Any], dict[str, Any]]:
    """Where the spec's API key is, and the client settings it sets (`EndpointConfig`'s defaults else)."""
    key = {"api_key_env": spec.api_key_env, "api_key_file": spec.api_key_file}
    client = {
        k: getattr(spec, k)
        for k in ("request_timeout", "max_retries", "parallelism")
        if getattr(spec, k) is not None
    }
    return key, client


def lazy_local(
    spec: ModelSpec,
    lazy: type[L],
    config: Callable[..., C],
    runtime: Callable[[C], Any],
    *,
    vllm: bool = False,
) -> L:
    """A local model, checked now and wrapped in its role's lazy runtime, so that its weights load when the
    first request reaches it.

    Args:
        spec: a local model's spec.
        lazy: the role's lazy runtime (`LazyJudge`, `LazyEmbedder`, `LazyReranker`).
        config: the runtime's config class, made (and so checked) now from the spec's engine settings.
        runtime: the runtime class, which loads the weights from the config.
        vllm: the runtime is vLLM's, which is checked to be installed before any model loads.
    """
    from ascend_eval.models.weights.paths import local_model_id

    if vllm:
        _need_vllm(lazy.role)
    if spec.device is not None or os.environ.get(DEVICE_ENV):
        # A device that cannot be had is found now, before a shipped model or a GGUF file is converted;
        # auto-detection always finds one, so it waits for the model to load.
        resolve_device(spec.device)
    path = local_path(spec)
    fields = ENGINE_SETTINGS[(lazy.role, spec.local_backend)]
    settings = {fields[k]: getattr(spec, k) for k in fields if getattr(spec, k) is not None}
    made = config(model=str(path), device=spec.device, **settings)
    return lazy(local_model_id(path), lambda: runtime(made))


def _need_vllm(role: Role) -> None:
    """Refuse the vllm backend where vLLM is not installed, before any model loads."""
    from ascend_eval.models.vllm_runtime import VLLM_INSTALL, vllm_installed

    if not vllm_installed():
        raise MissingDependencyError(
            f"The vllm {role} backend needs vLLM, which is not installed: {VLLM_INSTALL}."
        )


def local_path(spec: ModelSpec) -> Path:
    """The local directory of `spec`'s model: a shipped model's (installed on first use), the path itself,
    or for a `.gguf` judge its converted checkpoint (`resolve_checkpoint`, once per file).

    Raises:
        ConfigError: no role, an endpoint, an unknown name or path, a shipped model of another role, or a
            directory that is not a model of the role.
    """
    role = role_of(spec)
    if spec.is_endpoint:
        raise ConfigError(f"{ROLE_KEYS[role]}={spec.model!r} is a server URL; a local model is needed here.")
    from ascend_eval.models.weights.registry import DEFAULTS, SHIPPED

    text = spec.model.strip()
    target = text.removeprefix("local:")
    if text == "local:default":
        target = DEFAULTS[role]  # a reranker was refused by the spec: none ships
    if target in SHIPPED:
        shipped = SHIPPED[target]
        if shipped.role != role:
            raise ConfigError(f"{target!r} is a shipped {shipped.role}, not {with_article(role)}.")
        path = shipped.resolve()
    else:
        path = Path(target).expanduser()
        if not path.exists():
            names = [n for n, m in SHIPPED.items() if m.role == role]
            raise ConfigError(
                f"{role}={text!r} is not an existing path, an http(s) URL of an OpenAI-compatible server, "
                f"or a shipped model ({names}). Pass a local model directory or file, or a server URL."
            )
    if role == "judge":
        from ascend_eval.models.weights.gguf import resolve_checkpoint

        return resolve_checkpoint(path)
    from ascend_eval.models.checks import check_model_dir

    return check_model_dir(path, what="embedder" if role == "embedder" else "cross_encoder")


def role_of(spec: ModelSpec) -> Role:
    """The spec's role.

    Raises:
        ConfigError: it has none.
    """
    if spec.role is None:
        raise ConfigError(
            f"ModelSpec(model={spec.model!r}) has no role; set role='judge', 'embedder' or 'reranker' (or "
            "pass it as evaluate(judge=...), which gives it that role)."
        )
    return spec.role
