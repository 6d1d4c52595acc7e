"""The job spec: NVIDIA NeMo Evaluator's RAG metric job, field for field, plus a few extensions.

A spec written for NeMo (`metric`, `model`, `retriever_pipeline`, `dataset`, `metric_params`) loads
unchanged. Unknown keys are errors with a "did you mean", so a typo never silently falls back to a
default. Everything that can be checked without a model or a network is checked here; endpoints and
secrets are resolved only when the job runs.

Our extensions, all optional: `metrics` (a list, next to or instead of `metric`); `retriever_pipeline`
`chunk_size`, `chunk_overlap`, `chunk_unit`, `rerank_candidates`; a dataset object's `corpus` (documents
to retrieve from); `format` on the judge embeddings model; `model.inference_params` (`max_tokens`,
`temperature` of the RAG model's answers). `model` and `retriever_pipeline` may be left
out when the dataset already has contexts and answers.
"""

from __future__ import annotations

import difflib
import json
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from ascend_eval.choices import ExecutorName
from ascend_eval.data.cells import SURROGATE_FIX, lone_surrogate
from ascend_eval.errors import ConfigError, DataError
from ascend_eval.models.checks import PARALLELISM, WORKERS
from ascend_eval.pipeline.config import ChunkUnit
from ascend_eval.yaml_files import load_yaml

if TYPE_CHECKING:
    from ascend_eval.metrics import Metric

SECRET_NAME_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$"


def did_you_mean(name: str, options: list[str]) -> str:
    """A " Did you mean ...?" hint for a misspelt name, or "".

    >>> did_you_mean("paralelism", ["parallelism", "max_retries"])
    " Did you mean 'parallelism'?"
    """
    close = difflib.get_close_matches(name, options, n=2, cutoff=0.6)
    return f" Did you mean {' or '.join(repr(c) for c in close)}?" if close else ""


