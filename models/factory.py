"""`build(spec)`: the one place a `ModelSpec` becomes a model runtime, for `evaluate()`, the CLI, jobs and
the benchmarks alike.

* an `http(s)://` URL: `OpenAIJudge`, `OpenAIEmbedder` or `OpenAIReranker` on the server's base URL (an
  endpoint path after it is trimmed); without `served_model_name` the server's first model
  (`GET /v1/models`) is used. A URL ending in `/embed` or `/rerank` is text-embeddings-inference's native
  API: `TEIEmbedder` or `TEIReranker`, with the model and batch limit from `GET /info`.
* anything else is local: a shipped name, a directory, a `.gguf` judge (converted once by
  `resolve_checkpoint`), `local:PATH`, `local:NAME` or `local:default`. It is checked now and wrapped in
  `LazyJudge` / `LazyEmbedder` / `LazyReranker`, so its weights load when the first request reaches it.
  Both backends ("torch", "vllm") name a model by its files (`local_model_id`), so they share the request
  cache.

Which runtime a spec gets is one table, `_BACKENDS`, keyed by (role, backend): the backend of a URL is
its server's API ("openai", or "tei" for TEI's native routes), that of a local model its engine ("torch",
"vllm"). Decoding overrides (`max_tokens`, `temperature`, `top_p`) wrap the judge in
`InferenceParamsJudge`. Every engine is imported only when its runtime is built.
"""

from __future__ import annotations

import importlib
import logging
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any, Literal, overload

from ascend_eval.models.base import Embedder, Judge, Reranker, Role
from ascend_eval.models.device import DEVICE_ENV, resolve_device
from ascend_eval.models.errors import ConfigError, MissingDependencyError
from ascend_eval.models.spec import ENGINE_SETTINGS, ModelSpec, with_article

__all__ = ["ModelArg", "build", "check", "local_path", "resolve", "resolve_models", "spec_for", "tuned"]

logger = logging.getLogger(__name__)

Runtime = Judge | Embedder | Reranker
ModelArg = str | Path | ModelSpec | Judge | Embedder | Reranker | None
"""What `evaluate(judge=..., embedder=..., cross_encoder=...)` accepts: a model string (as
`ModelSpec.model`), a `ModelSpec`, a runtime instance of the role, or None for the role's default."""

_PROTOCOLS: dict[Role, Any] = {"judge": Judge, "embedder": Embedder, "reranker": Reranker}
ROLE_KEYS: dict[Role, str] = {"judge": "judge", "embedder": "embedder", "reranker": "cross_encoder"}
"""Role -> the setting that gives its model (`evaluate(cross_encoder=...)`, `<setting>_backend`): the one
map of them, here where the messages about them are written (`ascend_eval.config` reads it)."""
_WANTED = {
    "judge": "a Judge instance, a ModelSpec, a shipped judge name, a local checkpoint directory or .gguf "
    "file, or an OpenAI-compatible server URL",
    "embedder": "an Embedder instance, a ModelSpec, a shipped embedder name, a sentence-transformers "
    "directory, a /v1/embeddings server URL, or a TEI URL ending in /embed",
    "reranker": "a Reranker instance, a ModelSpec, a CrossEncoder directory, a /v1/ranking server URL, or "
    "a TEI URL ending in /rerank",
}
NO_CROSS_ENCODER = (
    "This metric needs a cross-encoder and none is configured. Pass cross_encoder=PATH (a local "
    "sentence-transformers CrossEncoder directory) or URL (a /v1/ranking endpoint), or use "
    "answer_similarity with method='embedding'."
)


def build(spec: ModelSpec) -> Runtime:
    """The runtime `spec` describes; a local model is checked now and loads on first use.

    Raises:
        ConfigError: `spec.role` is unset, the model is not found, or it is not a model of its role.
        MissingDependencyError: backend="vllm" and vLLM is not installed.
        BackendError: an endpoint without `served_model_name` cannot list its models.
    """
    role = _role(spec)
    return tuned(_builder(spec, role)(spec, role), spec)


def tuned(runtime: Any, spec: ModelSpec) -> Any:
    """`runtime` with the spec's decoding overrides applied (a judge), or as it is when there are none."""
    if not spec.inference_params:
        return runtime
    from ascend_eval.models.judge.overrides import InferenceParamsJudge

    return InferenceParamsJudge(runtime, **spec.inference_params)


