"""JSON over HTTP for OpenAI-compatible inference servers (vLLM, NVIDIA NIM, MindIE, OpenAI).

One `EndpointClient` owns one `httpx.Client` (a pool of keep-alive connections) and runs up to
`parallelism` requests at once from a thread pool. Each request is retried on its own, and `map` returns
one outcome per body in input order, so a request that still fails after its retries never fails the
others.

The API key is read once, when the client is built. It lives only in the client's private state and in
the `Authorization` header of each request: no repr, log line or error message contains it. Everything
that comes back from a server (error bodies, response data, exception messages) is scrubbed of it, whole
or in part, before it is cut short, returned or logged.
"""

from __future__ import annotations

import json
import logging
import os
import random
import threading
import time
from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar
from urllib.parse import urlsplit, urlunsplit

from ascend_eval.models.checks import PARALLELISM, private_file
from ascend_eval.models.congestion import CongestionGate, retry_after_seconds
from ascend_eval.models.deadline import attempt_deadline, keep_to_deadlines
from ascend_eval.models.errors import BackendError, ConfigError
from ascend_eval.models.scrub import Scrubber, clip_excerpt

if TYPE_CHECKING:
    import httpx

logger = logging.getLogger(__name__)

T = TypeVar("T")

# Statuses worth another attempt: the server is busy, restarting or overloaded, not refusing the request.
_RETRY_STATUSES = frozenset({408, 409, 429})
_RETRY_AFTER_STATUSES = frozenset({429, 503})
_JSON_NAMES = {dict: "object", list: "array"}
ENDPOINT_SUFFIXES = ("/chat/completions", "/completions", "/embeddings", "/ranking", "/reranking", "/rerank")
"""Paths of single endpoints that people paste after a server's base URL (NeMo job specs write them)."""


@dataclass(frozen=True)
class EndpointConfig:
    """Where an OpenAI-compatible server is and how to talk to it.

    The config holds where to find the API key, never the key itself, so it can be logged and saved.
    """

    url: str
    """Base URL, e.g. "http://127.0.0.1:8000" or "https://api.openai.com/v1"; "/v1" is added when missing."""
    model: str
    """Model name sent in every request body (vLLM's --served-model-name, NIM's model id)."""
    api_key_env: str | None = None
    """Name of an environment variable holding the API key, e.g. "OPENAI_API_KEY"; read when a client is
    built. None (with api_key_file None) sends no Authorization header."""
    api_key_file: str | None = None
    """Path to a file holding only the API key; it must not be accessible by group or others (chmod 600).
    Checked when the config is built and again when a client reads it."""
    request_timeout: float = 60.0
    """Seconds for a whole attempt: connecting, sending and reading all of the answer (`attempt_deadline`)."""
    max_retries: int = 3
    """Further attempts after the first, for connection errors, timeouts, 408, 409, 429 and 5xx."""
    parallelism: int = 8
    """Requests in flight at once, 1 to 1,024 (`checks.PARALLELISM`); fewer while the server answers 429 or
    503, times out, or takes over half of `request_timeout` to answer (see `congestion.CongestionGate`)."""
    backoff_base: float = 0.5
    """Seconds before the first retry; doubled for each later one, with random jitter."""
    backoff_max: float = 20.0
    """Longest wait in seconds between two attempts, including one a server asks for with Retry-After."""
    under_v1: bool = True
    """Whether the API's routes sit under "/v1" (OpenAI-compatible servers), which is then added to `url`
    when missing. False for servers whose routes sit where `url` points, such as TEI's native `/embed`."""

    def __post_init__(self) -> None:
        object.__setattr__(self, "url", _normalise_url(self.url, under_v1=self.under_v1))
        if not self.model.strip():
            raise ConfigError("EndpointConfig.model is empty; pass the model name the server serves.")
        if self.api_key_env is not None and self.api_key_file is not None:
            raise ConfigError(
                f"EndpointConfig got both api_key_env={self.api_key_env!r} and "
                f"api_key_file={self.api_key_file!r}; pass only one."
            )
        if self.api_key_env is not None and not self.api_key_env.strip():
            raise ConfigError("EndpointConfig.api_key_env is empty; pass a variable name or None.")
        if self.api_key_file is not None:
            private_file(self.api_key_file, "api_key_file")
        if not 0 < self.request_timeout < float("inf"):  # NaN and infinity too: no socket takes them
            raise ConfigError(f"request_timeout must be finite and > 0 seconds, got {self.request_timeout}.")
        if self.max_retries < 0:
            raise ConfigError(f"max_retries must be >= 0, got {self.max_retries}.")
        PARALLELISM.check("EndpointConfig.parallelism", self.parallelism)
        if self.backoff_base < 0 or self.backoff_max < self.backoff_base:
            raise ConfigError(
                "Need 0 <= backoff_base <= backoff_max, got "
                f"backoff_base={self.backoff_base}, backoff_max={self.backoff_max}."
            )

    def endpoint(self, path: str) -> str:
        """The full URL of `path` (e.g. "/chat/completions") under the base URL."""
        return self.url + path


