"""A scriptable OpenAI-compatible HTTP server on 127.0.0.1, for testing the HTTP backends end to end.

It is a real `ThreadingHTTPServer` on a free port, served from a background thread, so requests go
through sockets, keep-alive connections and timeouts exactly as against vLLM or NIM. A test scripts the
replies per path, either as a queue (`enqueue`) or as a function of the request body (`route`), and
reads back every request (`requests`) and the most requests ever handled at once (`peak_concurrency`).

    server = LoopbackServer().start()
    server.enqueue(CHAT, Reply(status=429, headers={"Retry-After": "0.2"}), Reply(chat_reply("Yes")))
    server.route(EMBEDDINGS, lambda body: embeddings_reply([[1.0, 0.0]] * len(body["input"])))
"""

from __future__ import annotations

import json
import threading
from collections import defaultdict, deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from ascend_eval.models.http import EndpointConfig

CHAT = "/v1/chat/completions"
EMBEDDINGS = "/v1/embeddings"
RANKING = "/v1/ranking"


@dataclass
class Reply:
    """One scripted response."""

    body: Any = None
    """A dict or list is sent as JSON; a str or bytes is sent as is (to script malformed bodies)."""
    status: int = 200
    delay: float = 0.0
    """Seconds to wait before answering (cut short when the server closes)."""
    headers: dict[str, str] = field(default_factory=dict)
    close_after: int | None = None
    """Send only this many bytes of the body (the headers announce all of it), then close the connection:
    a server that died or a proxy that dropped the connection mid-response."""
    content_type: str = "application/json"
    reason: str | None = None
    """The status line's reason phrase (None: the standard one for the status)."""
    trickle: float = 0.0
    """Send the response one byte every this many seconds (until it is all sent, the client hangs up or
    the server closes): a server, or a proxy, that never goes quiet for a whole read timeout."""
    trickle_headers: bool = False
    """With `trickle`: trickle from the status line on; otherwise the headers go at once, then the body
    trickles."""


@dataclass(frozen=True)
class RecordedRequest:
    """One request as the server received it."""

    path: str
    headers: dict[str, str]
    """Header names in lower case."""
    body: Any
    """The parsed JSON body, or the raw text when it was not JSON."""


Handler = Callable[[Any], "Reply | dict[str, Any]"]


class LoopbackServer:
    """See the module docstring. Use as a context manager, or call `start` and `close`."""

    def __init__(self) -> None:
        self.requests: list[RecordedRequest] = []
        self.peak_concurrency = 0
        self._queues: dict[str, deque[Reply]] = defaultdict(deque)
        self._routes: dict[str, Handler] = {}
        self._in_flight = 0
        self._lock = threading.Lock()
        self.closing = threading.Event()
        """Set by `close`: handlers sleeping out a scripted delay (or a test's hold) wait on it."""
        self._httpd = _Server(("127.0.0.1", 0), _RequestHandler)
        self._httpd.daemon_threads = True
        self._httpd.loopback = self  # type: ignore[attr-defined]
        self._thread = threading.Thread(
            target=self._httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )

    @property
    def url(self) -> str:
        """The base URL, without "/v1"."""
        return f"http://127.0.0.1:{self._httpd.server_address[1]}"

    def start(self) -> LoopbackServer:
        self._thread.start()
        return self

    def close(self) -> None:
        self.closing.set()  # wakes handlers that are still sleeping out a scripted delay
        self._httpd.shutdown()
        self._httpd.server_close()
        self._thread.join(timeout=5)

    def __enter__(self) -> LoopbackServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.close()

    def enqueue(self, path: str, *replies: Reply | dict[str, Any]) -> None:
        """Answer the next requests to `path` with `replies`, in order (before any route)."""
        with self._lock:
            self._queues[path].extend(_as_reply(r) for r in replies)

    def route(self, path: str, handler: Handler) -> None:
        """Answer requests to `path` with `handler(body)` once its queue is empty."""
        self._routes[path] = handler

    def bodies(self, path: str | None = None) -> list[Any]:
        """The bodies received (at `path`, or anywhere), in arrival order."""
        return [r.body for r in self.requests if path is None or r.path == path]

    def reply_for(self, path: str, body: Any) -> Reply:
        """The scripted reply to a request (the next queued one, else the route's), for the handler."""
        with self._lock:
            queue = self._queues.get(path)
            if queue:
                return queue.popleft()
        handler = self._routes.get(path)
        if handler is None:
            return Reply({"error": {"message": f"loopback: nothing scripted for POST {path}"}}, status=404)
        try:
            return _as_reply(handler(body))
        except Exception as e:  # a broken test handler shows up as a 400 (not retried), not a hang
            return Reply({"error": {"message": f"loopback handler raised {e!r}"}}, status=400)

    def begin(self, record: RecordedRequest) -> None:
        """Record a request as it arrives and count it in flight (the handler calls this)."""
        with self._lock:
            self.requests.append(record)
            self._in_flight += 1
            self.peak_concurrency = max(self.peak_concurrency, self._in_flight)

    def end(self) -> None:
        """A request has been answered (the handler calls this)."""
        with self._lock:
            self._in_flight -= 1


