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

Which runtime a spec gets is the backend registry (`ascend_eval.models.registry`), keyed by (role,
backend): the backend of a URL is its server's API ("openai", or "tei" for TEI's native routes), that of a
local model its engine ("torch", "vllm"); each backend registers its builder next to its runtime class.
Decoding overrides (`max_tokens`, `temperature`, `top_p`) wrap the judge in `InferenceParamsJudge`. Every
engine is imported only when one of its runtimes loads.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal, overload

from ascend_eval.models.base import Embedder, Judge, Reranker, Role
from ascend_eval.models.errors import ConfigError
from ascend_eval.models.registry import ROLE_KEYS, Builder, Runtime, local_path, role_of
from ascend_eval.models.spec import ModelSpec, with_article

__all__ = [
    "ROLE_KEYS",
    "ModelArg",
    "build",
    "build_models",
    "check",
    "local_path",
    "model_spec",
    "resolve",
    "resolve_models",
    "spec_for",
    "tuned",
]

ModelArg = str | Path | ModelSpec | Judge | Embedder | Reranker | None
"""What `evaluate(judge=..., embedder=..., cross_encoder=...)` accepts: a model string (as
`ModelSpec.model`), a `ModelSpec`, a runtime instance of the role, or None for the role's default."""

_PROTOCOLS: dict[Role, Any] = {"judge": Judge, "embedder": Embedder, "reranker": Reranker}
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
    role = role_of(spec)
    return tuned(_builder(spec, role)(spec), spec)


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
    """The `ModelSpec` of what a user passed as a role's model (as `resolve` takes it), made by
    `model_spec`, or the runtime itself when an instance was passed (checked for the role).

    Raises:
        ConfigError: `value` is of another role, or `backend` contradicts it.
    """
    if value is None:
        from ascend_eval.models.weights.registry import DEFAULTS

        if role not in DEFAULTS:
            raise ConfigError(NO_CROSS_ENCODER)
        value = DEFAULTS[role]
    if isinstance(value, str | Path | ModelSpec):
        return model_spec(value, role, backend=backend, device=device)
    if backend != "auto":
        raise ConfigError(
            f"{ROLE_KEYS[role]}_backend={backend!r} chooses the runtime of a {role} given by name or "
            f"path; {ROLE_KEYS[role]}= is a {type(value).__name__} instance, already built. Drop it."
        )
    return _instance(value, role)


def model_spec(
    value: str | Path | Mapping[str, Any] | ModelSpec,
    role: Role,
    *,
    backend: str = "auto",
    device: str | None = None,
    **fields: Any,
) -> ModelSpec:
    """The one conversion of a model setting into the `ModelSpec` the registry builds: every entry point
    (`evaluate`'s keywords, the command line and its `--config` files, job specs, the drop-ins) makes its
    models' specs here, and the spec goes on unchanged (but for the memory budget's share and a Ray actor's
    placement) to `build`.

    Args:
        value: a model string (as `ModelSpec.model`), the fields of a spec (a `--config` file's mapping),
            or a `ModelSpec`.
        role: the role the model is wanted for.
        backend: the `<role>_backend` setting: the runtime of a local model whose spec leaves it "auto"; a
            spec that names another one is an error. This is the one place it is merged into a spec.
        device: the run's device, for a local model whose spec names none.
        **fields: further `ModelSpec` fields (endpoint, engine and decoding settings).

    Raises:
        ConfigError: a spec of another role, a backend that contradicts the spec's, or fields that do not
            fit the model (see `ModelSpec`).
    """
    if isinstance(value, ModelSpec):
        spec = value.for_role(role)
        merged = _backend(fields.get("backend", spec.backend), backend, role)
        if fields or merged != spec.backend:
            spec = spec.replace(**{**fields, "backend": merged})
    else:
        given = {"model": str(value)} if isinstance(value, str | Path) else dict(value)
        given.update(fields)
        # Merged before the spec is made: its engine settings are checked against the backend that runs them.
        given["backend"] = _backend(given.get("backend", "auto"), backend, role)
        spec = ModelSpec(**{"role": role, **given}).for_role(role)
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
    """The runtimes of what was passed per role (as `resolve` takes it): each made a spec by `spec_for`,
    then built by `build_models`.

    Args:
        values: what was passed per role.
        backends: the `<role>_backend` setting per role.
        device: the device of local models whose spec names none.
        memory_budget: as `build_models`.

    Raises:
        ConfigError: as `resolve`, or the budget cannot hold the models that share a device.
    """
    chosen = {
        role: spec_for(value, role, backend=(backends or {}).get(role, "auto"), device=device)
        for role, value in values.items()
    }
    return build_models(chosen, memory_budget=memory_budget)


def build_models(
    specs: Mapping[Role, ModelSpec | Runtime], *, memory_budget: float | None = None
) -> dict[Role, Runtime]:
    """The runtimes of one run's specs (made by `model_spec`; runtimes passed in are kept as they are),
    whose local models share each accelerator within `memory_budget`
    (`ascend_eval.models.budget.split_memory`: every vLLM engine without its own `gpu_memory_utilization`
    gets its part). What the local executor, the test-set generator, a job's RAG pipeline and every Ray
    actor build their models with.

    Args:
        specs: the run's models by role.
        memory_budget: share of each accelerator the run's local models may take together; None: the
            default (`DEFAULT_MEMORY_BUDGET`).

    Raises:
        ConfigError: as `build`, or the budget cannot hold the models that share a device.
    """
    from ascend_eval.models.budget import DEFAULT_MEMORY_BUDGET, check_budget, split_memory

    budget = check_budget(DEFAULT_MEMORY_BUDGET if memory_budget is None else memory_budget)
    local = {role: spec for role, spec in specs.items() if isinstance(spec, ModelSpec)}
    planned = split_memory(local, budget)
    return {role: build(planned[role]) if role in planned else specs[role] for role in specs}


def _backend(own: str, setting: str, role: Role) -> str:
    """The backend of a spec that says `own`, under the `<role>_backend` setting: the setting where the spec
    leaves it "auto".

    Raises:
        ConfigError: the two name different backends.
    """
    if setting == "auto" or own == setting:
        return own
    if own == "auto":
        return setting
    raise ConfigError(
        f"{ROLE_KEYS[role]}_backend={setting!r} but the {role}'s ModelSpec says backend={own!r}; set it in "
        "one place."
    )


def check(value: ModelArg, role: Role) -> None:
    """Refuse a runtime or spec of another role, reading no file: what `evaluate` checks for every
    model argument, needed or not."""
    if isinstance(value, ModelSpec):
        value.for_role(role)
    elif value is not None and not isinstance(value, str | Path):
        _instance(value, role)


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
    from ascend_eval.models.backends import BUILDERS

    if (role, backend) not in BUILDERS:
        raise ConfigError(f"No {backend} backend runs {with_article(role)}; give {_WANTED[role]}.")
    return BUILDERS[(role, backend)]