def is_url(model: str) -> bool:
    """Whether a model argument names an OpenAI-compatible server rather than a local model.

    >>> is_url("https://integrate.api.nvidia.com/v1"), is_url("/models/qwen"), is_url("local:default")
    (True, False, False)
    """
    return model.strip().startswith(("http://", "https://"))


def _endpoint_suffix(path: str) -> str | None:
    """The endpoint path `path` ends in, if any ("/chat/completions" is listed before "/completions")."""
    path = path.rstrip("/")
    return next((suffix for suffix in ENDPOINT_SUFFIXES if path.endswith(suffix)), None)


def endpoint_base(url: str) -> str:
    """The server's base URL for a URL that may name one endpoint of it.

    >>> endpoint_base("https://integrate.api.nvidia.com/v1/chat/completions")
    'https://integrate.api.nvidia.com/v1'
    >>> endpoint_base("https://ai.api.nvidia.com/v1/ranking/")
    'https://ai.api.nvidia.com/v1'
    >>> endpoint_base("http://127.0.0.1:8000")
    'http://127.0.0.1:8000'
    """
    base = url.strip().rstrip("/")
    suffix = _endpoint_suffix(base)
    return base[: -len(suffix)] if suffix else base


def _normalise_url(url: str, *, under_v1: bool = True) -> str:
    """The base URL without a trailing slash, ending in "/v1" when `under_v1`.

    >>> _normalise_url("http://127.0.0.1:8000/")
    'http://127.0.0.1:8000/v1'
    >>> _normalise_url("https://api.openai.com/v1/")
    'https://api.openai.com/v1'
    """
    parts = urlsplit(url.strip())
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ConfigError(
            f"EndpointConfig.url must be an http(s) URL like 'http://127.0.0.1:8000', got {url!r}."
        )
    if parts.username is not None or parts.password is not None:
        # The URL shows up in model ids, logs and errors, so it must not carry credentials.
        raise ConfigError(
            "EndpointConfig.url must not contain credentials (user:password@host); "
            "put the API key in an environment variable and pass api_key_env."
        )
    if parts.query or parts.fragment:
        raise ConfigError(f"EndpointConfig.url must be a base URL without '?' or '#', got {url!r}.")
    path = parts.path.rstrip("/")
    suffix = _endpoint_suffix(path)
    if suffix is not None:
        raise ConfigError(
            f"EndpointConfig.url is the base URL of the server, not of one endpoint; got {url!r}. "
            f"Drop {suffix!r} from it (`endpoint_base` does)."
        )
    if under_v1 and not path.endswith("/v1"):
        path += "/v1"
    return urlunsplit((parts.scheme, parts.netloc, path, "", ""))


