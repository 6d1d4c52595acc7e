"""`EndpointModel`: the base of the model clients that call an inference server over HTTP.

A client owns one `EndpointClient`, whose connection pool, retries and congestion gate its
`EndpointConfig` sets; it cuts its inputs into requests, sends them to its route and reads each response
with its own parser. A subclass says only what differs: the route, the request body and how to read the
response (`OpenAIJudge`, `OpenAIEmbedder`, `OpenAIReranker`, and through `tei_api.TEIModel`, which also
splits a batch the server refuses as too large, `TEIEmbedder` and `TEIReranker`).

`EndpointEmbedder` and `EndpointReranker` hold what the embedders and the rerankers do alike whatever
API they speak: the order of the requests and how the answers come back together.
"""

from __future__ import annotations

import math
from abc import abstractmethod
from collections.abc import Callable, Iterable, Sequence
from typing import Any, ClassVar, TypeVar

import numpy as np
from numpy.typing import NDArray

from ascend_eval.models.base import EmbedKind
from ascend_eval.models.batching import longest_first, scatter
from ascend_eval.models.checks import BATCH_SIZE
from ascend_eval.models.errors import BackendError, ConfigError
from ascend_eval.models.http import Closing, EndpointClient, EndpointConfig, EndpointError

__all__ = [
    "EndpointEmbedder",
    "EndpointModel",
    "EndpointReranker",
    "in_index_order",
    "l2_normalise",
    "listed",
    "ranked_scores",
    "vector_rows",
]

T = TypeVar("T")

Batch = list[int]
"""Input positions sent in one request."""


class EndpointModel(Closing):
    """A model runtime behind one server's `route`.

    Args:
        config: The server, the model name and the retry policy.
        batch_size: Inputs per request, for a client that batches its inputs (None for one that sends
            one request per input).

    Raises:
        ConfigError: An invalid setting, or the API key named by `config` cannot be read.
    """

    route: ClassVar[str]
    """Where every request goes, under the config's base URL, e.g. "/embeddings"."""
    api: ClassVar[str] = "openai"
    """The API the server speaks: the start of `model_id`."""
    json_types: ClassVar[tuple[type, ...]] = (dict,)
    """What a response's top-level JSON value may be (as `EndpointClient` takes it)."""
    shown: ClassVar[tuple[str, ...]] = ("model_id", "batch_size")
    """The attributes the repr shows; the model id names the server, never its API key."""
    asks_for: ClassVar[str] = ""
    """What one request asks for, for the message when requests fail, e.g. "embedding"."""
    batch_size: int
    """Inputs per request (a client that batches its inputs)."""

    def __init_subclass__(
        cls, *, route: str | None = None, asks_for: str | None = None, **kwargs: Any
    ) -> None:
        # A client names its route (and what its requests ask for) where it names its base:
        # `class OpenAIEmbedder(EndpointEmbedder, route="/embeddings", asks_for="embedding")`.
        super().__init_subclass__(**kwargs)
        if route is not None:
            cls.route = route
        if asks_for is not None:
            cls.asks_for = asks_for

    def __init__(self, config: EndpointConfig, *, batch_size: int | None = None) -> None:
        self._check(config, batch_size)
        self.config = config
        if batch_size is not None:
            self.batch_size = batch_size
        self.model_id = f"{self.api}:{config.model}@{config.url}"
        self._client = EndpointClient(config, json_types=self.json_types)

    def _check(self, config: EndpointConfig, batch_size: int | None) -> None:
        BATCH_SIZE.check("batch_size", batch_size, optional=True)

    def __repr__(self) -> str:
        fields = ", ".join(f"{name}={getattr(self, name)!r}" for name in self.shown)
        return f"{type(self).__name__}({fields})"

    def close(self) -> None:
        self._client.close()

    def _batches(self, groups: Iterable[Sequence[int]]) -> list[Batch]:
        """Each group of input positions cut in order into requests of at most `batch_size` inputs."""
        size = self.batch_size
        return [list(group[k : k + size]) for group in groups for k in range(0, len(group), size)]

    def _map(
        self,
        bodies: Sequence[dict[str, Any]],
        parse: Callable[[Any], T],
        *,
        lengths: Sequence[int] | None = None,
    ) -> list[T | EndpointError]:
        """POST every body to `route`, up to `parallelism` at once (see `EndpointClient.map`).

        Returns:
            One outcome per body, in input order: the parsed response or the request's `EndpointError`.
            With `lengths` (one per body) the longest go first, so that the slowest requests start early
            instead of trailing the rest alone.
        """
        if lengths is None:
            return self._client.map(self.route, bodies, parse)
        order = longest_first(lengths)
        outcomes = self._client.map(self.route, [bodies[i] for i in order], parse)
        return scatter(len(bodies), [(order, outcomes)])

    def _post(
        self,
        batches: Sequence[Batch],
        body: Callable[[Batch], dict[str, Any]],
        parse: Callable[[Any], Any],
        *,
        answers: str,
    ) -> list[tuple[Batch, Any]]:
        """One request per batch, all or nothing; each answer holds one value per input it was sent.

        Args:
            answers: What the server did when an answer holds another number of values, after the model
                id, with `{got}` and `{sent}` for the two numbers.

        Returns:
            (batch, parsed response) for every batch, in no particular order.

        Raises:
            BackendError: A request failed after its retries, or its answer is of the wrong length.
        """
        answered = self._send(batches, body, parse)
        for batch, values in answered:
            if len(values) != len(batch):
                raise BackendError(f"{self.model_id} {answers.format(got=len(values), sent=len(batch))}")
        return answered

    def _send(
        self, batches: Sequence[Batch], body: Callable[[Batch], dict[str, Any]], parse: Callable[[Any], Any]
    ) -> list[tuple[Batch, Any]]:
        outcomes = self._map([body(batch) for batch in batches], parse)
        failed = [o for o in outcomes if isinstance(o, EndpointError)]
        if failed:
            raise BackendError(
                f"{self.model_id}: {len(failed)} of {len(batches)} {self.asks_for} requests failed; "
                f"the first: {failed[0]}"
            ) from None
        return list(zip(batches, outcomes, strict=True))