class _Server(ThreadingHTTPServer):
    request_queue_size = 128
    """The listen backlog. socketserver's default of 5 can overflow when a client opens its pool's
    connections at once on a busy machine; the kernel then drops the connect, and the client's attempt
    fails before the server sees it. Real servers listen with a deep backlog (uvicorn: 2048)."""


class _RequestHandler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive, as real servers do

    def do_GET(self) -> None:
        self.do_POST()  # scripted the same way; the recorded body is empty

    def do_POST(self) -> None:
        server: LoopbackServer = self.server.loopback  # type: ignore[attr-defined]
        raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        try:
            body: Any = json.loads(raw) if raw else None
        except ValueError:
            body = raw.decode("utf-8", "replace")
        headers = {k.lower(): v for k, v in self.headers.items()}
        server.begin(RecordedRequest(self.path, headers, body))
        try:
            reply = server.reply_for(self.path, body)
            if reply.delay:
                server.closing.wait(reply.delay)
            payload = reply.body
            if isinstance(payload, (dict, list)):
                payload = json.dumps(payload)
            data = payload.encode("utf-8") if isinstance(payload, str) else (payload or b"")
            if reply.trickle and reply.trickle_headers:
                self._trickle(server, self._head(reply, data) + data, reply.trickle)
                return
            self.send_response(reply.status, reply.reason)
            self.send_header("Content-Type", reply.content_type)
            self.send_header("Content-Length", str(len(data)))
            for name, value in reply.headers.items():
                self.send_header(name, value)
            self.end_headers()
            if reply.trickle:
                self._trickle(server, data, reply.trickle)
                return
            if reply.close_after is not None:
                self.wfile.write(data[: reply.close_after])
                self.close_connection = True  # the rest never comes: the client sees the connection close
                return
            self.wfile.write(data)
        except OSError:
            self.close_connection = True  # the client gave up waiting (a timeout test); nothing to answer
        finally:
            server.end()

    def _head(self, reply: Reply, data: bytes) -> bytes:
        """The status line and headers `send_response` would write, as bytes."""
        reason = reply.reason if reply.reason is not None else self.responses.get(reply.status, ("",))[0]
        lines = [f"{self.protocol_version} {reply.status} {reason}", f"Content-Type: {reply.content_type}"]
        lines += [f"Content-Length: {len(data)}", *(f"{k}: {v}" for k, v in reply.headers.items())]
        return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")

    def _trickle(self, server: LoopbackServer, data: bytes, every: float) -> None:
        """Write `data` a byte at a time, `every` seconds apart; stop when the server closes."""
        for i in range(len(data)):
            if server.closing.wait(every):
                break
            self.wfile.write(data[i : i + 1])
            self.wfile.flush()
        self.close_connection = True

    def log_message(self, format: str, *args: Any) -> None:  # keep test output quiet
        pass


def _as_reply(reply: Reply | dict[str, Any]) -> Reply:
    return reply if isinstance(reply, Reply) else Reply(reply)


def endpoint_config(server: LoopbackServer, **overrides: Any) -> EndpointConfig:
    """An `EndpointConfig` for `server` with fast retries, so that failure tests take milliseconds."""
    settings: dict[str, Any] = {
        "url": server.url,
        "model": "loopback-model",
        "request_timeout": 5.0,
        "max_retries": 2,
        "parallelism": 4,
        "backoff_base": 0.01,
        "backoff_max": 0.05,
    }
    settings.update(overrides)
    return EndpointConfig(**settings)


def chat_reply(
    text: str | None = "",
    *,
    finish_reason: str = "stop",
    prompt_tokens: int = 0,
    completion_tokens: int = 0,
    top_logprobs: Sequence[tuple[str, float]] | None = None,
) -> dict[str, Any]:
    """A chat completion in vLLM's shape; `top_logprobs` fills `logprobs.content[0].top_logprobs`."""
    choice: dict[str, Any] = {
        "index": 0,
        "message": {"role": "assistant", "content": text},
        "finish_reason": finish_reason,
        "logprobs": None,
    }
    if top_logprobs is not None:
        entries = [{"token": t, "logprob": lp, "bytes": list(t.encode("utf-8"))} for t, lp in top_logprobs]
        first = entries[0] if entries else {"token": "", "logprob": 0.0, "bytes": []}
        choice["logprobs"] = {"content": [{**first, "top_logprobs": entries}]}
    return {
        "id": "chatcmpl-loopback",
        "object": "chat.completion",
        "created": 0,
        "model": "loopback-model",
        "choices": [choice],
        "usage": {
            "prompt_tokens": prompt_tokens,
            "completion_tokens": completion_tokens,
            "total_tokens": prompt_tokens + completion_tokens,
        },
    }


def embeddings_reply(vectors: Sequence[Sequence[float]], *, reverse: bool = False) -> dict[str, Any]:
    """An embeddings response; `reverse` lists the items last index first (the API allows any order)."""
    data = [{"object": "embedding", "index": i, "embedding": list(v)} for i, v in enumerate(vectors)]
    if reverse:
        data.reverse()
    return {"object": "list", "data": data, "model": "loopback-model", "usage": {"prompt_tokens": 0}}


def ranking_reply(logits: Sequence[float]) -> dict[str, Any]:
    """A NIM ranking response: best first, each entry pointing back at its passage."""
    order = sorted(range(len(logits)), key=lambda i: -logits[i])
    return {"rankings": [{"index": i, "logit": logits[i]} for i in order]}
