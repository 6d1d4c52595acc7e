"""What the routes act on: the server's settings, its jobs and secrets, and the queue that runs them."""

from __future__ import annotations

import contextlib
import copy
import re
import secrets as random_tokens
import shutil
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from fastapi import HTTPException
from pydantic import BaseModel, Field

from ascend_eval.errors import ConfigError, DataError
from ascend_eval.jobs import Job, Jobs, JobSpec, SecretStore
from ascend_eval.jobs.datasets import check_job_files
from ascend_eval.jobs.runner import FINISHED
from ascend_eval.jobs.runtimes import check_local_models
from ascend_eval.jobs.secrets import (
    check_secret_name,
    check_spec_secrets,
    endpoint_secrets,
    origins,
    secret_env_var,
)
from ascend_eval.models.checks import SERVED_JOBS
from ascend_eval.models.scrub import CONTROLS
from ascend_eval.serve import views
from ascend_eval.serve.nemo import (
    BodyError,
    Translation,
    check_text,
    is_spec,
    translate_spec,
    translate_v1,
)
from ascend_eval.serve.queue import JobQueue, now

_V1_FIELDS = (
    "config",
    "target",
    "custom_fields",
    "description",
    "namespace",
    "output_files_url",
    "ownership",
    "project",
    "result",
    "status",
    "status_details",
)
_V2_FIELDS = ("spec", "custom_fields", "description", "name", "namespace", "ownership", "project")
DEFAULT_TOKEN_SECRET = "serve-token"
"""The secret `ascend-eval serve` reads its bearer token from by default (`serve.cli.TOKEN_SECRET`, which
the parser uses without importing FastAPI); reserved like the one in use."""
# The secrets this server stores itself: the keys given in job bodies, `<job id>.<role>`.
_JOB_KEY = re.compile(r"eval-[0-9a-f]{16}\..+", re.IGNORECASE)


@dataclass(frozen=True)
class Settings:
    """What a server needs: where jobs and secrets live, the token, and its limits."""

    jobs_dir: Path
    token: str
    secrets_dir: Path | None = None
    concurrency: int = 1
    """Jobs run at once (`--concurrency`): from 1 to 64 (`ascend_eval.models.checks.SERVED_JOBS`)."""
    max_body_bytes: int = 16 * 1024 * 1024
    token_secret: str | None = None
    """The secret that holds the token (or would, when it comes from `ASCEND_EVAL_SERVE_TOKEN`); the
    secrets API does not show, replace or delete it, nor the default `serve-token`."""
    data_dirs: tuple[Path, ...] | None = None
    """The folders jobs may read local files from (dataset and corpus paths); None: any file."""

    def __post_init__(self) -> None:
        SERVED_JOBS.check("--concurrency", self.concurrency)


MAX_NAME_CHARS = 256
"""The longest job name a REST body may give: a label, shown on one line by `ascend-eval job list`."""


def _check_name(name: Any) -> None:
    """Refuse a job name that is not a string, longer than `MAX_NAME_CHARS` or holding a control
    character (an escape sequence, a line break, a bidi control): `job list` prints names on a terminal,
    where such a name could forge rows or retitle the window. Raises `BodyError` (422)."""
    if name is None:
        return
    if not isinstance(name, str):
        why = f"the job name must be a string, got {type(name).__name__}"
    elif len(name) > MAX_NAME_CHARS:
        why = f"the job name is {len(name):,} characters; at most {MAX_NAME_CHARS} are allowed"
    elif (found := CONTROLS.search(name)) is not None:
        why = (
            f"the job name holds the control character {found.group()!a} at character {found.start()}; "
            "use printable text on one line"
        )
    else:
        return
    raise BodyError([(("body", "name"), why)])


class SecretIn(BaseModel):
    name: str = Field(description="letters, digits, '.', '_' and '-'; referred to by api_key_secret")
    data: str = Field(min_length=1, description="the value (never shown again)")
    endpoints: list[str] | None = Field(
        default=None,
        description="the endpoint URLs (or origins, scheme://host:port) the secret may be sent to; a job "
        "that would send it anywhere else is refused",
    )