class EndpointEmbedder(EndpointModel):
    """An `Embedder` on a server: texts go longest first (so each request holds texts of similar length)
    in requests of `batch_size`, and the vectors come back in input order, L2-normalised.

    A subclass names its `route` and sets `_body` and `_parse`.
    """

    def __init__(
        self, config: EndpointConfig, *, batch_size: int, query_prefix: str = "", document_prefix: str = ""
    ) -> None:
        self.query_prefix = query_prefix
        """Prepended to every text embedded with kind="query"."""
        self.document_prefix = document_prefix
        """Prepended to every text embedded with kind="document"."""
        super().__init__(config, batch_size=batch_size)

    def embed(self, texts: Sequence[str], *, kind: EmbedKind = "document") -> NDArray[np.float32]:
        """Embed `texts`.

        Returns:
            float32 `[len(texts), dim]` in input order, each row L2-normalised (an all-zero vector
            stays zero).

        Raises:
            BackendError: A request failed after its retries, or the server answered with the wrong
                number or size of vectors; embeddings are all or nothing.
        """
        if kind not in ("query", "document"):
            raise ConfigError(f"kind must be 'query' or 'document', got {kind!r}.")
        if not texts:
            return np.zeros((0, 0), dtype=np.float32)
        prefix = self.query_prefix if kind == "query" else self.document_prefix
        inputs = [prefix + t for t in texts]
        batches = self._batches([longest_first([len(t) for t in inputs])])

        def body(batch: Batch) -> dict[str, Any]:
            return self._body([inputs[j] for j in batch], kind)

        answered = self._post(
            batches, body, self._parse, answers="returned {got} vectors for the {sent} texts of one request."
        )
        dims = sorted({vectors.shape[1] for _, vectors in answered})
        if len(dims) != 1:
            raise BackendError(f"{self.model_id} returned vectors of different sizes {dims} in one call.")
        out = np.empty((len(texts), dims[0]), dtype=np.float32)
        for batch, vectors in answered:
            out[batch] = vectors
        return l2_normalise(out)

    @abstractmethod
    def _body(self, inputs: list[str], kind: EmbedKind) -> dict[str, Any]:
        """The request body for these texts (already prefixed)."""

    @abstractmethod
    def _parse(self, data: Any) -> NDArray[np.float32]:
        """The vectors of one response, one row per text sent; ValueError and the like on a bad shape."""