@overload
def resolve(
    value: ModelArg, role: Literal["judge"], *, backend: str = ..., device: str | None = ...
) -> Judge: ...
@overload
def resolve(
    value: ModelArg, role: Literal["embedder"], *, backend: str = ..., device: str | None = ...
) -> Embedder: ...
@overload
def resolve(
    value: ModelArg, role: Literal["reranker"], *, backend: str = ..., device: str | None = ...
) -> Reranker: ...
def resolve(value: ModelArg, role: Role, *, backend: str = "auto", device: str | None = None) -> Runtime:
    """The runtime for what a user passed as a role's model (`evaluate`'s keyword arguments).

    Args:
        value: a model string, a `ModelSpec`, a runtime of `role` (returned as it is), or None for the
            role's shipped default (no cross-encoder ships, so None is an error for "reranker").
        role: the role the model is wanted for.
        backend: the runtime of a local model given as a string or by a spec that leaves it "auto"; a
            spec that names another one is an error.
        device: the device of a local model whose spec names none.

    Raises:
        ConfigError: `value` is of another role (before anything loads), or see `build`.
    """
    spec = spec_for(value, role, backend=backend, device=device)
    return build(spec) if isinstance(spec, ModelSpec) else spec


def spec_for(
    value: ModelArg, role: Role, *, backend: str = "auto", device: str | None = None
) -> ModelSpec | Runtime:
    """The `ModelSpec` of what a user passed as a role's model (as `resolve` takes it), or the runtime
    itself when an instance was passed (checked for the role).

    Raises:
        ConfigError: `value` is of another role, or `backend` contradicts it.
    """
    if value is None:
        from ascend_eval.models.weights.registry import DEFAULTS

        if role not in DEFAULTS:
            raise ConfigError(NO_CROSS_ENCODER)
        value = DEFAULTS[role]
    if isinstance(value, str | Path):
        spec = ModelSpec(model=str(value), role=role, backend=backend)
    elif isinstance(value, ModelSpec):
        spec = value.for_role(role)
        if backend != "auto" and spec.backend == "auto":
            spec = spec.replace(backend=backend)  # what the spec leaves open, as with `device`
        elif backend != "auto" and spec.backend != backend:
            raise ConfigError(
                f"{ROLE_KEYS[role]}_backend={backend!r} but the {role}'s ModelSpec says "
                f"backend={spec.backend!r}; set it in one place."
            )
    else:
        if backend != "auto":
            raise ConfigError(
                f"{ROLE_KEYS[role]}_backend={backend!r} chooses the runtime of a {role} given by name or "
                f"path; {ROLE_KEYS[role]}= is a {type(value).__name__} instance, already built. Drop it."
            )
        return _instance(value, role)
    if device is not None and spec.device is None and not spec.is_endpoint:
        spec = spec.replace(device=device)
    return spec


def resolve_models(
    values: dict[Role, ModelArg],
    *,
    backends: dict[Role, str] | None = None,
    device: str | None = None,
    memory_budget: float | None = None,
) -> dict[Role, Runtime]:
    """The runtimes of one run, whose local models share each accelerator within `memory_budget`
    (`ascend_eval.models.budget.split_memory`: every vLLM engine without its own `gpu_memory_utilization`
    gets its part).

    Args:
        values: what was passed per role (as `resolve` takes it).
        backends: the backend per role for models given by name or path.
        device: the device of local models whose spec names none.
        memory_budget: share of each accelerator the run's local models may take together; None: the
            default (`DEFAULT_MEMORY_BUDGET`).

    Raises:
        ConfigError: as `resolve`, or the budget cannot hold the models that share a device.
    """
    from ascend_eval.models.budget import DEFAULT_MEMORY_BUDGET, check_budget, split_memory

    budget = check_budget(DEFAULT_MEMORY_BUDGET if memory_budget is None else memory_budget)
    chosen = {
        role: spec_for(value, role, backend=(backends or {}).get(role, "auto"), device=device)
        for role, value in values.items()
    }
    specs = {role: spec for role, spec in chosen.items() if isinstance(spec, ModelSpec)}
    planned = split_memory(specs, budget, device=device)
    return {role: build(planned[role]) if role in planned else chosen[role] for role in chosen}


def check(value: ModelArg, role: Role) -> None:
    """Refuse a runtime or spec of another role, reading no file: what `evaluate` checks for every
    model argument, needed or not."""
    if isinstance(value, ModelSpec):
        value.for_role(role)
    elif value is not None and not isinstance(value, str | Path):
        _instance(value, role)


