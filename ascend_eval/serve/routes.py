"""The routes: NeMo's `/v1/evaluation/jobs` and `/v2/evaluation/jobs` (paths, methods and response
shapes as `nemo-microservices` 1.5.0 calls them), and `/v1/secrets`."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import Body, FastAPI, HTTPException, Query, Response
from fastapi.responses import PlainTextResponse

from ascend_eval.errors import ConfigError
from ascend_eval.serve import views
from ascend_eval.serve.nemo import BodyError
from ascend_eval.serve.queue import job_log_lines, now
from ascend_eval.serve.service import SecretIn, Service

_V1_EXAMPLE = {
    "config": {
        "type": "rag",
        "tasks": {
            "rag": {
                "type": "ragas",
                "dataset": {"files_url": "file:///data/ragas.json"},
                "metrics": {"faithfulness": {"type": "faithfulness"}},
                "params": {
                    "judge_llm": {
                        "api_endpoint": {
                            "url": "http://127.0.0.1:8000/v1/chat/completions",
                            "model_id": "judge",
                        }
                    }
                },
            }
        },
    },
    "target": {"type": "cached_outputs", "cached_outputs": {"files_url": "file:///data/ragas.json"}},
}
_BODY = (
    "NeMo's `config` + `target` (a RAG config with one `ragas` task; a RAG pipeline, cached outputs, a "
    "dataset or rows as the target), or a job spec in the seed shape (`metric`, `model`, "
    "`retriever_pipeline`, `dataset`, `metric_params`), at the top level or under `spec`."
)


def _dict(body: Any) -> dict[str, Any]:
    if not isinstance(body, dict):
        raise BodyError([(("body",), f"the body must be a JSON object, got {type(body).__name__}")])
    return body


def _cursor(page_cursor: str | None) -> int:
    """A log page's `page_cursor` as the line to start at: absent or empty is the first line; anything
    but the ASCII digits of a `next_page` (at most 18 of them) is a 422, not a number Python would read
    differently ("²", "١٢") or refuse (5,000 digits)."""
    if not page_cursor:
        return 0
    if not (page_cursor.isascii() and page_cursor.isdigit() and len(page_cursor) <= 18):
        raise HTTPException(
            422, "page_cursor must be the next_page of an earlier page: a line number of at most 18 digits"
        )
    return int(page_cursor)


def _zip(job_id: str, content: bytes) -> Response:
    disposition = f'attachment; filename="{job_id}-results.zip"'
    return Response(content, media_type="application/zip", headers={"Content-Disposition": disposition})


def add_routes(app: FastAPI, service: Service) -> None:
    """Register every route on `app`, served by `service`: v1 jobs, v2 jobs and their results, secrets.
    FastAPI matches routes in the order they are added, so the groups keep this order."""
    _add_v1_routes(app, service, "/v1/evaluation/jobs")
    v2 = "/v2/evaluation/jobs"
    _add_v2_job_routes(app, service, v2)
    _add_v2_result_routes(app, service, v2)
    _add_secret_routes(app, service)


def _add_v1_routes(app: FastAPI, service: Service, v1: str) -> None:
    """NeMo's v1 evaluation jobs under `v1`: create, list, get, delete, cancel, status, results, logs."""

    @app.post(v1, tags=["v1 evaluation jobs"], summary="Create an evaluation job")
    def v1_create(body: Annotated[Any, Body(description=_BODY, examples=[_V1_EXAMPLE])]) -> dict[str, Any]:
        job = service.create(_dict(body), "v1")
        return views.v1_job(*service.job(job.id))

    @app.get(v1, tags=["v1 evaluation jobs"], summary="List evaluation jobs")
    def v1_list(page: int = Query(1, ge=1), page_size: int = Query(10, ge=1, le=1000)) -> dict[str, Any]:
        return service.page(views.v1_job, page, page_size)

    @app.get(f"{v1}/{{job_id}}", tags=["v1 evaluation jobs"], summary="Get an evaluation job")
    def v1_get(job_id: str) -> dict[str, Any]:
        return views.v1_job(*service.job(job_id))

    @app.delete(f"{v1}/{{job_id}}", tags=["v1 evaluation jobs"], status_code=204, summary="Delete a job")
    def v1_delete(job_id: str) -> Response:
        service.delete(job_id)
        return Response(status_code=204)

    @app.post(f"{v1}/{{job_id}}/cancel", tags=["v1 evaluation jobs"], summary="Cancel a job")
    def v1_cancel(job_id: str) -> dict[str, Any]:
        service.cancel(job_id)
        return views.v1_job(*service.job(job_id))

    @app.get(f"{v1}/{{job_id}}/status", tags=["v1 evaluation jobs"], summary="A job's status details")
    def v1_status(job_id: str) -> dict[str, Any]:
        job, record = service.job(job_id)
        return views.status_details(job, record)

    @app.get(f"{v1}/{{job_id}}/results", tags=["v1 evaluation jobs"], summary="A completed job's results")
    def v1_results(job_id: str) -> dict[str, Any]:
        return views.evaluation_result(*service.completed(job_id))

    @app.get(f"{v1}/{{job_id}}/download-results", tags=["v1 evaluation jobs"], summary="Results as a zip")
    def v1_download(job_id: str) -> Response:
        job, _ = service.completed(job_id)
        return _zip(job_id, views.archive(job))

    @app.get(f"{v1}/{{job_id}}/logs", tags=["v1 evaluation jobs"], summary="The job's log (text)")
    def v1_logs(job_id: str) -> PlainTextResponse:
        job, _ = service.job(job_id)
        return PlainTextResponse("\n".join(job_log_lines(job.directory)) + "\n")


