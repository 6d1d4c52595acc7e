"""Validation shared by the runtimes: their config dataclasses (called from `__post_init__`), the
arguments of `embed` and `score`, and files that hold secrets, so every caller refuses bad input with the
same message."""

from __future__ import annotations

import os
import stat
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ascend_eval.models.errors import ConfigError, DataError

EMBED_KINDS = ("query", "document")


def positive_int(name: str, value: Any, *, optional: bool = False) -> None:
    """Raise ConfigError unless `value` is an int >= 1 (or None when `optional`); bools are refused.

    >>> positive_int("batch_size", 8)
    >>> positive_int("max_length", None, optional=True)
    >>> positive_int("batch_size", 0)
    Traceback (most recent call last):
    ...
    ascend_eval.base.errors.ConfigError: batch_size must be an integer >= 1, got 0.
    """
    if optional and value is None:
        return
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        suffix = " or None" if optional else ""
        raise ConfigError(f"{name} must be an integer >= 1{suffix}, got {value!r}.")


@dataclass(frozen=True)
class Bound:
    """The largest value a count setting may take, and why: a value over it is refused when the setting is
    checked, before anything starts (docs/reliability.md, "Bounds")."""

    most: int
    why: str

    def check(self, name: str, value: Any, *, optional: bool = False) -> None:
        """Raise ConfigError unless `value` is an integer from 1 to `most` (or None when `optional`).

        >>> PARALLELISM.check("parallelism", 64)
        >>> PARALLELISM.check("parallelism", 10**9)
        Traceback (most recent call last):
        ...
        ascend_eval.base.errors.ConfigError: parallelism=1000000000 is over its bound of 1,024 (each \
request in flight is a thread and an open connection). Lower it to 1,024 or less.
        """
        positive_int(name, value, optional=optional)
        if value is not None and value > self.most:
            raise ConfigError(
                f"{name}={value} is over its bound of {self.most:,} ({self.why}). Lower it to {self.most:,} "
                "or less."
            )


PARALLELISM = Bound(1024, "each request in flight is a thread and an open connection")
"""Requests in flight at one endpoint (`parallelism`, a job's `judge_max_workers`, RAGAS's
`RunConfig.max_workers`): 8x a judge's default of 128 and 4x the batch vLLM fills by default (256
sequences), so no server's batch goes short. Each request is a thread and a connection (a file descriptor:
near the top of the range, raise a host's `ulimit -n` of 1,024)."""
BATCH_SIZE = Bound(4096, "each batch is held in memory at once")
"""Rows per forward pass of a local model, inputs per request to an embedding or ranking server (a TEI
server's announced `max_client_batch_size` is capped to it): 64x the default of 64."""
CHUNK_SIZE = Bound(65536, "each backend call's requests are held, and answered, together")
"""Requests per backend call (`chunk_size`, RAGAS's `batch_size`): 64x the default of 1,024. A larger call
saves nothing (local models batch by their own `batch_size`, a judge server gets one request per call) and
loses more answers to a kill before they are committed."""
WORKERS = Bound(1024, "each is a process with its own models")
"""Ray actors (`num_workers`, a job's `executor.num_workers`)."""
SERVED_JOBS = Bound(64, "each running job is a process with its own models")
"""Jobs `ascend-eval serve` runs at once (`--concurrency`)."""
TENSOR_PARALLEL = Bound(64, "each is a device and an engine process")
"""Devices one vLLM model is split over (`tensor_parallel_size`): 4x the largest single machine's 16."""


def model_path(value: Any) -> Path:
    """The model argument as a Path; raise ConfigError unless it is a non-empty str or Path."""
    if not isinstance(value, (str, Path)) or not str(value):
        raise ConfigError(f"model must be a local directory path, got {value!r}.")
    return Path(value)


def check_model_dir(model: Path, *, what: str) -> Path:
    """Resolve `model` and check it looks like a local transformers / sentence-transformers directory."""
    path = Path(model).expanduser()
    if not path.is_dir():
        raise ConfigError(
            f"{what} model={str(model)!r} is not a local directory (there is no model hub here). Pass the "
            "directory of a saved model, e.g. ascend_eval.models.weights.shipped.minilm_path()."
        )
    if not (path / "config.json").is_file() and not (path / "modules.json").is_file():
        raise ConfigError(
            f"{what} model={str(model)!r} has neither config.json nor modules.json, so it is not a saved "
            "transformers or sentence-transformers model. Point it at the directory that holds them."
        )
    return path.resolve()


def device_spec(value: Any) -> None:
    """Raise ConfigError unless `value` is None or a string (the device seam parses it)."""
    if value is not None and not isinstance(value, str):
        raise ConfigError(f"device must be a string such as 'cpu' or 'npu:0', or None; got {value!r}.")


def embed_texts(texts: Sequence[str], kind: str) -> list[str]:
    """The texts of an `embed` call as a list; ConfigError for a bad kind, DataError for bad texts.

    >>> embed_texts(("a", "b"), "query")
    ['a', 'b']
    >>> embed_texts(["a", 1], "query")
    Traceback (most recent call last):
    ...
    ascend_eval.base.errors.DataError: Text 1 to embed is int (1), not str.
    """
    if kind not in EMBED_KINDS:
        raise ConfigError(f"kind={kind!r}; valid: 'query', 'document'.")
    if isinstance(texts, str):
        raise DataError(
            f"embed() takes a sequence of texts, got one string ({texts[:40]!r}). Wrap it: [text]."
        )
    items = list(texts)
    for i, text in enumerate(items):
        if not isinstance(text, str):
            raise DataError(f"Text {i} to embed is {type(text).__name__} ({text!r:.60}), not str.")
    return items


def score_pairs(pairs: Sequence[tuple[str, str]]) -> list[tuple[str, str]]:
    """The (query, passage) pairs of a `score` call as a list; DataError unless each is two strings.

    >>> score_pairs([("q", "p")])
    [('q', 'p')]
    """
    items = list(pairs)
    for i, pair in enumerate(items):
        if not isinstance(pair, (tuple, list)) or len(pair) != 2 or not all(isinstance(t, str) for t in pair):
            raise DataError(f"Reranker pair {i} must be (query: str, passage: str), got {pair!r:.80}.")
    return items


def private_file(path: str | Path, what: str) -> Path:
    """`path` (with `~` expanded), after checking that it is a regular file only its owner can access.

    The one check for every file that holds a secret: an endpoint's `api_key_file` and the job secrets
    store's files (`ascend_eval.jobs.secrets`) both call it.

    Args:
        path: the file.
        what: how messages name it, e.g. "api_key_file" or "Secret file".

    Raises:
        ConfigError: the file cannot be read, is not a regular file, or group or others may access it
            (on POSIX); the message gives the `chmod` that fixes it.
    """
    p = Path(path).expanduser()
    try:
        st = p.stat()
    except OSError as e:
        raise ConfigError(f"{what} {str(path)!r} cannot be read ({e.strerror}). Check the path.") from None
    if not stat.S_ISREG(st.st_mode):
        raise ConfigError(f"{what} {str(path)!r} is not a regular file.")
    if os.name == "posix" and st.st_mode & 0o077:
        raise ConfigError(
            f"{what} {str(path)!r} is accessible by group or others (mode {stat.S_IMODE(st.st_mode):04o}); "
            f"a secret must be private to its owner. Run: chmod 600 {path}"
        )
    return p
