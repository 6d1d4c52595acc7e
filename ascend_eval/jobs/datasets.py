"""A job's dataset: a built-in name, inline rows, a local file or a file in a Hugging Face repository,
and the documents to retrieve from, when given. A file that needs nothing done to it is streamed from
there by the evaluation (`job_source`); otherwise it is read once into a `Dataset` of `Sample`s, which
stay samples from here on: through truncation, the RAG pipeline and the evaluation.

The local files a spec names (a dataset path, a corpus path) must be regular files, and, where the
operator has set `ASCEND_EVAL_DATA_DIRS` (`ascend-eval serve` sets it from `--data-dir`), inside one of
those folders (symbolic links followed): a spec may come from a client of the service, who must not
read the server's other files through a job. `check_job_files` says so before anything is read."""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from ascend_eval.data import Dataset, load_dataset
from ascend_eval.data.corpus import check_corpus, check_corpus_size, read_corpus, require_regular_file
from ascend_eval.errors import DataError, MissingDependencyError
from ascend_eval.jobs.secrets import SecretStore, hub_endpoint
from ascend_eval.jobs.spec import DatasetSpec, HuggingFaceStorage
from ascend_eval.text.truncate import NIM_CHARACTER_LIMIT, truncate_by_chars

logger = logging.getLogger("ascend_eval.jobs")

_FILE_SUFFIXES = (".json", ".jsonl", ".csv", ".parquet")
DATA_DIRS_ENV = "ASCEND_EVAL_DATA_DIRS"
"""The folders (separated by `os.pathsep`) that jobs may read local files from; unset: any file."""


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
    check_job_files(dataset, data_dirs())
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


def data_dirs() -> tuple[Path, ...] | None:
    """The folders of `ASCEND_EVAL_DATA_DIRS` that jobs may read local files from; None when unset."""
    raw = os.environ.get(DATA_DIRS_ENV, "")
    dirs = tuple(Path(d).expanduser() for d in raw.split(os.pathsep) if d.strip())
    return dirs or None


def job_files(dataset: str | DatasetSpec) -> list[tuple[str, Path]]:
    """`(field, path)` of every local file the spec's dataset names: not built-in datasets, inline data
    or files in a Hugging Face repository."""
    from ascend_eval import examples

    if isinstance(dataset, str):
        return [] if examples.builtin_dataset(dataset) is not None else [("dataset", Path(dataset))]
    files = []
    if dataset.path is not None and dataset.storage is None:
        files.append(("dataset.path", Path(dataset.path)))
    if isinstance(dataset.corpus, str):
        files.append(("dataset.corpus", Path(dataset.corpus)))
    return files


def check_job_files(dataset: str | DatasetSpec, roots: Sequence[Path] | None) -> None:
    """Refuse local files of the spec's dataset that are outside `roots` (None: anywhere is allowed),
    not regular files, or (a corpus) over the corpus size limit, reading nothing from any of them. Files
    that do not exist are left to the reader, which says so.

    Raises:
        DataError: the first such file, with the field, the path and the fix.
    """
    for field, given in job_files(dataset):
        path = given.expanduser()
        real = Path(os.path.realpath(path))
        if roots is not None and not any(real.is_relative_to(os.path.realpath(r)) for r in roots):
            folders = ", ".join(str(r) for r in roots)
            named = ""
            if field == "dataset":  # a name that is no built-in is taken for a path
                from ascend_eval.examples import BUILTIN_DATASETS

                named = f" is not a built-in dataset ({', '.join(sorted(BUILTIN_DATASETS))}) and, as a path,"
            raise DataError(
                f"{field} {str(given)!r}{named} is outside the folders jobs may read data from ({folders}), "
                "so it is not read. Copy the file into one of them, or pass the data inline (`rows`, or the "
                f"corpus as a list); the operator allows a folder with `ascend-eval serve --data-dir DIR` "
                f"({DATA_DIRS_ENV})."
            )
        try:
            info = path.stat()
        except OSError:
            continue  # missing or unreadable: the reader names it
        where = f"{field} file {str(given)!r}"
        corpus = field == "dataset.corpus"
        wanted = "a JSON or JSONL file of documents" if corpus else "a JSON, JSONL, CSV or Parquet file"
        require_regular_file(info, where, f"Point {field} at {wanted}.")
        if corpus:
            check_corpus_size(info.st_size, where)


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
    token = None
    if storage.token_secret:
        where_to = "dataset.storage.token_secret (sent to the Hugging Face hub)"
        token = secrets.for_endpoint(storage.token_secret, hub_endpoint(), where_to).read()
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
