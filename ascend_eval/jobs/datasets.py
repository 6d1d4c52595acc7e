"""A job's dataset: a built-in name, inline rows, a local file or a file in a Hugging Face repository,
and the documents to retrieve from, when given. A file that needs nothing done to it is streamed from
there by the evaluation (`job_source`); otherwise it is read once into a `Dataset` of `Sample`s, which
stay samples from here on: through truncation, the RAG pipeline and the evaluation."""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from ascend_eval.data import Dataset, load_dataset
from ascend_eval.data.corpus import check_corpus, read_corpus
from ascend_eval.jobs.secrets import SecretStore
from ascend_eval.jobs.spec import DatasetSpec, HuggingFaceStorage
from ascend_eval.models.errors import DataError, MissingDependencyError
from ascend_eval.text.truncate import NIM_CHARACTER_LIMIT, truncate_by_chars

logger = logging.getLogger("ascend_eval.jobs")

_FILE_SUFFIXES = (".json", ".jsonl", ".csv", ".parquet")


@dataclass
class JobData:
    dataset: Dataset
    """The samples, as `load_dataset` read them."""
    corpus: list[dict[str, str]] | None
    """Checked documents `{"id", "title", "text"}` (`check_corpus`), or None."""
    source: str
    """Where the data came from, for log lines: the name, path or "inline rows"."""

    def rows(self) -> list[dict[str, Any]]:
        """The samples as row dicts with our column names (`Sample.to_row`), e.g. for inline rows."""
        return [sample.to_row() for sample in self.dataset]


@dataclass(frozen=True)
class JobSource:
    """Where a job's samples come from, before anything is read from it."""

    source: Path | list[dict[str, Any]]
    """A data file (a path, a built-in dataset's file, a file fetched from a Hugging Face repository), or
    inline rows with our column names."""
    corpus: list[dict[str, str]] | None
    """Checked documents `{"id", "title", "text"}` (`check_corpus`), or None."""
    where: str
    """Where the data came from, for log lines: the name, path or "inline rows"."""


def job_source(dataset: str | DatasetSpec, secrets: SecretStore) -> JobSource:
    """The spec's dataset resolved to a file or rows (a Hugging Face file is fetched), not yet read.

    Raises:
        DataError: an unknown built-in name, a missing file, or a repository file that cannot be fetched
            (the message names the fix).
    """
    if isinstance(dataset, str):
        source, corpus = _named(dataset)
        return JobSource(source, corpus, str(dataset))
    if dataset.rows is not None:
        return JobSource(inline_rows(dataset.rows), _corpus(dataset), "inline rows")
    assert dataset.path is not None
    if dataset.storage is not None:
        path = fetch_hf_file(dataset.storage, dataset.path, secrets)
        where = f"{dataset.storage.repo_id}/{dataset.path} (Hugging Face {dataset.storage.repo_type})"
    else:
        path, where = Path(dataset.path).expanduser(), dataset.path
    return JobSource(path, _corpus(dataset), where)


def load_job_data(dataset: str | DatasetSpec, secrets: SecretStore) -> JobData:
    """Read the spec's dataset.

    Raises:
        DataError: an unknown built-in name, a missing file, a repository file that cannot be fetched, or
            malformed rows (the message names the fix).
    """
    found = job_source(dataset, secrets)
    return JobData(load_dataset(found.source), found.corpus, found.where)


def _named(name: str) -> tuple[Path, list[dict[str, str]] | None]:
    from ascend_eval import examples

    builtin = examples.builtin_dataset(name)
    if builtin is not None:
        # builtin_corpus arrives with the built-in RAG corpora; older datasets have none.
        corpus_of = getattr(examples, "builtin_corpus", None)
        documents = corpus_of(name) if corpus_of is not None else None
        return builtin, None if documents is None else check_corpus(documents, f"corpus of {name!r}")
    path = Path(name).expanduser()
    if path.is_file():
        return path, None
    if path.suffix.lower() in _FILE_SUFFIXES:
        raise DataError(
            f"Dataset file {name!r} does not exist (resolved to {path.absolute()}). Check the path."
        )
    raise DataError(
        f"Dataset {name!r} is not a built-in dataset of ascend-eval and not a local file. NeMo's built-in "
        "datasets (such as 'ragas/amnesty_qa') are not shipped. Built-in here: "
        f"{sorted(examples.BUILTIN_DATASETS)}. Or pass your data: "
        '"dataset": "/path/to/data.json" (JSON, JSONL, CSV or Parquet), or inline "dataset": {"rows": '
        '[{"question": [...], "contexts": [[...]], "answer": [...], "ground_truth": [...]}]}.'
    )