class _Strict(BaseModel):
    """Rejects unknown keys with the valid ones and the closest match (pydantic's own message lists
    neither)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    @model_validator(mode="before")
    @classmethod
    def _known_keys(cls, data: Any) -> Any:
        if isinstance(data, Mapping):
            valid = list(cls.model_fields)
            unknown = [str(k) for k in data if k not in cls.model_fields]
            if unknown:
                key = unknown[0]
                raise ValueError(f"unknown field {key!r}.{did_you_mean(key, valid)} Valid fields: {valid}")
        return data


class ModelRef(_Strict):
    """A model: an HTTP endpoint (OpenAI-compatible, or NIM `/v1/ranking`) or a local model.

    `url` is an `http(s)://` URL (a trailing `/chat/completions`, `/embeddings` or `/ranking` is
    accepted and dropped), or `local:` followed by a path or a shipped model name (`local:default` is the
    role's default model).
    """

    url: str = Field(min_length=1)
    name: str | None = None
    """The model name sent to an endpoint (discovered from `GET /v1/models` when left out)."""
    api_key_secret: str | None = Field(default=None, pattern=SECRET_NAME_PATTERN)
    """The NAME of a secret holding the endpoint's API key (`ascend-eval secrets set NAME`), never the key."""


class AnswerParams(_Strict):
    max_tokens: int | None = Field(default=None, ge=1)
    temperature: float | None = Field(default=None, ge=0)


class RagModel(ModelRef):
    inference_params: AnswerParams | None = None
    """Our extension: how the RAG model decodes answers (default: greedy, at most 256 tokens)."""


class RetrieverModel(ModelRef):
    format: Literal["nim", "openai"] | None = None
    """"nim" sends NIM's `input_type` (query/passage) with embedding requests; "openai" does not."""


class RetrieverPipeline(_Strict):
    embedding_model: RetrieverModel
    reranker_model: RetrieverModel | None = None
    chunk_size: int | None = Field(default=None, ge=1)
    chunk_overlap: int | None = Field(default=None, ge=0)
    chunk_unit: ChunkUnit | None = None
    rerank_candidates: int | None = Field(default=None, ge=1)


class HuggingFaceStorage(_Strict):
    type: Literal["huggingface"]
    repo_id: str = Field(min_length=1)
    repo_type: Literal["dataset", "model", "space"] = "dataset"
    token_secret: str | None = Field(default=None, pattern=SECRET_NAME_PATTERN)
    """The NAME of a secret holding a Hugging Face token, for private repositories."""


class DatasetSpec(_Strict):
    """A dataset given as an object: inline `rows`, a local file `path`, or a file `path` in a Hugging Face
    repository (`storage`)."""

    rows: list[dict[str, Any]] | None = None
    """Inline data: columnar objects in the RAGAS format (NeMo's form) and/or one object per sample."""
    path: str | None = None
    storage: HuggingFaceStorage | None = None
    corpus: list[dict[str, Any]] | str | None = None
    """Documents `{"id", "text", "title"?}` to retrieve from when contexts are missing, or a path to a
    JSON/JSONL file of them."""

    @model_validator(mode="after")
    def _one_source(self) -> DatasetSpec:
        if (self.rows is None) == (self.path is None):
            raise ValueError("give exactly one of 'rows' (inline data) and 'path' (a file)")
        if self.storage is not None and self.path is None:
            raise ValueError("'storage' needs 'path': the file inside the repository, e.g. 'dataset.json'")
        return self


class InferenceParams(_Strict):
    max_tokens: int | None = Field(default=None, ge=1)
    temperature: float | None = Field(default=None, ge=0)
    top_p: float | None = Field(default=None, gt=0, le=1)


class JudgeLLM(_Strict):
    model: ModelRef
    request_timeout: float | None = Field(default=None, gt=0, allow_inf_nan=False)
    max_retries: int | None = Field(default=None, ge=0)
    parallelism: int | None = Field(default=None, ge=1)
    """Judge requests in flight at once (NeMo's `judge_max_workers`); at most 1,024
    (`ascend_eval.models.checks.PARALLELISM`)."""
    inference_params: InferenceParams | None = None

    @field_validator("parallelism")
    @classmethod
    def _bounded(cls, value: int | None) -> int | None:
        PARALLELISM.check("parallelism", value, optional=True)
        return value


class JudgeEmbeddings(_Strict):
    model: RetrieverModel


class MetricParams(_Strict):
    dataset_format: Literal["ragas"] = "ragas"
    top_k: int = Field(default=10, ge=1)
    truncate_long_documents: Literal["start", "end"] | None = None
    """Cut documents and contexts longer than 65,535 characters (`text.truncate.NIM_CHARACTER_LIMIT`, the
    NIMs' input limit): "start" drops the start (keeps the last 65,535 characters), "end" drops the end
    (keeps the first 65,535), as NeMo defines it."""
    judge_llm: JudgeLLM | None = None
    judge_embeddings: JudgeEmbeddings | None = None


class ExecutorSpec(_Strict):
    """Where the job's scores are computed: this process ("local") or a Ray cluster ("ray",
    docs/ray.md), with the same results either way. Not a NeMo field; NeMo's specs leave it out."""

    type: ExecutorName = "local"
    address: str | None = None
    """The Ray cluster ("auto", "host:port", "ray://host:port"); default: a running local Ray, else a
    new one in the job's process."""
    num_workers: int | None = Field(default=None, ge=1)
    """Ray actors, each with its own engine and models (default: one per GPU/NPU, else 2); at most 1,024
    (`ascend_eval.models.checks.WORKERS`)."""

    @field_validator("num_workers")
    @classmethod
    def _bounded(cls, value: int | None) -> int | None:
        WORKERS.check("num_workers", value, optional=True)
        return value


class JobSpec(_Strict):
    """One metric job. See docs/jobs.md for every field."""

    metric: str | None = None
    metrics: list[str | dict[str, Any]] | None = None
    """Built-in names and the user's own criteria and rubrics (`metrics/files.py`)."""
    model: RagModel | None = None
    """The RAG model: generates answers for samples that have none."""
    retriever_pipeline: RetrieverPipeline | None = None
    dataset: str | DatasetSpec
    metric_params: MetricParams = MetricParams()
    executor: ExecutorSpec = ExecutorSpec()

    @field_validator("metric")
    @classmethod
    def _known_metric(cls, name: str | None) -> str | None:
        if name is not None:
            from ascend_eval.metrics import canonical_name

            canonical_name(name)  # ConfigError (a ValueError) with "did you mean"
        return name

    @field_validator("metrics")
    @classmethod
    def _known_metrics(cls, entries: list[str | dict[str, Any]] | None) -> list[str | dict[str, Any]] | None:
        from ascend_eval.metrics.files import metric_entries

        for name in entries or []:
            if isinstance(name, str):
                cls._known_metric(name)
        metric_entries(entries or [], "metrics")  # a criterion or rubric that cannot work: ConfigError
        return entries

    @model_validator(mode="after")
    def _metrics_and_judges(self) -> JobSpec:
        from ascend_eval.metrics import resolve_metrics

        entries = self.metric_list()
        if not entries:
            raise ValueError("no metric: set 'metric' (e.g. 'system/rag-faithfulness') or 'metrics' (a list)")
        roles = {m.name: m.roles for m in resolve_metrics(entries)}
        judged = [name for name, needs in roles.items() if "judge" in needs]
        if judged and self.metric_params.judge_llm is None:
            raise ValueError(
                f"judge_llm is required: metric {judged[0]!r} is scored by a judge LLM. Add `judge_llm` "
                "(with its `model`) to `metric_params`."
            )
        embedded = [name for name, needs in roles.items() if "embedder" in needs]
        if embedded and self.metric_params.judge_embeddings is None:
            raise ValueError(
                f"judge_embeddings is required: metric {embedded[0]!r} compares embeddings. Add "
                "`judge_embeddings` (with its `model`) to `metric_params`."
            )
        return self

    def models(self) -> list[tuple[str, ModelRef]]:
        """`(field, model)` for every model the spec names, each with its field's path."""
        refs: list[tuple[str, ModelRef | None]] = [("model", self.model)]
        if self.retriever_pipeline is not None:
            refs += [
                ("retriever_pipeline.embedding_model", self.retriever_pipeline.embedding_model),
                ("retriever_pipeline.reranker_model", self.retriever_pipeline.reranker_model),
            ]
        judge, embeddings = self.metric_params.judge_llm, self.metric_params.judge_embeddings
        refs += [
            ("metric_params.judge_llm.model", judge.model if judge else None),
            ("metric_params.judge_embeddings.model", embeddings.model if embeddings else None),
        ]
        return [(field, ref) for field, ref in refs if ref is not None]

    def metric_names(self) -> list[str]:
        """`metric` then `metrics`, as written (NeMo names or ours; a criterion or rubric by its name),
        without repeats."""
        names = [m if isinstance(m, str) else m.name for m in self.metric_list()]
        return list(dict.fromkeys(names))

    def metric_list(self) -> list[str | Metric]:
        """`metric` then `metrics`: names as written, the user's criteria and rubrics as metric objects."""
        from ascend_eval.metrics.files import metric_entries

        return metric_entries(([self.metric] if self.metric else []) + list(self.metrics or []), "metrics")

    def to_json(self) -> str:
        """The spec as stored in a job directory: secret names only, never values (a spec holds no values)."""
        return json.dumps(self.model_dump(mode="json", exclude_none=True), ensure_ascii=False, indent=2)


def _location(loc: tuple[int | str, ...]) -> str:
    # pydantic names the union member it tried ("str", "function-after[...]"); users know only the path.
    return ".".join(str(p) for p in loc if p not in ("str", "DatasetSpec") and "[" not in str(p))


def _object_member(loc: tuple[int | str, ...]) -> str | None:
    """The path of a `str | object` field when `loc` is inside its object member, else None."""
    for i, part in enumerate(loc):
        if part == "DatasetSpec" or "[" in str(part):
            return _location(loc[:i])
    return None


def spec_error(error: ValidationError, source: str) -> ConfigError:
    """One readable ConfigError for all problems of a spec, each with its field path."""
    items = error.errors()
    # `dataset` is a string or an object: when the object was tried, "should be a valid string" is noise.
    tried_object = {_object_member(i["loc"]) for i in items} - {None}
    lines = []
    for item in items:
        where = _location(item["loc"])
        if item["type"] == "string_type" and "str" in item["loc"] and where in tried_object:
            continue
        message = item["msg"].removeprefix("Value error, ")
        lines.append(f"  {where}: {message}" if where else f"  {message}")
    return ConfigError(f"Invalid job spec ({source}):\n" + "\n".join(dict.fromkeys(lines)))


def _absolute_paths(data: dict[str, Any], base: Path) -> dict[str, Any]:
    """Make relative local paths in a spec file absolute against the file's folder, where the file is.

    A job runs in another folder (and often another process) than the one the spec was written in.
    """

    def fix(value: str) -> str:
        candidate = base / value
        return str(candidate) if not Path(value).is_absolute() and candidate.exists() else value

    out = dict(data)
    dataset = out.get("dataset")
    if isinstance(dataset, str):
        out["dataset"] = fix(dataset)
    elif isinstance(dataset, dict):
        dataset = dict(dataset)
        if isinstance(dataset.get("path"), str) and "storage" not in dataset:
            dataset["path"] = fix(dataset["path"])
        if isinstance(dataset.get("corpus"), str):
            dataset["corpus"] = fix(dataset["corpus"])
        out["dataset"] = dataset
    return out


def load_spec(source: str | Path | Mapping[str, Any] | JobSpec) -> JobSpec:
    """A validated `JobSpec` from a JSON or YAML file, a dict, or a `JobSpec`.

    Raises:
        ConfigError: the file cannot be read, or the spec is invalid (every problem, with its field path).
    """
    if isinstance(source, JobSpec):
        return source
    if isinstance(source, Mapping):
        data, where = dict(source), "dict"
    else:
        path = Path(source).expanduser()
        where = str(path)
        try:
            text = path.read_text(encoding="utf-8")
        except OSError as e:
            raise ConfigError(f"Cannot read job spec {where!r}: {e.strerror}. Check the path.") from None
        data = _parse_text(text, path)
        data = _absolute_paths(data, path.parent)
    _check_text(data, where)
    try:
        return JobSpec.model_validate(data)
    except ValidationError as e:
        raise spec_error(e, where) from None


def _check_text(data: Mapping[str, Any], where: str) -> None:
    """Refuse a lone surrogate anywhere in the spec (inline rows included), naming where it is: the
    spec is stored as UTF-8 in the job directory, which such text cannot be written to."""
    stack: list[tuple[str, Any]] = [("", data)]
    while stack:
        path, value = stack.pop()
        texts: list[tuple[str, str]] = []
        if isinstance(value, str):
            texts.append((path, value))
        elif isinstance(value, Mapping):
            for key, item in value.items():
                child = f"{path}.{key}" if path else str(key)
                texts.append((child, str(key)))
                stack.append((child, item))
        elif isinstance(value, list | tuple):
            stack.extend((f"{path}[{i}]", item) for i, item in enumerate(value))
        for at, text in texts:
            position = lone_surrogate(text)
            if position is not None:
                error = DataError if at.startswith("dataset") else ConfigError
                raise error(
                    f"Invalid job spec ({where}): {at!a} holds a lone surrogate ({text[position]!a}) at "
                    f"character {position}. {SURROGATE_FIX}"
                )


def _parse_text(text: str, path: Path) -> dict[str, Any]:
    if path.suffix.lower() == ".json":
        try:
            data = json.loads(text)
        except json.JSONDecodeError as e:
            raise ConfigError(
                f"Job spec {str(path)!r} is not valid JSON: {e.msg} (line {e.lineno}, column {e.colno})."
            ) from None
        except (RecursionError, ValueError) as e:  # nested thousands deep; an integer of 4300+ digits
            raise ConfigError(
                f"Job spec {str(path)!r} cannot be read as JSON: {type(e).__name__}: {e}"
            ) from None
    else:
        data = load_yaml(text, f"Job spec {str(path)!r}")
    if not isinstance(data, dict):
        raise ConfigError(
            f"Job spec {str(path)!r} must hold an object (a mapping), got {type(data).__name__}."
        )
    return data