def _add_v2_job_routes(app: FastAPI, service: Service, v2: str) -> None:
    """NeMo's v2 evaluation jobs under `v2`: create, list, get, delete, cancel, status, paged logs."""

    @app.post(v2, tags=["v2 evaluation jobs"], summary="Create an evaluation job")
    def v2_create(body: Annotated[Any, Body(description="`spec`: " + _BODY)]) -> dict[str, Any]:
        job = service.create(_dict(body), "v2")
        return views.v2_job(*service.job(job.id))

    @app.get(v2, tags=["v2 evaluation jobs"], summary="List evaluation jobs")
    def v2_list(page: int = Query(1, ge=1), page_size: int = Query(10, ge=1, le=1000)) -> dict[str, Any]:
        return service.page(views.v2_job, page, page_size)

    @app.get(f"{v2}/{{job_id}}", tags=["v2 evaluation jobs"], summary="Get an evaluation job")
    def v2_get(job_id: str) -> dict[str, Any]:
        return views.v2_job(*service.job(job_id))

    @app.delete(f"{v2}/{{job_id}}", tags=["v2 evaluation jobs"], summary="Delete a job")
    def v2_delete(job_id: str) -> dict[str, Any]:
        service.delete(job_id)
        return {"id": job_id, "deleted": True}

    @app.post(f"{v2}/{{job_id}}/cancel", tags=["v2 evaluation jobs"], summary="Cancel a job")
    def v2_cancel(job_id: str) -> dict[str, Any]:
        service.cancel(job_id)
        return views.v2_job(*service.job(job_id))

    @app.get(f"{v2}/{{job_id}}/status", tags=["v2 evaluation jobs"], summary="A job's status")
    def v2_status(job_id: str) -> dict[str, Any]:
        return views.v2_status(*service.job(job_id))

    @app.get(f"{v2}/{{job_id}}/logs", tags=["v2 evaluation jobs"], summary="The job's log lines, paged")
    def v2_logs(
        job_id: str, limit: int = Query(100, ge=1, le=10000), page_cursor: str | None = None
    ) -> dict[str, Any]:
        job, record = service.job(job_id)
        return views.v2_logs(job, record, limit=limit, cursor=_cursor(page_cursor))


def _add_v2_result_routes(app: FastAPI, service: Service, v2: str) -> None:
    """A completed v2 job's results under `v2`: the list, the scores, the artifacts zip, and each by
    name."""

    @app.get(f"{v2}/{{job_id}}/results", tags=["v2 evaluation jobs"], summary="A completed job's results")
    def v2_results(job_id: str) -> dict[str, Any]:
        return {"object": "list", "data": views.v2_result_entries(*service.completed(job_id))}

    @app.get(f"{v2}/{{job_id}}/results/evaluation-results/download", tags=["v2 evaluation jobs"])
    def v2_scores(job_id: str) -> dict[str, Any]:
        result = views.evaluation_result(*service.completed(job_id))
        return {"tasks": result["tasks"], "groups": result["groups"]}

    @app.get(f"{v2}/{{job_id}}/results/artifacts/download", tags=["v2 evaluation jobs"])
    def v2_artifacts(job_id: str) -> Response:
        job, _ = service.completed(job_id)
        return _zip(job_id, views.archive(job))

    @app.get(f"{v2}/{{job_id}}/results/{{result_name}}", tags=["v2 evaluation jobs"])
    def v2_result(job_id: str, result_name: str) -> dict[str, Any]:
        entries = {e["result_name"]: e for e in views.v2_result_entries(*service.completed(job_id))}
        if result_name not in entries:
            raise HTTPException(404, f"no result {result_name!r}; there are {sorted(entries)}")
        return entries[result_name]

    @app.get(f"{v2}/{{job_id}}/results/{{result_name}}/download", tags=["v2 evaluation jobs"])
    def v2_result_download(job_id: str, result_name: str) -> Any:
        if result_name == "evaluation-results":
            return v2_scores(job_id)
        if result_name == "artifacts":
            return v2_artifacts(job_id)
        raise HTTPException(404, f"no result {result_name!r}; there are ['artifacts', 'evaluation-results']")


def _add_secret_routes(app: FastAPI, service: Service) -> None:
    """`/v1/secrets`: store, list (names only) and delete the secrets jobs name; the server's own are
    refused (403)."""

    def _own(name: str) -> None:
        if service.reserved(name):
            raise HTTPException(
                403,
                f"secret {name!r} is this server's own (its token, or a key from a job body); manage it "
                "with `ascend-eval secrets` on the server",
            )

    @app.post("/v1/secrets", tags=["secrets"], summary="Store a secret (an API key a job names)")
    def secret_create(secret: SecretIn) -> dict[str, Any]:
        _own(secret.name)
        service.store_secret(secret)
        return {"name": secret.name, "created_at": now()}

    @app.get("/v1/secrets", tags=["secrets"], summary="Secret names (never values)")
    def secret_list() -> dict[str, Any]:
        entries = [
            {"name": n, "source": w} for n, w in service.secrets.list() if n != service.settings.token_secret
        ]
        return {"object": "list", "data": entries}

    @app.delete("/v1/secrets/{name}", tags=["secrets"], status_code=204, summary="Delete a stored secret")
    def secret_delete(name: str) -> Response:
        _own(name)
        try:
            deleted = service.secrets.delete(name)
        except ConfigError:
            deleted = False
        if not deleted:
            raise HTTPException(404, f"no stored secret {name!r}")
        return Response(status_code=204)