def _read_api_key(config: EndpointConfig) -> tuple[str | None, str]:
    """The API key named by `config` (or None) and a description of where it came from, for messages."""
    if config.api_key_env is not None:
        source = f"environment variable {config.api_key_env}"
        key = os.environ.get(config.api_key_env, "").strip()
        if not key:
            raise ConfigError(
                f"api_key_env={config.api_key_env!r}, but that environment variable is unset or empty. "
                f"Export it, or pass api_key_env=None for a server without authentication."
            )
    elif config.api_key_file is not None:
        source = f"file {config.api_key_file}"
        key = private_file(config.api_key_file, "api_key_file").read_text(encoding="utf-8").strip()
        if not key:
            raise ConfigError(f"api_key_file {config.api_key_file!r} is empty; write the API key into it.")
    else:
        return None, "none"
    # An illegal header character would make httpx raise an error quoting the whole header, key included.
    if not all(33 <= ord(c) <= 126 for c in key):
        raise ConfigError(f"The API key from {source} contains spaces or non-ASCII characters; check it.")
    return key, source


class EndpointError(BackendError):
    """One request to an endpoint failed: after its retries, or at once when retrying cannot help."""

    def __init__(self, message: str, *, status: int | None = None, attempts: int = 1) -> None:
        super().__init__(message)
        self.status = status
        """The last HTTP status received, or None when no response came (connection error, timeout)."""
        self.attempts = attempts
        """How many times the request was sent."""


class _Retryable(Exception):
    """An attempt that failed in a way another attempt may fix."""

    def __init__(
        self,
        reason: str,
        *,
        status: int | None = None,
        retry_after: float | None = None,
        timed_out: bool = False,
    ) -> None:
        super().__init__(reason)
        self.reason = reason
        self.status = status
        self.retry_after = retry_after
        self.timed_out = timed_out


C = TypeVar("C", bound="Closing")


