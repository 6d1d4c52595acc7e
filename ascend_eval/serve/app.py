"""The REST service: NeMo Evaluator's evaluation-jobs API (`/v1/evaluation/jobs`, `/v2/evaluation/jobs`)
and secrets (`/v1/secrets`), over `ascend_eval.jobs`.

Every request needs `Authorization: Bearer <token>` (401 without), except the health check and the
OpenAPI docs (`/docs`, `/openapi.json`). A body over the size limit is 413; a body that is not a job is
422 with the path of the field at fault, as FastAPI reports its own validation errors.
"""

from __future__ import annotations

import hmac
import json
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from typing import Any

from fastapi import FastAPI, HTTPException, Request
from fastapi.encoders import jsonable_encoder
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, Response

from ascend_eval.serve.nemo import BodyError, check_text
from ascend_eval.serve.routes import add_routes
from ascend_eval.serve.service import Service, Settings

OPEN_PATHS = frozenset(
    {
        "/health",
        "/v1/health/ready",
        "/v1/health/live",
        "/docs",
        "/openapi.json",
        "/docs/oauth2-redirect",
        "/redoc",
    }
)


async def _send_json(send: Callable[..., Awaitable[None]], status: int, body: Any, headers: dict) -> None:
    payload = json.dumps(body).encode()
    raw = [(b"content-type", b"application/json"), (b"content-length", str(len(payload)).encode())]
    raw += [(k.lower().encode(), v.encode()) for k, v in headers.items()]
    await send({"type": "http.response.start", "status": status, "headers": raw})
    await send({"type": "http.response.body", "body": payload})


class Guard:
    """ASGI middleware: the bearer token, then the body size limit (Content-Length, and the bytes that
    actually arrive, for a body sent in chunks)."""

    def __init__(self, app: Any, *, token: str, limit: int) -> None:
        self.app, self.token, self.limit = app, token, limit

    async def __call__(self, scope: dict, receive: Callable, send: Callable) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = dict(scope.get("headers") or [])
        if scope["path"] not in OPEN_PATHS:
            scheme, _, given = headers.get(b"authorization", b"").decode("latin-1").partition(" ")
            if scheme.lower() != "bearer" or not hmac.compare_digest(
                given.strip().encode(), self.token.encode()
            ):
                await _send_json(
                    send,
                    401,
                    {"detail": "missing or wrong bearer token: send 'Authorization: Bearer <token>'"},
                    {"WWW-Authenticate": "Bearer"},
                )
                return
        length = headers.get(b"content-length")
        if length is not None and (not length.isdigit() or int(length) > self.limit):
            await _send_json(send, 413, {"detail": f"request body over {self.limit} bytes"}, {})
            return
        seen = 0

        async def limited() -> dict:
            nonlocal seen
            message = await receive()
            if message["type"] == "http.request":
                seen += len(message.get("body", b""))
                if seen > self.limit:
                    raise HTTPException(413, f"request body over {self.limit} bytes")
            return message

        await self.app(scope, limited, send)


def create_app(settings: Settings) -> FastAPI:
    """The FastAPI application; its lifespan starts the job queue (resuming what the last server left
    unfinished) and stops it (the running jobs stay resumable)."""
    service = Service(settings)

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        service.queue.start()
        try:
            yield
        finally:
            service.queue.stop()

    app = FastAPI(
        title="ascend-eval serve",
        description="NeMo Evaluator's evaluation-jobs API for RAG metric jobs, run by ascend-eval.",
        lifespan=lifespan,
    )
    app.state.service = service
    app.add_middleware(Guard, token=settings.token, limit=settings.max_body_bytes)

    @app.exception_handler(BodyError)
    async def body_error(request: Request, error: BodyError) -> JSONResponse:
        return JSONResponse({"detail": error.detail()}, status_code=422)

    @app.exception_handler(RequestValidationError)
    async def validation_error(request: Request, error: RequestValidationError) -> Response:
        # FastAPI's own 422 echoes the input, and its reply cannot encode a lone surrogate there (a 500):
        # written as ASCII JSON instead (escapes), with pydantic's "not a unicode string" explained. The
        # input itself is not sent back: for POST /v1/secrets it is the secret's value.
        detail = []
        for item in error.errors():
            item = dict(item)
            given = item.pop("input", None)
            if item.get("type") == "string_unicode":
                try:
                    check_text(given, tuple(item["loc"]))
                except BodyError as e:
                    item["msg"] = e.errors[0][1]
            detail.append(item)
        body = json.dumps({"detail": jsonable_encoder(detail)})
        return Response(body, status_code=422, media_type="application/json")

    @app.get("/health")
    @app.get("/v1/health/ready")
    @app.get("/v1/health/live")
    def health() -> dict[str, str]:
        return {"status": "ok"}

    add_routes(app, service)
    return app
