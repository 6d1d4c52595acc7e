"""`ModelSpec`: a model described once, whoever builds it (`evaluate()`, the CLI, jobs, benchmarks).

A spec says which model (`model`), for which role, on which runtime (`backend`, `device`), and the settings
of that runtime: endpoint settings for an `http(s)://` server, engine settings for a local model, and
decoding overrides for a judge's `generate` requests. `ascend_eval.models.factory.build` turns it into a
model runtime. Checking a spec reads no file and loads nothing; a setting the chosen runtime cannot
honour is an error here, never silently dropped.

>>> ModelSpec(model="/models/qwen", role="judge", backend="vllm", max_model_len=8192).local_backend
'vllm'
>>> ModelSpec(model="http://127.0.0.1:8000/v1/chat/completions", role="judge").is_endpoint
True
"""

from __future__ import annotations

import difflib
from pathlib import Path
from typing import Any, Literal, get_args

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    ValidationInfo,
    field_validator,
    model_validator,
)

from ascend_eval.models.base import Role
from ascend_eval.models.checks import BATCH_SIZE, PARALLELISM, TENSOR_PARALLEL, Bound
from ascend_eval.models.errors import ConfigError
from ascend_eval.models.http import is_url

__all__ = [
    "BACKENDS",
    "ENDPOINT_FIELDS",
    "ENGINE_FIELDS",
    "ENGINE_SETTINGS",
    "INFERENCE_FIELDS",
    "Backend",
    "ModelSpec",
    "with_article",
]

Backend = Literal["auto", "torch", "vllm"]
BACKENDS: tuple[Backend, ...] = get_args(Backend)
ROLES: tuple[Role, ...] = ("judge", "embedder", "reranker")

ENDPOINT_FIELDS = (
    "served_model_name",
    "api_key_env",
    "api_key_file",
    "request_timeout",
    "max_retries",
    "parallelism",
    "send_input_type",
)
"""Settings of the client that talks to an http(s) server."""
INFERENCE_FIELDS = ("max_tokens", "temperature", "top_p")
"""Decoding overrides for a judge's generate requests."""
ENGINE_FIELDS = (
    "dtype",
    "max_model_len",
    "gpu_memory_utilization",
    "kv_cache_memory_bytes",
    "tensor_parallel_size",
    "batch_size",
)
"""Settings of a local runtime; each runtime honours those named in `ENGINE_SETTINGS`."""

_VLLM = {f: f for f in ENGINE_FIELDS if f != "batch_size"}
ENGINE_SETTINGS: dict[tuple[Role, str], dict[str, str]] = {
    ("judge", "torch"): {"dtype": "dtype", "max_model_len": "max_model_len", "batch_size": "max_batch_size"},
    ("judge", "vllm"): _VLLM,
    ("embedder", "torch"): {"batch_size": "batch_size"},
    ("embedder", "vllm"): _VLLM,
    ("reranker", "torch"): {"batch_size": "batch_size"},
    ("reranker", "vllm"): _VLLM,
}
"""Per (role, local backend): the spec's engine settings that runtime has, and its config field for each
(`TorchJudgeConfig`, `VllmEngineConfig` and the embedder and reranker configs)."""
_BOUNDS: dict[str, Bound] = {
    "parallelism": PARALLELISM,
    "batch_size": BATCH_SIZE,
    "tensor_parallel_size": TENSOR_PARALLEL,
}
"""The count settings with an upper bound (docs/reliability.md, "Bounds")."""