class Service:
    """The jobs, secrets and queue behind the routes."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self.secrets = SecretStore(settings.secrets_dir)
        self.jobs = Jobs(settings.jobs_dir, secrets=self.secrets)
        self.queue = JobQueue(self.jobs, concurrency=settings.concurrency)

    def job(self, job_id: str) -> tuple[Job, dict[str, Any]]:
        """The server's job and its record; 404 for anything else. A record the views cannot show (a
        damaged server.json, or the spec.json of a job given as a spec) comes back as
        `{"damaged": why}`, which the views show as the job's error."""
        try:
            job = self.jobs.get(job_id)
        except ConfigError:
            raise HTTPException(404, f"no evaluation job {job_id!r}") from None
        record = self.queue.record(job_id)
        if not record:
            raise HTTPException(404, f"no evaluation job {job_id!r} (made outside this server)")
        if not record.get("damaged") and record.get("shape") != "nemo":  # the views show its spec
            try:
                job.spec  # noqa: B018  (read only to check it)
            except (ConfigError, DataError) as e:
                fix = f"restore the file, or DELETE /v1/evaluation/jobs/{job_id} to drop the job."
                record = {**record, "damaged": f"{e} The job can be neither shown nor run: {fix}"}
        return job, record

    def cancel(self, job_id: str) -> None:
        """Cancel the job; nothing for one whose records are damaged (it does not run)."""
        job, record = self.job(job_id)
        if views.problem(record, job.info()) is None:
            self.queue.cancel(job_id)

    def reserved(self, name: str) -> bool:
        """Whether secret `name` is the server's own: its token's (under any spelling that maps to the
        same variable or, on a case-insensitive disk, the same file), or a key from a job body."""
        tokens = {DEFAULT_TOKEN_SECRET, self.settings.token_secret or DEFAULT_TOKEN_SECRET}
        return secret_env_var(name) in {secret_env_var(t) for t in tokens} or bool(_JOB_KEY.fullmatch(name))

    def store_secret(self, secret: SecretIn) -> None:
        """Store a secret from `POST /v1/secrets`, bound to its endpoints. Raises `BodyError`."""
        check_text(secret.model_dump(include={"data", "endpoints"}))
        try:
            check_secret_name(secret.name)
        except ConfigError as e:
            raise BodyError([(("body", "name"), str(e))]) from None
        if not secret.endpoints:
            need = (
                "required: the endpoint URLs this secret may be sent to, e.g. "
                "['https://integrate.api.nvidia.com']; a job sends it nowhere else"
            )
            raise BodyError([(("body", "endpoints"), need)])
        try:
            origins(secret.endpoints, f"endpoint of secret {secret.name!r}")
        except ConfigError as e:
            raise BodyError([(("body", "endpoints"), str(e))]) from None
        try:
            self.secrets.set(secret.name, secret.data, endpoints=secret.endpoints)
        except ConfigError as e:  # what is left to refuse: an empty value
            raise BodyError([(("body", "data"), str(e))]) from None

    def _check(self, translation: Translation) -> JobSpec:
        """The translated spec, once its files are ones jobs may read and its secrets go only where they
        are bound to (the body's own keys are bound to the endpoints they came with). Raises `BodyError`."""
        spec = JobSpec.model_validate(translation.spec)
        for field, url, name in endpoint_secrets(spec):
            if name not in translation.keys and self.reserved(name):
                why = (
                    f"{field}: secret {name!r} is this server's own (a key another job's body gave, or its "
                    f"token), which no other job may use, at {url} or anywhere. Name a secret stored with "
                    "POST /v1/secrets, or give the key in this body (api_key)."
                )
                raise BodyError([(("body",), why)])
        try:
            check_job_files(spec.dataset, self.settings.data_dirs)
            check_local_models(spec, self.settings.data_dirs)
            check_spec_secrets(spec, self.secrets, skip=translation.keys)
        except (ConfigError, DataError) as e:
            raise BodyError([(("body",), str(e))]) from None
        return spec

    def create(self, body: dict[str, Any], api: str) -> Job:
        """A job from a request body, queued. All or nothing: the whole body is checked before anything
        is written (a lone surrogate anywhere is a 422 naming the field), and when a later step fails
        (a full disk) the job's folder and the keys stored from the body are removed again, so no job is
        left that no route shows and no key that no job deletes.

        Raises:
            BodyError: the body is not a job (422).
        """
        check_text(body)
        _check_name(body.get("name"))
        fields = _V1_FIELDS if api == "v1" else _V2_FIELDS
        job_id = f"eval-{random_tokens.token_hex(8)}"
        translation, shape = self._translate(body, api, fields, job_id)
        sent = endpoint_secrets(self._check(translation))
        directory = self.jobs.root / job_id
        stored: list[str] = []
        try:
            for name, value in translation.keys.items():
                stored.append(name)  # first: a write that fails midway is removed too
                self.secrets.set(name, value, endpoints=[url for _, url, secret in sent if secret == name])
            try:
                job = self.jobs.create(translation.spec, name=body.get("name") or job_id, job_id=job_id)
            except (ConfigError, DataError) as e:
                raise BodyError([(("body",), str(e))]) from None
            self.queue.update(
                job_id,
                api=api,
                shape=shape,
                request=_redacted(body),
                task=translation.task,
                metrics=translation.metrics,
                secrets=list(translation.keys),
                created_at=now(),
                name=body.get("name") or job_id,
                **{
                    k: body[k]
                    for k in ("namespace", "project", "description", "custom_fields", "ownership")
                    if body.get(k) is not None
                },
            )
            self.queue.submit(job_id)
        except BaseException:
            # `job_id` is new, so whatever is in its folder was made just now, by this request.
            shutil.rmtree(directory, ignore_errors=True)
            self._forget_keys(stored)
            raise
        return job

    def _translate(
        self, body: dict[str, Any], api: str, fields: tuple[str, ...], job_id: str
    ) -> tuple[Translation, str]:
        if api == "v1" and is_spec(body):
            return translate_spec(body, loc=("body",)), "spec"
        if (
            api == "v1"
            and set(body) <= {"spec", "name", "description"}
            and isinstance(body.get("spec"), dict)
        ):
            return translate_spec(body["spec"], loc=("body", "spec")), "spec"
        unknown = [k for k in body if k not in fields]
        if unknown:
            raise BodyError([(("body", unknown[0]), f"unknown field {unknown[0]!r}; valid: {list(fields)}")])
        if api == "v1":
            missing = [(("body", k), "field required") for k in ("config", "target") if k not in body]
            if missing:
                raise BodyError(missing)
            return translate_v1(body["config"], body["target"], job_id=job_id), "nemo"
        spec = body.get("spec")
        if not isinstance(spec, dict):
            raise BodyError(
                [
                    (
                        ("body", "spec"),
                        (
                            "field required: {'config': ..., 'target': ...}, or a job "
                            "spec (metric, model, retriever_pipeline, dataset, ...)"
                        ),
                    )
                ]
            )
        if is_spec(spec):
            return translate_spec(spec, loc=("body", "spec")), "spec"
        missing = [(("body", "spec", k), "field required") for k in ("config", "target") if k not in spec]
        if missing:
            raise BodyError(missing)
        return translate_v1(spec["config"], spec["target"], job_id=job_id, loc=("body", "spec")), "nemo"

    def _forget_keys(self, names: list[str]) -> None:
        for name in names:
            self.secrets.delete(name)

    def delete(self, job_id: str) -> None:
        """Cancel the job if it runs, forget the keys stored from its body, and remove its folder; a job
        with damaged records too (its keys are found by their names, `<job id>.<role>`)."""
        job, record = self.job(job_id)
        if job.status() not in FINISHED or self.queue.is_running(job_id):
            if record.get("damaged"):  # the server record cannot be written: stop the process itself
                job.cancel()
            else:
                self.queue.cancel(job_id)
        prefix = f"{job_id}."
        keys = [name for name, where in self.secrets.list() if where == "file" and name.startswith(prefix)]
        self._forget_keys(list(dict.fromkeys([*record.get("secrets", []), *keys])))
        shutil.rmtree(job.directory)

    def page(self, render: Callable[[Job, dict], dict], page: int, page_size: int) -> dict[str, Any]:
        ids = list(reversed(self.queue.ids()))  # newest first, as NeMo lists them
        chunk = ids[(page - 1) * page_size : page * page_size]
        data = []
        for job_id in chunk:
            with contextlib.suppress(HTTPException):  # deleted since it was listed
                data.append(render(*self.job(job_id)))
        total_pages = max(1, -(-len(ids) // page_size))
        return {
            "object": "list",
            "data": data,
            "sort": "-created_at",
            "pagination": {
                "page": page,
                "page_size": page_size,
                "current_page_size": len(data),
                "total_pages": total_pages,
                "total_results": len(ids),
            },
        }

    def completed(self, job_id: str) -> tuple[Job, dict[str, Any]]:
        job, record = self.job(job_id)
        info = job.info()
        status = views.state(record, info)
        if status != "completed":
            problem = views.problem(record, info)
            why = f": {problem}" if problem else ""
            # x-should-retry: the NeMo client retries a 409 by default; asking again at once will not help.
            raise HTTPException(
                409,
                f"evaluation job {job_id!r} has no results: it is {status}{why}",
                headers={"x-should-retry": "false"},
            )
        return job, record


def _redacted(body: dict[str, Any]) -> dict[str, Any]:
    """The body with every `api_key` value replaced: the record keeps the request, never a key."""
    out = copy.deepcopy(body)
    stack: list[Any] = [out]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            for key, value in item.items():
                if key == "api_key" and value:
                    item[key] = "******"
                else:
                    stack.append(value)
        elif isinstance(item, list):
            stack.extend(item)
    return out