class Closing(ABC):
    """Holds connections, which a `with` block closes: `EndpointClient` and the clients that own one."""

    @abstractmethod
    def close(self) -> None: ...

    def __enter__(self: C) -> C:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class EndpointClient(Closing):
    """POSTs JSON to one OpenAI-compatible server, with retries, backoff and bounded concurrency.

    Args:
        config: The server, the model and the retry policy.
        json_types: What a response's top-level JSON value may be: an object for OpenAI-compatible APIs;
            TEI's native API answers with arrays.

    Raises:
        ConfigError: The API key named by `config` cannot be read.
    """

    def __init__(self, config: EndpointConfig, *, json_types: tuple[type, ...] = (dict,)) -> None:
        # httpx is imported here, not at module level, so that importing a backend stays cheap.
        import httpx

        self.config = config
        self.retries = 0
        """Attempts repeated so far (all requests together), so callers can report them."""
        self._httpx = httpx
        self._json_types = json_types
        self._key, self._key_source = _read_api_key(config)
        self._scrubber = Scrubber(self._key)
        self._headers = {"Content-Type": "application/json", "Accept": "application/json"}
        if self._key is not None:
            self._headers["Authorization"] = f"Bearer {self._key}"
        limits = httpx.Limits(
            max_connections=config.parallelism, max_keepalive_connections=config.parallelism
        )
        self._http = httpx.Client(
            timeout=httpx.Timeout(config.request_timeout),
            transport=_scrubbing_transport(self._scrubber, limits),
        )
        self._lock = threading.Lock()
        self._rng = random.Random()
        self._gate = CongestionGate(config.parallelism, slow_after=config.request_timeout / 2)

    def __repr__(self) -> str:
        return (
            f"EndpointClient(url={self.config.url!r}, model={self.config.model!r}, key={self._key_source!r})"
        )

    @property
    def in_flight_limit(self) -> int:
        """Requests this client lets be in flight now: `parallelism`, less while the server pushes back."""
        return self._gate.limit

    def close(self) -> None:
        """Close the pooled connections."""
        self._http.close()

    def post(
        self, path: str, body: Mapping[str, Any], parse: Callable[[dict[str, Any]], T] | None = None
    ) -> T:
        """POST one body to `path` and return the parsed response.

        Raises:
            EndpointError: The request failed after its retries.
        """
        [outcome] = self.map(path, [body], parse)
        if isinstance(outcome, EndpointError):
            raise outcome
        return outcome

    def get(self, path: str) -> Any:
        """GET `path` once (a probe: no retries) and return its JSON, scrubbed of the API key.

        Raises:
            EndpointError: no response, a status other than 2xx, or a body that is not JSON.
        """
        url = self.config.endpoint(path)
        try:
            with attempt_deadline(self.config.request_timeout):
                response = self._http.get(url, headers=self._headers)
        except self._httpx.HTTPError as e:
            raise EndpointError(f"GET {url}: {type(e).__name__}: {self._clip(str(e))}") from None
        status = response.status_code
        if not 200 <= status < 300:
            raise EndpointError(f"GET {url}: HTTP {status}: {self._excerpt(response)}", status=status)
        try:
            return self._scrubber.data(json.loads(response.content))
        except ValueError:
            raise EndpointError(
                f"GET {url}: the response is not valid JSON: {self._excerpt(response)}", status=status
            ) from None

    def map(
        self,
        path: str,
        bodies: Sequence[Mapping[str, Any]],
        parse: Callable[[dict[str, Any]], T] | None = None,
    ) -> list[T | EndpointError]:
        """POST each body to `path`, up to `parallelism` at a time.

        Args:
            path: The endpoint under the base URL, e.g. "/chat/completions".
            bodies: JSON objects, one per request.
            parse: Turns a response object into the value to return. It raises KeyError, IndexError,
                TypeError or ValueError when the response has an unexpected shape; that request then
                fails (without a retry: the server would answer the same way again). It gets the body
                already scrubbed of the API key. Any other exception also fails only its request.

        Returns:
            One outcome per body, in input order: the parsed response, or the `EndpointError` that
            request ended with.
        """
        url = self.config.endpoint(path)
        cancel = threading.Event()

        def one(body: Mapping[str, Any]) -> T | EndpointError:
            return self._post_one(url, body, parse, cancel)

        workers = min(self.config.parallelism, len(bodies))
        if workers <= 1:
            return [one(b) for b in bodies]
        return _in_threads(one, bodies, workers, cancel)

    def _post_one(
        self,
        url: str,
        body: Mapping[str, Any],
        parse: Callable[[dict[str, Any]], T] | None,
        cancel: threading.Event,
    ) -> T | EndpointError:
        content = json.dumps(body, ensure_ascii=False, allow_nan=False).encode("utf-8")
        attempts = self.config.max_retries + 1
        for attempt in range(1, attempts + 1):
            try:
                with self._gate, attempt_deadline(self.config.request_timeout):  # the gate waits on push-back
                    started = time.monotonic()
                    outcome = self._attempt(url, content, parse)
                    seconds = time.monotonic() - started
                self._gate.succeeded(seconds)
                return outcome
            except EndpointError as e:
                e.attempts = attempt
                _log_failure(e, cancel)
                return e
            except _Retryable as e:
                if e.status in _RETRY_AFTER_STATUSES:
                    self._gate.pushed_back()
                elif e.timed_out:
                    self._gate.slow()
                if attempt == attempts:
                    err = EndpointError(
                        f"POST {url} failed after {attempts} attempt(s): {e.reason}. "
                        "Check that the server is up and not overloaded, "
                        "or raise max_retries or request_timeout.",
                        status=e.status,
                        attempts=attempts,
                    )
                    _log_failure(err, cancel)
                    return err
                wait = e.retry_after if e.retry_after is not None else self._backoff(attempt)
                logger.info(
                    "POST %s: %s; retry %d of %d in %.2fs", url, e.reason, attempt, attempts - 1, wait
                )
                with self._lock:
                    self.retries += 1
                if cancel.wait(wait):
                    return EndpointError(
                        f"POST {url} was cancelled: {e.reason}", status=e.status, attempts=attempt
                    )
            except Exception as e:  # anything else (an odd body, a library's error) fails this request alone
                err = EndpointError(f"POST {url}: {type(e).__name__}: {self._clip(str(e))}", attempts=attempt)
                _log_failure(err, cancel)
                return err
        raise AssertionError("unreachable")

    def _attempt(
        self, url: str, content: bytes, parse: Callable[[dict[str, Any]], T] | None
    ) -> T | dict[str, Any]:
        httpx = self._httpx
        try:
            response = self._http.post(url, content=content, headers=self._headers)
        except httpx.TimeoutException as e:
            raise _Retryable(
                f"timed out ({type(e).__name__}: no whole answer in {self.config.request_timeout}s)",
                timed_out=True,
            ) from None
        except (httpx.NetworkError, httpx.RemoteProtocolError) as e:
            raise _Retryable(f"{type(e).__name__}: {self._clip(str(e))}") from None
        except httpx.HTTPError as e:  # e.g. an unsupported protocol: another attempt cannot help
            raise EndpointError(f"POST {url}: {type(e).__name__}: {self._clip(str(e))}") from None

        status = response.status_code
        if status in _RETRY_STATUSES or status >= 500:
            retry_after = None
            if status in _RETRY_AFTER_STATUSES:
                retry_after = retry_after_seconds(
                    response.headers.get("Retry-After"), self.config.backoff_max
                )
            raise _Retryable(
                f"HTTP {status}: {self._excerpt(response)}", status=status, retry_after=retry_after
            )
        if not 200 <= status < 300:
            raise EndpointError(
                f"POST {url}: HTTP {status}: {self._excerpt(response)}{_status_hint(status)}", status=status
            )
        try:
            data = json.loads(response.content)
        except ValueError:
            excerpt = self._excerpt(response)
            raise EndpointError(
                f"POST {url}: the response is not valid JSON: {excerpt}{_html_hint(response)}", status=status
            ) from None
        if not isinstance(data, self._json_types):
            raise EndpointError(
                f"POST {url}: expected a JSON {' or '.join(_JSON_NAMES[t] for t in self._json_types)}, "
                f"got {type(data).__name__}: {self._excerpt(response)}",
                status=status,
            )
        # Scrubbed before anything reads it: what a parser returns ends up in caches, results and logs.
        data = self._scrubber.data(data)
        if parse is None:
            return data
        try:
            return parse(data)
        except (KeyError, IndexError, TypeError, ValueError, AttributeError) as e:
            reason = str(e) if isinstance(e, ValueError) else f"{type(e).__name__}: {e}"
            raise EndpointError(
                f"POST {url}: unexpected response body ({self._clip(reason)}): {self._excerpt(response)}",
                status=status,
            ) from None

    def _backoff(self, attempt: int) -> float:
        """Seconds to wait after failed attempt `attempt` (from 1): exponential, half of it jittered."""
        ceiling = min(self.config.backoff_max, self.config.backoff_base * 2.0 ** min(attempt - 1, 60))
        # Jitter spreads out clients that failed together, so they do not all come back at the same moment.
        with self._lock:
            return ceiling / 2 + self._rng.uniform(0, ceiling / 2)

    def _excerpt(self, response: httpx.Response) -> str:
        """The start of a response body, for a message (see `clip_excerpt`)."""
        return self._clip(response.text) or "(empty body)"

    def _clip(self, text: str) -> str:
        return clip_excerpt(text, self._scrubber)