def inline_rows(items: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Rows from NeMo's inline `rows`: each item is a columnar object (every value a list, one per
    sample; NeMo's form) or a single sample.

    >>> inline_rows([{"question": ["a", "b"], "contexts": [["x"], ["y"]]}, {"question": "c"}])
    [{'question': 'a', 'contexts': ['x']}, {'question': 'b', 'contexts': ['y']}, {'question': 'c'}]
    """
    rows: list[dict[str, Any]] = []
    for index, item in enumerate(items):
        question = item.get("question", item.get("user_input"))
        if not isinstance(question, list):
            rows.append(dict(item))
            continue
        lengths = {str(k): len(v) if isinstance(v, list) else None for k, v in item.items()}
        if any(n is None for n in lengths.values()) or len(set(lengths.values())) != 1:
            raise DataError(
                f"dataset.rows[{index}] is columnar (its question is a list), so every field must be a list "
                f"of the same length, one value per sample; got lengths {lengths}."
            )
        rows += [{k: v[i] for k, v in item.items()} for i in range(len(question))]
    return rows


def _corpus(dataset: DatasetSpec) -> list[dict[str, str]] | None:
    if dataset.corpus is None:
        return None
    if isinstance(dataset.corpus, list):
        return check_corpus(dataset.corpus, "dataset.corpus")
    return read_corpus(Path(dataset.corpus).expanduser())


def truncate_contexts(dataset: Dataset, mode: Literal["start", "end"]) -> tuple[Dataset, int]:
    """Every given context cut to `NIM_CHARACTER_LIMIT` characters (NeMo's `truncate_long_documents`:
    "start" cuts the start, keeping the end; "end" cuts the end); returns the dataset and how many were
    cut."""
    cut = 0
    samples = []
    for sample in dataset:
        contexts = sample.retrieved_contexts
        if contexts:
            shortened = tuple(truncate_by_chars(c, NIM_CHARACTER_LIMIT, side=mode) for c in contexts)
            changed = sum(a != b for a, b in zip(contexts, shortened, strict=True))
            if changed:
                cut += changed
                sample = sample.model_copy(update={"retrieved_contexts": shortened})
        samples.append(sample)
    return (dataset.with_samples(samples) if cut else dataset), cut


def _hub_offline() -> bool:
    import huggingface_hub.constants

    # The hub library reads the variable once at import; a job honours the value it is started with.
    flag = os.environ.get("HF_HUB_OFFLINE", "").strip().upper()
    return flag in ("1", "ON", "YES", "TRUE") or bool(huggingface_hub.constants.HF_HUB_OFFLINE)


def fetch_hf_file(storage: HuggingFaceStorage, path: str, secrets: SecretStore) -> Path:
    """The local copy of `path` in a Hugging Face repository: from the hub cache, downloading it first
    unless HF_HUB_OFFLINE is set.

    Raises:
        MissingDependencyError: huggingface_hub is not installed.
        DataError: the file cannot be fetched (offline and not cached, no such repository or file, no
            access); the message says what to do instead.
    """
    try:
        from huggingface_hub import hf_hub_download
    except ImportError as e:
        raise MissingDependencyError(
            "A Hugging Face dataset (dataset.storage.type 'huggingface') needs huggingface_hub: "
            "pip install huggingface_hub. Or pass a local file path or inline rows."
        ) from e
    token = secrets.resolve(storage.token_secret).read() if storage.token_secret else None
    offline = _hub_offline()
    where = f"'{path}' from the Hugging Face {storage.repo_type} repository '{storage.repo_id}'"
    try:
        local = hf_hub_download(
            repo_id=storage.repo_id,
            filename=path,
            repo_type=storage.repo_type,
            token=token,
            local_files_only=offline,
            cache_dir=os.environ.get("HF_HUB_CACHE") or None,
        )
    except Exception as e:  # the hub raises many types (HTTP, offline, not found, gated); all end here
        reason = f"{type(e).__name__}: {e}"
        if token:
            reason = reason.replace(token, "***")
        hint = (
            "HF_HUB_OFFLINE is set and the file is not in the local hub cache: download it where the hub "
            "is reachable (huggingface-cli download) and copy the cache, or"
            if offline
            else "Check repo_id, repo_type, path and token_secret, or"
        )
        raise DataError(
            f"Cannot fetch {where}. {hint} pass the file as a local path "
            f'("dataset": "/path/to/{Path(path).name}") or the data as inline rows. ({reason[:300]})'
        ) from None
    logger.info("dataset %s -> %s", where, local)
    return Path(local)
