"""What the TEI clients share: Hugging Face text-embeddings-inference's native API.

TEI serves its own routes at the server's root, next to an OpenAI-compatible `/v1/embeddings`:

* `POST /embed` `{"inputs": [...], "normalize": true, "truncate": true}` -> one vector per input, a JSON
  array of arrays;
* `POST /rerank` `{"query": ..., "texts": [...], "raw_scores": false, "truncate": true}` ->
  `[{"index": i, "score": s}, ...]`, best first;
* `GET /info` -> the model (`model_id`) and the server's limits (`max_client_batch_size`, 32 by default).

A URL whose path ends in `/embed` or `/rerank` names that API (`tei_route`); the clients post to the
route under the rest of the URL. TEI refuses a request with more inputs than `max_client_batch_size`
(HTTP 422, "batch size N > maximum allowed batch size M") and a body over its `--payload-limit` (HTTP 413);
`post_in_batches` splits such a batch and sends it again instead of failing the run; `TEIModel`, the base
of `TEIEmbedder` and `TEIReranker`, sends every batch so.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar
from urllib.parse import urlsplit

from ascend_eval.models.checks import BATCH_SIZE
from ascend_eval.models.endpoint_model import Batch, EndpointModel
from ascend_eval.models.errors import BackendError, ConfigError
from ascend_eval.models.http import EndpointClient, EndpointConfig, EndpointError

__all__ = [
    "DEFAULT_BATCH",
    "TEI_ROUTES",
    "TEIModel",
    "TeiInfo",
    "post_in_batches",
    "read_info",
    "smaller_batch",
    "tei_base",
    "tei_route",
]

logger = logging.getLogger(__name__)

T = TypeVar("T")

TEI_ROUTES = ("/embed", "/rerank")
"""TEI's native routes. `/v1/rerank` and `/v2/rerank` are other APIs (Jina's and Cohere's shapes)."""
DEFAULT_BATCH = 32
"""TEI's default `--max-client-batch-size`: inputs per request when `/info` does not say."""
_LIMIT = re.compile(r"maximum allowed batch size (\d+)")


def tei_route(url: str) -> str | None:
    """The TEI route a URL names ("/embed" or "/rerank"), or None for any other URL.

    >>> tei_route("http://127.0.0.1:8080/embed"), tei_route("https://h/tei/rerank/")
    ('/embed', '/rerank')
    >>> tei_route("http://h:8000/v1/rerank") is None, tei_route("http://h/v1") is None
    (True, True)
    """
    path = urlsplit(url.strip()).path.rstrip("/")
    for route in TEI_ROUTES:
        if path.endswith(route) and not path.endswith(("/v1" + route, "/v2" + route)):
            return route
    return None


def tei_base(url: str) -> str:
    """The URL without its TEI route: where `/embed`, `/rerank` and `/info` live.

    >>> tei_base("http://127.0.0.1:8080/embed/")
    'http://127.0.0.1:8080'
    """
    base = url.strip().rstrip("/")
    route = tei_route(base)
    return base[: -len(route)] if route else base


@dataclass(frozen=True)
class TeiInfo:
    """What `GET /info` says about a TEI server."""

    model_id: str
    max_client_batch_size: int


def read_info(config: EndpointConfig) -> TeiInfo:
    """The model and batch limit of the TEI server at `config.url`.

    Raises:
        BackendError: `GET /info` failed or is not TEI's; the message says what to check and how to
            name the model instead (behind a proxy that forwards only `/embed`, for one).
    """
    with EndpointClient(config) as client:
        try:
            data = client.get("/info")
            model = str(data["model_id"])
            limit = int(data.get("max_client_batch_size") or DEFAULT_BATCH)
        except (EndpointError, KeyError, TypeError, ValueError, OverflowError) as e:
            raise BackendError(
                f"Could not read the TEI server's GET {config.endpoint('/info')} ({e}). Check that the URL "
                "is a running text-embeddings-inference server ending in /embed or /rerank, or name its "
                "model without asking the server: ModelSpec(served_model_name=...), --embedder-model or "
                "--cross-encoder-model."
            ) from None
    # The server's word, within our own bound: a batch is held in memory at once.
    return TeiInfo(model_id=model, max_client_batch_size=min(max(1, limit), BATCH_SIZE.most))