class ModelSpec(BaseModel):
    """One model and how to run it.

    Raises:
        ConfigError: an unknown field, a value out of range, or a setting the model's runtime cannot
            honour (engine settings on an endpoint, endpoint settings on a local model, decoding overrides
            on an embedder, a vLLM-only setting on the torch backend). The message names the field and the
            fix.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    model: str
    """A shipped model name (`ascend-eval models`), a local directory (Hugging Face checkpoint,
    sentence-transformers or CrossEncoder directory), a `.gguf` file (judge), `local:PATH`, `local:NAME`,
    `local:default` (the role's default), or the `http(s)://` URL of an OpenAI-compatible server (a trailing
    endpoint path such as `/v1/chat/completions` is trimmed); a URL ending in `/embed` or `/rerank` is a
    text-embeddings-inference server's native API."""
    role: Role | None = None
    """"judge", "embedder" or "reranker"; None takes the role of the argument the spec is passed as
    (`evaluate(judge=...)`)."""
    backend: str = "auto"
    """Runtime of a local model: "torch" (transformers / sentence-transformers; what "auto" means) or "vllm"
    (vLLM's offline engine, vllm-ascend on NPUs). An endpoint runs on its server: leave "auto"."""
    device: str | None = None
    """Device of a local model: "auto", "cpu", "cuda[:N]" or "npu[:N]"; None defers to
    `ASCEND_EVAL_DEVICE`, then auto-detection."""

    served_model_name: str | None = None
    """Endpoint: the model name sent in each request; None reads the first one from `GET /v1/models`."""
    api_key_env: str | None = None
    """Endpoint: the environment variable that holds the API key (the key itself is never in a spec)."""
    api_key_file: str | None = None
    """Endpoint: a file (chmod 600) that holds only the API key."""
    request_timeout: float | None = Field(default=None, gt=0)
    """Endpoint: seconds for one whole attempt, connecting and reading all of the answer included (None:
    `EndpointConfig`'s default)."""
    max_retries: int | None = Field(default=None, ge=0)
    """Endpoint: further attempts after the first (None: `EndpointConfig`'s default)."""
    parallelism: int | None = Field(default=None, ge=1)
    """Endpoint: requests in flight at once, at most (fewer while the server answers 429/503), from 1 to
    1,024 (`checks.PARALLELISM`: each is a thread and a connection). None: 128 for a judge, which keeps a
    GPU or NPU server's batch full; `EndpointConfig`'s default (8) for an embedder or reranker, whose
    requests carry many texts each."""
    send_input_type: bool = False
    """Embedding endpoint: send NIM's `input_type` ("query" / "passage") with each request."""

    max_tokens: int | None = Field(default=None, ge=1)
    """Judge: cap every generate request at this many tokens instead of each prompt's own."""
    temperature: float | None = Field(default=None, ge=0)
    """Judge: the temperature of every generate request."""
    top_p: float | None = Field(default=None, gt=0, le=1)
    """Judge: the nucleus mass of every generate request."""

    dtype: Literal["auto", "float32", "bfloat16", "float16"] | None = None
    """Local: compute dtype (None: the runtime's "auto": bfloat16 where the chip computes it natively, else
    float16 on an accelerator and float32 on a CPU; the reason is in the run's provenance)."""
    max_model_len: int | None = Field(default=None, ge=2)
    """Local judge (torch or vllm), vLLM embedder and reranker: longest prompt plus output, in tokens."""
    gpu_memory_utilization: float | None = Field(default=None, gt=0, le=1)
    """vLLM: share of the accelerator's whole memory the engine may take; None: its part of the run's
    `memory_budget` (`ascend_eval.models.budget.split_memory`), or vLLM's 0.9 when built alone."""
    kv_cache_memory_bytes: int | None = Field(default=None, ge=1)
    """vLLM: KV cache bytes, instead of sizing it from `gpu_memory_utilization` (vllm-ascend honours it
    from v0.19.1, and not on the Atlas 300I / 310P). None: vLLM sizes it (1 GiB on the CPU)."""
    tensor_parallel_size: int | None = Field(default=None, ge=1)
    """vLLM: devices the model is split over; at most 64 (`checks.TENSOR_PARALLEL`)."""
    batch_size: int | None = Field(default=None, ge=1)
    """torch: rows per forward pass (`TorchJudge`'s max_batch_size, the embedder's and reranker's batch);
    at most 4,096 (`checks.BATCH_SIZE`)."""

    def __init__(self, **data: Any) -> None:
        try:
            super().__init__(**data)
        except ValidationError as e:
            raise ConfigError(_explain(e)) from None

    @field_validator("parallelism", "batch_size", "tensor_parallel_size")
    @classmethod
    def _bounded(cls, value: int | None, info: ValidationInfo) -> int | None:
        _BOUNDS[info.field_name].check(f"ModelSpec.{info.field_name}", value, optional=True)  # type: ignore[index]
        return value

    @field_validator("model", mode="before")
    @classmethod
    def _path_as_text(cls, value: Any) -> Any:
        return str(value) if isinstance(value, Path) else value

    @model_validator(mode="after")
    def _coherent(self) -> ModelSpec:
        if not self.model.strip():
            raise ConfigError("ModelSpec.model is empty; pass a shipped name, a local path or a server URL.")
        if self.backend not in BACKENDS:
            raise ConfigError(f"ModelSpec.backend={self.backend!r}; valid: {', '.join(map(repr, BACKENDS))}.")
        if self.is_endpoint:
            self._check_endpoint()
        else:
            self._check_local()
        if self.role is not None and self.role != "judge" and (tuned := self._set(INFERENCE_FIELDS)):
            raise ConfigError(
                f"ModelSpec {', '.join(tuned)}: decoding overrides for a judge's generate requests; "
                f"{with_article(self.role)} generates nothing. Drop them."
            )
        return self

    def _set(self, names: tuple[str, ...]) -> list[str]:
        """Those of `names` given a value (0 and 0.0 are values; send_input_type counts when True)."""
        return [n for n in names if getattr(self, n) is not None and getattr(self, n) is not False]

    def _check_endpoint(self) -> None:
        where = f"{self.model!r} is an http(s) endpoint, which runs with its server's settings"
        if self.backend != "auto":
            raise ConfigError(
                f"ModelSpec.backend={self.backend!r} applies to local models; {where}. Leave backend='auto'."
            )
        if self.device is not None:
            raise ConfigError(f"ModelSpec.device applies to local models; {where}. Drop it.")
        if engine := self._set(ENGINE_FIELDS):
            raise ConfigError(
                f"ModelSpec {', '.join(engine)}: engine settings of local models; {where}. Drop them, or "
                "set them where the server starts (e.g. `vllm serve --max-model-len`)."
            )
        if self.api_key_env is not None and self.api_key_file is not None:
            raise ConfigError(
                f"ModelSpec got both api_key_env={self.api_key_env!r} and "
                f"api_key_file={self.api_key_file!r}; pass only one."
            )
        if self.send_input_type and self.role not in (None, "embedder"):
            raise ConfigError(
                "ModelSpec.send_input_type is NIM's embedding-request field; "
                f"{with_article(self.role)} does not send it. Drop it."
            )

    def _check_local(self) -> None:
        if endpoint := self._set(ENDPOINT_FIELDS):
            raise ConfigError(
                f"ModelSpec {', '.join(endpoint)}: settings of http(s) endpoints; {self.model!r} is a local "
                "model. Drop them, or give the server's URL as `model`."
            )
        if self.role is None:
            return
        if self.model.strip() == "local:default" and self.role == "reranker":
            raise ConfigError(
                "model 'local:default': no reranker ships by default. Give a local reranker directory "
                "(local:/path/to/model) or an http(s) URL."
            )
        honoured = ENGINE_SETTINGS[(self.role, self.local_backend)]
        unknown = [n for n in self._set(ENGINE_FIELDS) if n not in honoured]
        if unknown:
            drop = "drop them" if len(unknown) > 1 else "drop it"
            other = "vllm" if self.local_backend == "torch" else "torch"
            fits = set(unknown) <= ENGINE_SETTINGS[(self.role, other)].keys()
            fix = f"use backend={other!r} or {drop}" if fits else drop
            raise ConfigError(
                f"ModelSpec {', '.join(unknown)}: the {self.local_backend} {self.role} has no such setting "
                f"(it takes {', '.join(honoured) or 'none'}); {fix}."
            )

    @property
    def is_endpoint(self) -> bool:
        """Whether `model` is an http(s) URL (else a local model)."""
        return is_url(self.model)

    @property
    def local_backend(self) -> str:
        """The local runtime "auto" stands for: "torch", or "vllm" when asked for."""
        return "torch" if self.backend == "auto" else self.backend

    @property
    def inference_params(self) -> dict[str, Any]:
        """The decoding overrides that are set, e.g. {"max_tokens": 64}."""
        return {n: getattr(self, n) for n in INFERENCE_FIELDS if getattr(self, n) is not None}

    def for_role(self, role: Role) -> ModelSpec:
        """This spec for `role`, checked for it.

        Raises:
            ConfigError: the spec is for another role, or has a setting that role's runtime lacks.
        """
        if self.role == role:
            return self
        if self.role is not None:
            raise ConfigError(
                f"A ModelSpec for {with_article(self.role)} ({self.model!r}) was given where "
                f"{with_article(role)} is wanted. Pass it as the {self.role}, or give {with_article(role)} "
                "spec here."
            )
        return self.replace(role=role)

    def replace(self, **changes: Any) -> ModelSpec:
        """A copy with `changes`, checked like a new spec (pydantic's `model_copy` checks nothing)."""
        return ModelSpec(**{**self.model_dump(exclude_defaults=True), **changes})


def with_article(role: str) -> str:
    """A role name for a sentence.

    >>> with_article("embedder"), with_article("judge")
    ('an embedder', 'a judge')
    """
    return f"an {role}" if role[0] in "aeiou" else f"a {role}"


def _explain(error: ValidationError) -> str:
    """One line per problem, naming the field and the fix."""
    lines = []
    for item in error.errors():
        field = ".".join(str(p) for p in item["loc"])
        if item["type"] == "extra_forbidden":
            close = difflib.get_close_matches(field, ModelSpec.model_fields, n=1)
            hint = f" Did you mean {close[0]!r}?" if close else ""
            lines.append(
                f"ModelSpec has no field {field!r}.{hint} Valid fields: {', '.join(ModelSpec.model_fields)}."
            )
        elif item["type"] == "value_error" and "error" in item.get("ctx", {}):
            lines.append(str(item["ctx"]["error"]))
        else:
            lines.append(f"ModelSpec.{field}={item.get('input')!r}: {item['msg']}.")
    return " ".join(lines)