def local_path(spec: ModelSpec) -> Path:
    """The local directory of `spec`'s model: a shipped model's (installed on first use), the path itself,
    or for a `.gguf` judge its converted checkpoint (`resolve_checkpoint`, once per file).

    Raises:
        ConfigError: an endpoint, an unknown name or path, a shipped model of another role, or a directory
            that is not a model of the role.
    """
    role = _role(spec)
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
    from ascend_eval.models.embedder.sentence_transformers import check_model_dir

    return check_model_dir(path, what="embedder" if role == "embedder" else "cross_encoder")


def _role(spec: ModelSpec) -> Role:
    if spec.role is None:
        raise ConfigError(
            f"ModelSpec(model={spec.model!r}) has no role; set role='judge', 'embedder' or 'reranker' (or "
            "pass it as evaluate(judge=...), which gives it that role)."
        )
    return spec.role


def _instance(value: Any, role: Role) -> Runtime:
    """`value` if it implements `role`'s protocol; else a ConfigError that says what it is."""
    if isinstance(value, _PROTOCOLS[role]):
        return value  # type: ignore[no-any-return]
    others = [r for r, protocol in _PROTOCOLS.items() if isinstance(value, protocol)]
    what = with_article(others[0]) if others else "no model runtime (no generate, embed or score)"
    name = getattr(value, "model_id", None)
    raise ConfigError(
        f"{ROLE_KEYS[role]}= got {type(value).__name__}"
        + (f" ({name!r})" if name else "")
        + f", which is {what}, where {with_article(role)} is wanted. Pass {_WANTED[role]}."
    )


JUDGE_PARALLELISM = 128
"""Judge requests in flight at one server by default: enough to keep a GPU or NPU server's continuous
batch full (vLLM's default max_num_seqs is 256 on GPUs); the congestion gate backs off on 429/503, on
timeouts and on answers slower than half the request timeout."""

Builder = Callable[[ModelSpec, Role], Runtime]
"""Makes the runtime of a spec for a role (checked to be the spec's role)."""

_TEI_ROLES: dict[str, Role] = {"/embed": "embedder", "/rerank": "reranker"}


def _builder(spec: ModelSpec, role: Role) -> Builder:
    """The registry's builder for `spec` as `role`: keyed by the role and the backend the spec runs on, its
    server's API for a URL ("tei" for one ending in TEI's route, else "openai"), else its local runtime.

    Raises:
        ConfigError: a TEI URL of another role.
    """
    backend = spec.local_backend
    if spec.is_endpoint:
        from ascend_eval.models.tei_api import tei_route

        route = tei_route(spec.model)
        backend = "openai" if route is None else "tei"
        if route is not None and _TEI_ROLES[route] != role:
            raise ConfigError(
                f"{ROLE_KEYS[role]}={spec.model!r} ends in {route}, the route of a text-embeddings-inference "
                f"{_TEI_ROLES[route]}, where {with_article(role)} is wanted. Pass it as the "
                f"{ROLE_KEYS[_TEI_ROLES[route]]}, or give {_WANTED[role]}."
            )
    if (role, backend) not in _BACKENDS:
        raise ConfigError(f"No {backend} backend runs {with_article(role)}; give {_WANTED[role]}.")
    return _BACKENDS[(role, backend)]


def _engine(module: str) -> Any:
    """`ascend_eval.models.<module>`, imported now: each engine only when one of its runtimes is built."""
    return importlib.import_module(f"ascend_eval.models.{module}")


def _endpoint_settings(spec: ModelSpec) -> tuple[dict[str, Any], dict[str, Any]]:
    """Where the spec's API key is, and the client settings it sets (`EndpointConfig`'s defaults else)."""
    key = {"api_key_env": spec.api_key_env, "api_key_file": spec.api_key_file}
    client = {
        k: getattr(spec, k)
        for k in ("request_timeout", "max_retries", "parallelism")
        if getattr(spec, k) is not None
    }
    return key, client


def _openai(
    module: str,
    client: str,
    *,
    parallelism: int | None = None,
    from_spec: tuple[str, ...] = (),
    **options: Any,
) -> Builder:
    """A client of an OpenAI-compatible server on the URL's base; without `served_model_name` the model is
    the first the server lists (`GET /v1/models`).

    Args:
        module, client: where the client class is.
        parallelism: requests in flight when the spec sets none (else `EndpointConfig`'s default).
        from_spec: fields of the spec the client takes as keyword arguments of the same names.
        options: further keyword arguments of the client.
    """

    def build(spec: ModelSpec, role: Role) -> Runtime:
        from ascend_eval.models.http import EndpointConfig, discover_model, endpoint_base

        key, settings = _endpoint_settings(spec)
        if parallelism is not None:
            settings.setdefault("parallelism", parallelism)
        base = endpoint_base(spec.model)
        name = spec.served_model_name or discover_model(base, **key)
        config = EndpointConfig(url=base, model=name, **key, **settings)
        logger.info("%s: endpoint %s model %s", role, config.url, name)
        chosen = {field: getattr(spec, field) for field in from_spec}
        return getattr(_engine(module), client)(config, **options, **chosen)  # type: ignore[no-any-return]

    return build