def _scrubbing_transport(scrubber: Scrubber, limits: httpx.Limits) -> httpx.BaseTransport:
    """httpx's transport, keeping to attempt deadlines, with the reason phrase (httpx logs it) scrubbed."""
    import httpx

    class ScrubbingTransport(httpx.HTTPTransport):
        def handle_request(self, request: httpx.Request) -> httpx.Response:
            response = super().handle_request(request)
            phrase = response.extensions.get("reason_phrase")
            if phrase:
                text = scrubber.text(phrase.decode("ascii", errors="ignore"))
                response.extensions["reason_phrase"] = text.encode("ascii", errors="ignore")
            return response

    return keep_to_deadlines(ScrubbingTransport(limits=limits))


def _log_failure(error: EndpointError, cancel: threading.Event) -> None:
    # After Ctrl-C nobody waits for this request any more: its failure (often the closed client) is noise.
    if not cancel.is_set():
        logger.warning("%s", error)


def _in_threads(
    work: Callable[[Mapping[str, Any]], T],
    items: Sequence[Mapping[str, Any]],
    workers: int,
    cancel: threading.Event,
) -> list[T]:
    """`work(item)` for every item on `workers` threads, results in input order.

    Daemon threads, not a ThreadPoolExecutor, whose threads the interpreter joins at exit: after Ctrl-C
    or SIGTERM the process would wait there for every request still in flight (up to request_timeout
    each) before it could end. Interrupted, this sets `cancel` and returns at once: no queued request
    or backoff wait goes on, and a request in flight ends on its own without holding up the exit.
    """
    results: list[Any] = [None] * len(items)
    pending = iter(range(len(items)))
    lock = threading.Lock()
    failures: list[BaseException] = []

    def worker() -> None:
        while not cancel.is_set():
            with lock:
                index = next(pending, None)
            if index is None:
                return
            try:
                results[index] = work(items[index])
            except BaseException as e:  # handed to the caller's thread, as a pool's future would
                failures.append(e)
                cancel.set()
                return

    threads = [
        threading.Thread(target=worker, name=f"ascend-eval-http-{k}", daemon=True) for k in range(workers)
    ]
    for thread in threads:
        thread.start()
    try:
        for thread in threads:
            thread.join()
    except BaseException:
        cancel.set()  # Ctrl-C or SIGTERM: drop the queued requests and the pending backoff waits
        raise
    if failures:
        raise failures[0]
    return results


