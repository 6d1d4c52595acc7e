"""A text-embeddings-inference stand-in on a `LoopbackServer`: TEI's native routes with TEI's request and
response shapes, limits and error bodies (router/src/http/server.rs and types.rs of
huggingface/text-embeddings-inference), answered by simple deterministic rules.

* `GET /info` -> `{"model_id", "max_client_batch_size", "max_input_length", ...}`
* `POST /embed` `{"inputs": str | [str], "normalize": true, "truncate": ...}` -> `[[float, ...], ...]`;
  vectors are hashed character trigrams (unit length when `normalize`).
* `POST /rerank` `{"query", "texts", "raw_scores", "truncate", "return_text"}` -> `[{"index", "score"}]`
  best first; the score is the share of the query's characters found in the text (a logit of it with
  `raw_scores`).
* More inputs than `max_client_batch_size`: 422 `{"error": "batch size N > maximum allowed batch size M",
  "error_type": "Validation"}`; no inputs: 400 with error_type "Empty"; a body over `payload_limit` bytes:
  413 with axum's plain-text body.
"""

from __future__ import annotations

import json
import math
import zlib
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from tests.models.loopback_server import LoopbackServer, Reply

INFO, EMBED, RERANK = "/info", "/embed", "/rerank"


def trigram_vector(text: str, dim: int, *, normalize: bool = True) -> list[float]:
    """Hashed character trigrams of `text` (deterministic: the same text gives the same vector)."""
    out = [0.0] * dim
    padded = f"  {text}  "
    for j in range(len(padded) - 2):
        out[zlib.crc32(padded[j : j + 3].encode()) % dim] += 1.0
    if normalize:
        norm = math.sqrt(sum(x * x for x in out)) or 1.0
        out = [x / norm for x in out]
    return out


def overlap(query: str, text: str) -> float:
    """The share of the query's distinct characters that occur in `text`, in [0, 1]."""
    chars = set(query) - set(" ")
    return sum(c in text for c in chars) / len(chars) if chars else 0.0


@dataclass
class TeiStandIn:
    """TEI's native API, installed on a loopback server (see the module docstring)."""

    server: LoopbackServer
    model_id: str = "BAAI/bge-small-zh-v1.5"
    max_client_batch_size: int = 32
    payload_limit: int = 2_000_000
    dim: int = 64
    batches: list[int] = field(default_factory=list)
    """The number of inputs of every request answered or refused, in arrival order."""

    def install(self) -> TeiStandIn:
        self.server.route(INFO, lambda _body: self.info())
        self.server.route(EMBED, self.embed)
        self.server.route(RERANK, self.rerank)
        return self

    @property
    def url(self) -> str:
        return self.server.url

    def info(self) -> dict[str, Any]:
        return {
            "model_id": self.model_id,
            "model_sha": None,
            "model_dtype": "float16",
            "model_type": {"embedding": {"pooling": "cls"}},
            "max_concurrent_requests": 512,
            "max_input_length": 512,
            "max_batch_tokens": 16384,
            "max_client_batch_size": self.max_client_batch_size,
            "auto_truncate": True,
            "tokenization_workers": 1,
            "version": "1.8.0",
        }

    def embed(self, body: dict[str, Any]) -> Reply | list[list[float]]:
        inputs = body["inputs"]
        texts = [inputs] if isinstance(inputs, str) else list(inputs)
        refused = self._refuse(body, texts, "`inputs` cannot be empty")
        if refused is not None:
            return refused
        normalize = body.get("normalize", True)
        return [trigram_vector(t, self.dim, normalize=normalize) for t in texts]

    def rerank(self, body: dict[str, Any]) -> Reply | list[dict[str, Any]]:
        texts: Sequence[str] = body["texts"]
        refused = self._refuse(body, texts, "`texts` cannot be empty")
        if refused is not None:
            return refused
        shares = [overlap(body["query"], t) for t in texts]
        if body.get("raw_scores"):
            scores = [math.log((s + 1e-3) / (1 - s + 1e-3)) for s in shares]
        else:
            scores = shares
        ranks = [{"index": i, "score": s} for i, s in enumerate(scores)]
        ranks.sort(key=lambda r: -r["score"])
        if body.get("return_text"):
            for r in ranks:
                r["text"] = texts[r["index"]]
        return ranks

    def _refuse(self, body: dict[str, Any], texts: Sequence[str], empty: str) -> Reply | None:
        self.batches.append(len(texts))
        if len(json.dumps(body, ensure_ascii=False).encode("utf-8")) > self.payload_limit:
            return Reply(
                "Failed to buffer the request body: length limit exceeded",
                status=413,
                content_type="text/plain; charset=utf-8",
            )
        if not texts:
            return Reply({"error": empty, "error_type": "Empty"}, status=400)
        if len(texts) > self.max_client_batch_size:
            message = f"batch size {len(texts)} > maximum allowed batch size {self.max_client_batch_size}"
            return Reply({"error": message, "error_type": "Validation"}, status=422)
        return None