def _tei(module: str, client: str) -> Builder:
    """A client of TEI's native API for a URL ending in its route; the model and the server's batch limit
    come from `GET /info` unless `served_model_name` names the model."""

    def build(spec: ModelSpec, role: Role) -> Runtime:
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
            "%s: TEI %s%s model %s, %d inputs per request", role, config.url, route, config.model, batch
        )
        return getattr(_engine(module), client)(config, batch_size=batch)  # type: ignore[no-any-return]

    return build


def _local(module: str, runtime: str, config: str, *, vllm: bool = False) -> Builder:
    """A local model, checked now and wrapped in its role's lazy runtime, so that its weights load when the
    first request reaches it.

    Args:
        module, runtime, config: where the runtime class and its config class are.
        vllm: the runtime is vLLM's, which is checked to be installed before any model loads.
    """

    def build(spec: ModelSpec, role: Role) -> Runtime:
        from ascend_eval.models.lazy import LazyEmbedder, LazyJudge, LazyReranker
        from ascend_eval.models.weights.paths import local_model_id

        if vllm:
            _need_vllm(role)
        if spec.device is not None or os.environ.get(DEVICE_ENV):
            # A device that cannot be had is found now, before a shipped model or a GGUF file is converted;
            # auto-detection always finds one, so it waits for the model to load.
            resolve_device(spec.device)
        path = local_path(spec)
        fields = ENGINE_SETTINGS[(role, spec.local_backend)]
        settings = {fields[k]: getattr(spec, k) for k in fields if getattr(spec, k) is not None}
        model_id = local_model_id(path)
        # The config is made (and so validated) now; the runtime that loads the weights on first use.
        engine = _engine(module)
        made = getattr(engine, config)(model=str(path), device=spec.device, **settings)
        load = getattr(engine, runtime)
        lazy = {"judge": LazyJudge, "embedder": LazyEmbedder, "reranker": LazyReranker}[role]
        return lazy(model_id, lambda: load(made))  # type: ignore[no-any-return]

    return build


def _need_vllm(role: Role) -> None:
    """Refuse the vllm backend where vLLM is not installed, before any model loads."""
    from ascend_eval.models.vllm_runtime import VLLM_INSTALL, vllm_installed

    if not vllm_installed():
        raise MissingDependencyError(
            f"The vllm {role} backend needs vLLM, which is not installed: {VLLM_INSTALL}."
        )


_BACKENDS: dict[tuple[Role, str], Builder] = {
    # vLLM's own loop guard, where the server is vLLM (asked once, before the first generation).
    ("judge", "openai"): _openai(
        "judge.openai", "OpenAIJudge", parallelism=JUDGE_PARALLELISM, loop_guard=None
    ),
    ("embedder", "openai"): _openai("embedder.openai", "OpenAIEmbedder", from_spec=("send_input_type",)),
    ("reranker", "openai"): _openai("reranker.openai", "OpenAIReranker"),
    ("embedder", "tei"): _tei("embedder.tei", "TEIEmbedder"),
    ("reranker", "tei"): _tei("reranker.tei", "TEIReranker"),
    ("judge", "torch"): _local("judge.torch", "TorchJudge", "TorchJudgeConfig"),
    ("judge", "vllm"): _local("judge.vllm", "VllmJudge", "VllmJudgeConfig", vllm=True),
    ("embedder", "torch"): _local("embedder.sentence_transformers", "TorchEmbedder", "TorchEmbedderConfig"),
    ("embedder", "vllm"): _local("embedder.vllm", "VllmEmbedder", "VllmEmbedderConfig", vllm=True),
    ("reranker", "torch"): _local("reranker.cross_encoder", "TorchReranker", "TorchRerankerConfig"),
    ("reranker", "vllm"): _local("reranker.vllm", "VllmReranker", "VllmRerankerConfig", vllm=True),
}
"""Every runtime `build` makes, by (role, backend): adding a backend is adding its entries. The backend of
an endpoint is its server's API ("openai", "tei"); of a local model, `ModelSpec.local_backend` ("torch",
"vllm", whose engine settings `ENGINE_SETTINGS` names)."""