def smaller_batch(error: EndpointError, size: int) -> int | None:
    """The batch size to retry a refused batch of `size` inputs with, or None when a smaller one cannot
    help: TEI's 422 names its limit; a 413 (body over the payload limit) halves the batch.

    >>> smaller_batch(EndpointError("batch size 64 > maximum allowed batch size 32", status=422), 64)
    32
    >>> smaller_batch(EndpointError("Payload Too Large", status=413), 5), smaller_batch(
    ...     EndpointError("Payload Too Large", status=413), 1)
    (2, None)
    """
    if error.status == 422 and (found := _LIMIT.search(str(error))):
        limit = int(found.group(1))
        return limit if 1 <= limit < size else None
    if error.status == 413 and size > 1:
        return size // 2
    return None


def post_in_batches(
    client: EndpointClient,
    route: str,
    chunks: Sequence[list[int]],
    body: Callable[[list[int]], dict[str, Any]],
    parse: Callable[[Any], T],
    *,
    what: str,
    on_limit: Callable[[int], None],
) -> list[tuple[list[int], T]]:
    """POST one body per chunk of input positions, splitting a chunk the server refuses as too large.

    Args:
        client: the TEI server's client.
        route: "/embed" or "/rerank".
        chunks: input positions, one request each.
        body: the request body for a chunk.
        parse: the parsed response of one request (raises ValueError and the like on a bad shape).
        what: the client, for messages (its model id).
        on_limit: called with the smaller batch size when the server refused a batch, so later calls
            start at that size.

    Returns:
        (chunk, parsed response) for every input position, in no particular order.

    Raises:
        BackendError: a request failed for another reason, or a single input is still too large.
    """
    pending = list(chunks)
    done: list[tuple[list[int], T]] = []
    while pending:
        outcomes = client.map(route, [body(chunk) for chunk in pending], parse)
        retry: list[list[int]] = []
        failed: list[EndpointError] = []
        for chunk, outcome in zip(pending, outcomes, strict=True):
            if not isinstance(outcome, EndpointError):
                done.append((chunk, outcome))
                continue
            size = smaller_batch(outcome, len(chunk))
            if size is None:
                failed.append(outcome)
                continue
            logger.warning(
                "%s refused %d inputs in one request (HTTP %s); sending at most %d per request.",
                what,
                len(chunk),
                outcome.status,
                size,
            )
            on_limit(size)
            retry.extend(chunk[k : k + size] for k in range(0, len(chunk), size))
        if failed:
            raise BackendError(
                f"{what}: {len(failed)} of {len(pending)} {route} requests failed; the first: "
                f"{failed[0]}{_hint(failed[0])}"
            ) from None
        pending = retry
    return done


class TEIModel(EndpointModel):
    """The base of the clients of TEI's native API: its routes sit at the server's root (a config with
    `under_v1=False`), it answers with JSON arrays, and a batch it refuses as too large is split and sent
    again (`post_in_batches`), after which `batch_size` stays at the size that fitted.
    """

    api = "tei"
    json_types = (list,)

    def _check(self, config: EndpointConfig, batch_size: int | None) -> None:
        name = type(self).__name__
        BATCH_SIZE.check(f"{name} batch_size", batch_size)
        if config.under_v1:
            raise ConfigError(
                f"{name} needs EndpointConfig(under_v1=False): TEI's {self.route} is not under /v1. "
                f"Got url={config.url!r}."
            )

    def _send(
        self, batches: Sequence[Batch], body: Callable[[Batch], dict[str, Any]], parse: Callable[[Any], Any]
    ) -> list[tuple[Batch, Any]]:
        return post_in_batches(
            self._client, self.route, batches, body, parse, what=self.model_id, on_limit=self._lower
        )

    def _lower(self, size: int) -> None:
        self.batch_size = min(self.batch_size, size)


def _hint(error: EndpointError) -> str:
    if error.status == 404:
        return (
            " A TEI URL ends in the route it serves (http://host:8080/embed, .../rerank); an "
            "OpenAI-compatible server's is its base URL (http://host:8000/v1)."
        )
    if error.status == 413:
        return " One input alone is over the server's payload limit: raise TEI's --payload-limit."
    return ""