def _status_hint(status: int) -> str:
    if status in (401, 403):
        return ". Check the API key (api_key_env / api_key_file) and that it may use this model."
    if status == 404:
        return ". Check the url (the server's base URL) and that the server offers this endpoint and model."
    return ""


def _html_hint(response: httpx.Response) -> str:
    kind = response.headers.get("Content-Type", "")
    if "html" in kind or response.text.lstrip()[:1] == "<":
        return (
            ". It is an HTML page: check that the url is the API's base URL (e.g. http://host:8000/v1), "
            "not a web page, a proxy's sign-in page or a load balancer's error page"
        )
    return ""


def discover_model(
    url: str, *, api_key_env: str | None = None, api_key_file: str | None = None, timeout: float = 10.0
) -> str:
    """The first model a server lists at `GET /v1/models`, for a URL given without a model name.

    vLLM, NIM and MindIE serve one model per server, so its name is the one to use.

    Raises:
        BackendError: the server cannot be reached or lists no model (the message says to pass the
            model name explicitly).
    """
    import httpx

    probe = EndpointConfig(url=url, model="?", api_key_env=api_key_env, api_key_file=api_key_file)
    key, _ = _read_api_key(probe)
    headers = {"Authorization": f"Bearer {key}"} if key else {}
    transport = _scrubbing_transport(Scrubber(key), httpx.Limits())
    try:
        with httpx.Client(timeout=timeout, transport=transport) as http, attempt_deadline(timeout):
            response = http.get(probe.endpoint("/models"), headers=headers)
        response.raise_for_status()
        models = [m["id"] for m in response.json()["data"]]
    except (httpx.HTTPError, ValueError, KeyError, TypeError) as e:
        status = isinstance(e, httpx.HTTPStatusError)
        reason = f"HTTP {e.response.status_code}" if status else type(e).__name__  # type: ignore[union-attr]
        raise BackendError(
            f"Could not list the models of {probe.url} ({reason}). Is the server running? Or pass the "
            "model name explicitly (--judge-model / --embedder-model, or an EndpointConfig)."
        ) from None
    if not models:
        raise BackendError(f"{probe.url}/models lists no model. Pass the model name explicitly.")
    # The name goes into model ids, results and logs: a server that lists the key there must not leak it.
    return Scrubber(key).text(str(models[0]))