class EndpointReranker(EndpointModel):
    """A `Reranker` on a server that scores many texts against one query per request: pairs are grouped
    by query, in order of first appearance, and sent in requests of at most `batch_size` texts.

    A subclass names its `route` (and what the server `ranks`, when not "texts") and sets `_body` and
    `_parse`.
    """

    ranks: ClassVar[str] = "texts"
    """What the server ranks, for messages ("passages" in NIM's API)."""

    def __init_subclass__(cls, *, ranks: str | None = None, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if ranks is not None:
            cls.ranks = ranks

    def score(self, pairs: Sequence[tuple[str, str]]) -> NDArray[np.float32]:
        """Score each (query, text) pair.

        Returns:
            float32 `[len(pairs)]`, in input order.

        Raises:
            BackendError: A request failed after its retries, or the server scored other texts than it
                was sent; scores are all or nothing.
        """
        if not pairs:
            return np.zeros(0, dtype=np.float32)
        by_query: dict[str, list[int]] = {}
        for i, (query, _) in enumerate(pairs):
            by_query.setdefault(query, []).append(i)

        def body(batch: Batch) -> dict[str, Any]:
            return self._body(pairs[batch[0]][0], [pairs[i][1] for i in batch])

        answers = f"ranked {{got}} {self.ranks} of the {{sent}} sent in one request."
        answered = self._post(self._batches(by_query.values()), body, self._parse, answers=answers)
        out = np.empty(len(pairs), dtype=np.float32)
        for batch, scores in answered:
            out[batch] = scores
        return out

    @abstractmethod
    def _body(self, query: str, texts: list[str]) -> dict[str, Any]:
        """The request body that scores `texts` against `query`."""

    @abstractmethod
    def _parse(self, data: Any) -> list[float]:
        """The scores of one response, in the order the texts were sent."""


def listed(data: dict[str, Any], key: str) -> list[Any]:
    """The non-empty list a response object holds under `key`.

    >>> listed({"data": [1]}, "data")
    [1]
    """
    items = data.get(key)
    if not isinstance(items, list) or not items:
        raise ValueError(f"no {key!r} list in the response; its keys are {sorted(data)}")
    return items


def in_index_order(entries: Sequence[Any], value: Callable[[Any], T], indices: str) -> list[T]:
    """`value(entry)` of each entry, at the position the entry's "index" names (servers may answer in
    another order than they were asked, e.g. best first).

    Args:
        indices: The indices, for the message when they are not 0..n-1, e.g. "the item indices".

    >>> in_index_order([{"index": 1, "v": "b"}, {"index": 0, "v": "a"}], lambda e: e["v"], "the indices")
    ['a', 'b']
    """
    found = [entry["index"] for entry in entries]
    if sorted(found) != list(range(len(entries))):
        raise ValueError(f"{indices} are not 0..{len(entries) - 1}: {found[:20]}")
    out: list[Any] = [None] * len(entries)
    for entry in entries:
        out[entry["index"]] = value(entry)
    return out


def ranked_scores(entries: Sequence[Any], *, key: str, text: str, indices: str) -> list[float]:
    """The finite `key` score of each ranking entry, in the order the texts were sent.

    Args:
        text: What one ranked text is, for messages ("passage", "text").
        indices: The indices, for messages (see `in_index_order`).
    """

    def score(entry: Any) -> float:
        value = float(entry[key])
        if not math.isfinite(value):
            raise ValueError(f"{text} {entry['index']} has a non-finite {key} {value}")
        return value

    return in_index_order(entries, score, indices)


def vector_rows(rows: Sequence[Any]) -> NDArray[np.float32]:
    """One response's vectors as float32 rows: all of one size, every number finite."""
    if len({len(r) for r in rows}) != 1:
        raise ValueError("the vectors in one response differ in size")
    array = np.asarray(rows, dtype=np.float32)
    if not np.isfinite(array).all():
        raise ValueError("the vectors contain NaN or infinity")
    return array


def l2_normalise(x: NDArray[np.float32]) -> NDArray[np.float32]:
    """Rows scaled to unit length; all-zero rows stay zero instead of turning into NaN.

    >>> l2_normalise(np.array([[3.0, 4.0], [0.0, 0.0]], dtype=np.float32)).tolist()
    [[0.6000000238418579, 0.800000011920929], [0.0, 0.0]]
    """
    x64 = x.astype(np.float64)
    norms = np.linalg.norm(x64, axis=1, keepdims=True)
    return np.divide(x64, norms, out=np.zeros_like(x64), where=norms > 0).astype(np.float32)
