"""The models of a job spec: each model reference, with the spec's timeouts and resolved secrets, becomes
a `ModelSpec`, which the evaluation and the RAG pipeline build through `ascend_eval.models.factory`.

A spec `url` is either
* an `http(s)://` URL: NeMo writes the endpoint's full path (`.../v1/chat/completions`, `.../v1/ranking`);
  our endpoint clients take the server's base URL and add the path themselves, so the path is dropped;
* `local:PATH` or `local:NAME` (a shipped model, or `default` for the role's default), or a bare path or
  shipped name: loaded on the device on first use. Where the operator has set the folders jobs may read
  (`ASCEND_EVAL_DATA_DIRS`, which `ascend-eval serve --data-dir` sets), a path must be inside one of them,
  as a dataset's must: a spec may come from a client of the service (`check_local_models`).
"""

from __future__ import annotations

import logging
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ascend_eval.errors import ConfigError
from ascend_eval.jobs.datasets import DATA_DIRS_ENV, data_dirs
from ascend_eval.jobs.secrets import SecretStore
from ascend_eval.jobs.spec import JobSpec, JudgeLLM, ModelRef, RetrieverModel
from ascend_eval.models.base import Role
from ascend_eval.models.factory import model_spec
from ascend_eval.models.http import is_url
from ascend_eval.models.spec import INFERENCE_FIELDS, ModelSpec

logger = logging.getLogger("ascend_eval.jobs")


def _inside(url: str, roots: Sequence[Path]) -> bool:
    """Whether local model `url` is a shipped model (or `local:default`), or a path inside `roots`
    (symbolic links followed). Reads nothing and asks nothing of the path itself: whether it exists
    does not change the answer."""
    from ascend_eval.models.weights.registry import SHIPPED

    text = url.strip()
    target = text.removeprefix("local:")
    if text == "local:default" or target in SHIPPED:
        return True
    try:
        real = Path(os.path.realpath(Path(target).expanduser()))
    except (RuntimeError, OSError, ValueError):  # "~nobody/x", a NUL byte: no path a job may read
        return False
    return any(real.is_relative_to(os.path.realpath(r)) for r in roots)


def check_local_model(url: str, field: str, roots: Sequence[Path] | None) -> None:
    """Refuse local model `url` when it is a path outside `roots` (None: any path is allowed), with one
    message whether or not the path exists, so that a client cannot probe the server's files with it.

    Raises:
        ConfigError: naming the field, the folders and the fix.
    """
    if roots is None or is_url(url) or _inside(url, roots):
        return
    from ascend_eval.models.weights.registry import SHIPPED

    folders = ", ".join(str(r) for r in roots)
    raise ConfigError(
        f"{field} {url!r} is not a shipped model ({', '.join(sorted(SHIPPED))}, or local:default) and, as a "
        f"path, is not inside the folders jobs may read from ({folders}), so it is not loaded. Use a shipped "
        "model or an http(s) URL, or ask the operator to put the model in one of those folders "
        f"(`ascend-eval serve --data-dir DIR`, {DATA_DIRS_ENV})."
    )


def check_local_models(spec: JobSpec, roots: Sequence[Path] | None) -> None:
    """`check_local_model` on every model of `spec` (a REST job is refused with it before it is made).

    Raises:
        ConfigError: the first local model outside `roots`.
    """
    for field, ref in spec.models():
        check_local_model(ref.url, f"{field}.url", roots)


class JobModels:
    """The `ModelSpec`s of a job spec's models, unbuilt: `evaluate` builds the judge and its embedder
    (here or in each Ray actor), and the RAG pipeline its own, each through
    `ascend_eval.models.factory.build_models`, so one memory budget covers the models that run together.

    Args:
        secrets: where `api_key_secret` names are looked up.
        device: the device for local models (None: the ASCEND_EVAL_DEVICE setting, else auto).
    """

    def __init__(self, secrets: SecretStore, device: str | None = None) -> None:
        self.secrets = secrets
        self.device = device

    def judge_spec(self, settings: JudgeLLM) -> ModelSpec:
        """The judge's spec, with the job's timeouts, retries, parallelism and inference params."""
        params = settings.inference_params.model_dump() if settings.inference_params else {}
        return self.spec(
            settings.model,
            "judge",
            request_timeout=settings.request_timeout,
            max_retries=settings.max_retries,
            parallelism=settings.parallelism,
            **params,
        )

    def embedder_spec(self, ref: RetrieverModel) -> ModelSpec:
        """An embedder's spec; NIM's `input_type` is sent where the model's format is "nim"."""
        return self.spec(ref, "embedder", send_input_type=ref.format == "nim")

    def pipeline_specs(self, spec: JobSpec) -> dict[Role, ModelSpec]:
        """The RAG pipeline's models by role: the generator (the spec's `model`) as the judge, and the
        retriever's embedder and reranker; those the spec names."""
        specs: dict[Role, ModelSpec] = {}
        if spec.model is not None:
            specs["judge"] = self.spec(spec.model, "judge")
        retriever = spec.retriever_pipeline
        if retriever is not None:
            specs["embedder"] = self.embedder_spec(retriever.embedding_model)
            if retriever.reranker_model is not None:
                specs["reranker"] = self.spec(retriever.reranker_model, "reranker")
        return specs

    def spec(self, ref: ModelRef, role: Role, **settings: Any) -> ModelSpec:
        """The `ModelSpec` of `ref` for `role` (`ascend_eval.models.factory.model_spec`): endpoint settings
        and the secret's location for a URL; for a local model `device`, with the endpoint settings left out
        (and logged).

        Raises:
            ConfigError: the secret is not set, or not bound to the URL's origin (nothing is sent).
        """
        given = {k: v for k, v in settings.items() if v is not None}
        inference = {k: given.pop(k) for k in INFERENCE_FIELDS if k in given}
        if is_url(ref.url):
            key = {}
            if ref.api_key_secret:
                # Checked here as well as up front (`check_spec_secrets`): every model's spec is made here.
                secret = self.secrets.for_endpoint(ref.api_key_secret, ref.url, f"the {role}'s url")
                key = secret.endpoint_kwargs()
            return model_spec(ref.url, role, served_model_name=ref.name, **key, **given, **inference)
        # Checked here as well as when a REST job is made: every model's spec is made here.
        check_local_model(ref.url, f"the {role}'s url", data_dirs())
        given.pop("send_input_type", None)  # NIM's embedding field means nothing to a local model
        unused = (["api_key_secret"] if ref.api_key_secret else []) + sorted(given)
        if unused:
            # Harmless (a spec written for endpoints, pointed at a local model) but worth a line in the log.
            logger.info("%s %s is local: %s do not apply", role, ref.url, ", ".join(unused))
        return model_spec(ref.url, role, device=self.device, **inference)
