"""NeMo Evaluator's job bodies as our job spec, and our results in NeMo's shapes.

`nemo-microservices` (the NeMo client) creates a job with an evaluation `config` and a `target`
(`/v1/evaluation/jobs`, or `/v2/evaluation/jobs` with both under `spec`). A RAG config has one task of
type `ragas` whose `metrics` name RAGAS metrics and whose `params` hold the judge (`judge_llm`,
`judge_embeddings`: `api_endpoint` with `url`, `model_id`, `api_key`) and its limits (`judge_timeout`,
`judge_max_retries`, `judge_max_workers`); the target is a RAG pipeline (`rag.pipeline`: a `model` and a
`retriever.pipeline` with `query_embedding_model`, `index_embedding_model`, `reranker_model`, `top_k`),
cached outputs (`cached_outputs` or `rag.cached_outputs`: a file with answers and contexts), a `dataset`
or inline `rows`. `translate_v1` turns that into the seed-001 spec (`metric`, `model`,
`retriever_pipeline`, `dataset`, `metric_params`) that `ascend_eval.jobs` runs; a body already in that
shape is taken as it is.

Every problem is a `BodyError` with the path of the field in the request body, answered with 422.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from pydantic import ValidationError

from ascend_eval.data.cells import SURROGATE_FIX, lone_surrogate
from ascend_eval.errors import ConfigError
from ascend_eval.jobs.spec import JobSpec, did_you_mean

Loc = tuple[str | int, ...]

# Our job statuses as NeMo's v1 (`JobStatus`) and v2 (`PlatformJobStatus`) name them.
V1_STATUS = {
    "pending": "pending",
    "running": "running",
    "completed": "completed",
    "failed": "failed",
    "cancelled": "cancelled",
    "cancelling": "cancelling",
    "error": "failed",  # damaged records (v1's JobStatus has no "error")
}
V2_STATUS = {**V1_STATUS, "running": "active", "failed": "error", "error": "error"}

_TASK_PARAMS = (
    "judge_llm",
    "judge_embeddings",
    "judge_timeout",
    "judge_max_retries",
    "judge_max_workers",
    "corpus",
)
_JUDGE_LIMITS = {
    "request_timeout": "judge_timeout",
    "max_retries": "judge_max_retries",
    "parallelism": "judge_max_workers",
}
"""Our judge_llm's settings -> the task params NeMo names them by (a 422 names the one in the body)."""
_CONFIG_PARAMS = ("max_tokens", "temperature", "top_p", "extra")
_ENDPOINT = ("url", "model_id", "api_key", "format")
_RETRIEVAL = ("recall_", "ndcg", "map_", "mrr", "precision_", "bleu", "rouge", "em", "f1")


class BodyError(Exception):
    """One or more problems with a request body, each `(location, message)`; the location starts at
    "body", as FastAPI's own validation errors do."""

    def __init__(self, errors: list[tuple[Loc, str]]) -> None:
        super().__init__("; ".join(f"{'.'.join(map(str, loc))}: {msg}" for loc, msg in errors))
        self.errors = errors

    def detail(self) -> list[dict[str, Any]]:
        """FastAPI's 422 `detail` list."""
        return [{"loc": list(loc), "msg": msg, "type": "value_error"} for loc, msg in self.errors]


@dataclass
class Translation:
    """A request body as a job: our spec, and how to name its results in NeMo's shape."""

    spec: dict[str, Any]
    """The seed-001 job spec (secret names only)."""
    task: str
    """The NeMo task name results are listed under."""
    metrics: dict[str, str]
    """NeMo metric key -> our metric name (the result column)."""
    keys: dict[str, str] = field(default_factory=dict)
    """Secret name -> value: API keys that came in the body, to store before the job runs."""


def _shown(key: str) -> str:
    """A key as a location can show it: a lone surrogate as its escape (the reply is UTF-8 JSON)."""
    return key.encode("utf-8", "backslashreplace").decode("utf-8")


def check_text(body: Any, loc: Loc = ("body",), *, limit: int = 10) -> None:
    """Refuse a lone surrogate anywhere in a request body, keys included, before anything is written.

    JSON's "\\ud800" escape decodes to one: half of a surrogate pair, which no file, log or server can
    encode as UTF-8, so a job that holds one cannot even be recorded. Raises `BodyError` naming each
    field that holds one (the first `limit`, in the body's order).
    """
    errors: list[tuple[Loc, str]] = []
    stack: list[tuple[Loc, Any]] = [(loc, body)]
    while stack and len(errors) < limit:
        at, value = stack.pop()
        texts: list[tuple[Loc, str, str]] = []
        if isinstance(value, str):
            texts.append((at, value, "text"))
        elif isinstance(value, dict):
            children = [((*at, _shown(str(key))), key, item) for key, item in value.items()]
            texts += [(where, str(key), "key") for where, key, _ in children]
            stack.extend((where, item) for where, _, item in reversed(children))
        elif isinstance(value, list):
            stack.extend(reversed([((*at, i), item) for i, item in enumerate(value)]))
        for where, text, what in texts:
            position = lone_surrogate(text)
            if position is not None:
                field = ".".join(map(str, where[1:])) or "the body"
                found = f"the {what} holds a lone surrogate ({text[position]!a}) at character {position}"
                errors.append((where, f"{field}: {found}. {SURROGATE_FIX}"))
    if errors:
        raise BodyError(errors[:limit])


def _fail(loc: Loc, msg: str) -> BodyError:
    return BodyError([(loc, msg)])


def _object(value: Any, loc: Loc, what: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise _fail(loc, f"{what} must be an object, got {type(value).__name__}")
    return value


def _known(data: dict[str, Any], valid: tuple[str, ...], loc: Loc) -> None:
    for key in data:
        if key not in valid:
            raise _fail(
                (*loc, key),
                f"unknown field {key!r}.{did_you_mean(key, list(valid))} Valid fields: {list(valid)}",
            )


def _metric_name(name: Any, loc: Loc) -> str:
    from ascend_eval.metrics import canonical_name

    if not isinstance(name, str) or not name:
        raise _fail(loc, "a metric type (a RAGAS metric name, e.g. 'faithfulness') is required")
    try:
        return canonical_name(name)
    except ConfigError as e:
        if name.lower().startswith(_RETRIEVAL):
            raise _fail(
                loc,
                f"metric {name!r} is a retrieval or text-overlap metric, which ascend-eval "
                "does not compute; use the RAGAS metrics (faithfulness, context_recall, ...)",
            ) from None
        raise _fail(loc, str(e)) from None


class _Models:
    """NeMo model references (`{"api_endpoint": {...}}`) as our `{"url", "name", "api_key_secret"}`;
    keys given in the body become secrets named `<job id>.<role>`."""

    def __init__(self, job_id: str) -> None:
        self.job_id = job_id
        self.keys: dict[str, str] = {}

    def ref(self, value: Any, loc: Loc, role: str, *, formats: bool = False) -> dict[str, Any]:
        if isinstance(value, str):
            raise _fail(
                loc,
                "a model by name needs NeMo's model registry, which ascend-eval serve does "
                "not have; give the model as {'api_endpoint': {'url': ..., 'model_id': ...}}",
            )
        model = _object(value, loc, "a model")
        if "api_endpoint" not in model:
            raise _fail((*loc, "api_endpoint"), "required: {'url': ..., 'model_id': ...}")
        endpoint = _object(model["api_endpoint"], (*loc, "api_endpoint"), "api_endpoint")
        at = (*loc, "api_endpoint")
        _known(endpoint, _ENDPOINT, at)
        url = endpoint.get("url")
        if not isinstance(url, str) or not url:
            raise _fail((*at, "url"), "required: the endpoint URL, or local:PATH for a local model")
        out: dict[str, Any] = {"url": url}
        if endpoint.get("model_id") is not None:
            out["name"] = str(endpoint["model_id"])
        if endpoint.get("format") is not None:
            if endpoint["format"] not in ("nim", "openai"):
                raise _fail((*at, "format"), f"must be 'nim' or 'openai', got {endpoint['format']!r}")
            if formats:
                out["format"] = endpoint["format"]
        if endpoint.get("api_key"):
            name = f"{self.job_id}.{role}"
            self.keys[name] = str(endpoint["api_key"])
            out["api_key_secret"] = name
        return out


def files_dataset(url: Any, loc: Loc) -> str | dict[str, Any]:
    """A NeMo `files_url` as our dataset: a local file (`file://PATH` or a path), a file in a Hugging Face
    repository (`hf://datasets/ORG/NAME/PATH`), or a built-in name (`ascend-eval/rag-mini-en`)."""
    if not isinstance(url, str) or not url:
        raise _fail(loc, "files_url must be a non-empty string")
    if url.startswith("file://"):
        return url.removeprefix("file://")
    if url.startswith("hf://"):
        parts = url.removeprefix("hf://").split("/")
        kinds = {"datasets": "dataset", "models": "model", "spaces": "space"}
        if len(parts) < 4 or parts[0] not in kinds or not all(parts[1:]):
            raise _fail(loc, f"{url!r}: write hf://datasets/ORG/NAME/PATH/TO/FILE.json")
        storage = {"type": "huggingface", "repo_id": f"{parts[1]}/{parts[2]}", "repo_type": kinds[parts[0]]}
        return {"storage": storage, "path": "/".join(parts[3:])}
    if "://" in url:
        raise _fail(
            loc,
            f"{url!r}: only file://, hf:// and local paths or built-in dataset names resolve "
            "here (NeMo's data store is not part of ascend-eval serve)",
        )
    return url


def _dataset_of(value: Any, loc: Loc) -> str | dict[str, Any]:
    if isinstance(value, str):
        return files_dataset(value, loc)
    data = _object(value, loc, "a dataset")
    if "files_url" not in data:
        raise _fail((*loc, "files_url"), "required: where the data is (file://, hf://, a path or a name)")
    return files_dataset(data["files_url"], (*loc, "files_url"))


def _one_task(config: dict[str, Any], loc: Loc) -> tuple[str, dict[str, Any]]:
    if config.get("type") not in ("rag", "custom"):
        raise _fail((*loc, "type"), f"must be 'rag' (a RAG evaluation), got {config.get('type')!r}")
    tasks = config.get("tasks")
    if not isinstance(tasks, dict) or len(tasks) != 1:
        raise _fail(
            (*loc, "tasks"),
            "give exactly one task, e.g. {'rag': {'type': 'ragas', 'metrics': {...}, "
            "'params': {'judge_llm': ...}}}",
        )
    [(name, task)] = tasks.items()
    task = _object(task, (*loc, "tasks", name), "a task")
    if task.get("type") != "ragas":
        raise _fail(
            (*loc, "tasks", name, "type"),
            f"must be 'ragas', got {task.get('type')!r} (BEIR retrieval tasks are not supported)",
        )
    return str(name), task


def translate_v1(config: Any, target: Any, *, job_id: str, loc: Loc = ("body",)) -> Translation:
    """A NeMo `config` + `target` as a job. Raises `BodyError`."""
    if isinstance(config, str):
        raise _fail(
            (*loc, "config"),
            "a config by name needs NeMo's configs API, which ascend-eval serve "
            "does not have; pass the config object",
        )
    if isinstance(target, str):
        raise _fail(
            (*loc, "target"),
            "a target by name needs NeMo's targets API, which ascend-eval serve "
            "does not have; pass the target object",
        )
    config = _object(config, (*loc, "config"), "config")
    target = _object(target, (*loc, "target"), "target")
    task_name, task = _one_task(config, (*loc, "config"))
    task_loc: Loc = (*loc, "config", "tasks", task_name)
    models = _Models(job_id)

    metrics_in = task.get("metrics")
    if not isinstance(metrics_in, dict) or not metrics_in:
        raise _fail(
            (*task_loc, "metrics"), "give the metrics, e.g. {'faithfulness': {'type': 'faithfulness'}}"
        )
    metrics = {}
    for key, metric in metrics_in.items():
        metric = _object(metric, (*task_loc, "metrics", key), "a metric")
        metrics[str(key)] = _metric_name(metric.get("type"), (*task_loc, "metrics", key, "type"))

    params = _object(task.get("params") or {}, (*task_loc, "params"), "params")
    _known(params, _TASK_PARAMS, (*task_loc, "params"))
    metric_params: dict[str, Any] = {"dataset_format": "ragas"}
    if "judge_llm" in params:
        at = (*task_loc, "params", "judge_llm")
        judge = {"model": models.ref(params["judge_llm"], at, "judge-llm")}
        for ours, theirs in _JUDGE_LIMITS.items():
            if params.get(theirs) is not None:
                judge[ours] = params[theirs]
        metric_params["judge_llm"] = judge
    if "judge_embeddings" in params:
        at = (*task_loc, "params", "judge_embeddings")
        metric_params["judge_embeddings"] = {
            "model": models.ref(params["judge_embeddings"], at, "judge-embeddings", formats=True)
        }

    global_params = _object(config.get("params") or {}, (*loc, "config", "params"), "params")
    _known(global_params, _CONFIG_PARAMS, (*loc, "config", "params"))
    spec: dict[str, Any] = {"metrics": list(dict.fromkeys(metrics.values())), "metric_params": metric_params}
    dataset = _target(target, (*loc, "target"), spec, models, global_params)
    if dataset is None:
        if "dataset" not in task:
            raise _fail(
                (*task_loc, "dataset"),
                "required: the questions (and references) to evaluate, "
                "as {'files_url': ...}, unless the target brings its data",
            )
        dataset = _dataset_of(task["dataset"], (*task_loc, "dataset"))
    if params.get("corpus") is not None:
        if isinstance(dataset, str):
            dataset = {"path": dataset}
        dataset["corpus"] = params["corpus"]
    spec["dataset"] = dataset
    check_spec(spec, loc=(*loc, "config"), params_loc=(*task_loc, "params"))
    return Translation(spec=spec, task=task_name, metrics=metrics, keys=models.keys)


def _target(
    target: dict[str, Any], loc: Loc, spec: dict[str, Any], models: _Models, params: dict[str, Any]
) -> str | dict[str, Any] | None:
    """Fill the spec's `model` and `retriever_pipeline` from the target; the target's data, if any."""
    kind = target.get("type")
    if kind == "cached_outputs" or (kind == "rag" and "cached_outputs" in (target.get("rag") or {})):
        where = target.get("cached_outputs") if kind == "cached_outputs" else target["rag"]["cached_outputs"]
        at = (*loc, "cached_outputs") if kind == "cached_outputs" else (*loc, "rag", "cached_outputs")
        return _dataset_of(_object(where, at, "cached_outputs"), at)
    if kind == "rows":
        rows = target.get("rows")
        if not isinstance(rows, list) or not rows:
            raise _fail((*loc, "rows"), "give the rows: a list of samples, or RAGAS's columnar object")
        return {"rows": rows}
    if kind == "dataset":
        return _dataset_of(target.get("dataset"), (*loc, "dataset"))
    if kind != "rag":
        raise _fail(
            (*loc, "type"),
            f"must be 'rag', 'cached_outputs', 'dataset' or 'rows' for a RAG evaluation, got {kind!r}",
        )
    rag = _object(target.get("rag"), (*loc, "rag"), "rag")
    pipeline = _object(rag.get("pipeline"), (*loc, "rag", "pipeline"), "pipeline (or cached_outputs)")
    at: Loc = (*loc, "rag", "pipeline")
    model = models.ref(pipeline.get("model"), (*at, "model"), "model")
    answer = {k: params[k] for k in ("max_tokens", "temperature") if params.get(k) is not None}
    if answer:
        model["inference_params"] = answer
    spec["model"] = model
    retriever = _object(pipeline.get("retriever"), (*at, "retriever"), "retriever")
    if "cached_outputs" in retriever:
        return _dataset_of(retriever["cached_outputs"], (*at, "retriever", "cached_outputs"))
    inner = _object(retriever.get("pipeline"), (*at, "retriever", "pipeline"), "retriever pipeline")
    rat: Loc = (*at, "retriever", "pipeline")
    query = models.ref(
        inner.get("query_embedding_model"), (*rat, "query_embedding_model"), "embedding", formats=True
    )
    index = inner.get("index_embedding_model", inner.get("query_embedding_model"))
    if models.ref(index, (*rat, "index_embedding_model"), "embedding", formats=True) != query:
        raise _fail(
            (*rat, "index_embedding_model"),
            "must be the same model as query_embedding_model: "
            "the corpus and the questions are embedded alike",
        )
    retriever_spec: dict[str, Any] = {"embedding_model": query}
    if inner.get("reranker_model") is not None:
        retriever_spec["reranker_model"] = models.ref(
            inner["reranker_model"], (*rat, "reranker_model"), "reranker", formats=True
        )
    spec["retriever_pipeline"] = retriever_spec
    if inner.get("top_k") is not None:
        spec["metric_params"]["top_k"] = inner["top_k"]
    return _dataset_of(rag["dataset"], (*loc, "rag", "dataset")) if rag.get("dataset") else None


def _pydantic_loc(loc: tuple[int | str, ...]) -> Loc:
    # pydantic names the union member it tried ("str", "DatasetSpec", "function-after[...]").
    return tuple(p for p in loc if p not in ("str", "DatasetSpec") and "[" not in str(p))


def check_spec(spec: Any, *, loc: Loc, params_loc: Loc | None = None) -> None:
    """Validate a seed-shaped spec as `JobSpec` does, raising `BodyError` with body paths. `params_loc`
    is where `metric_params` came from in a translated NeMo body."""
    if not isinstance(spec, dict):
        raise _fail(loc, f"the job spec must be an object, got {type(spec).__name__}")
    try:
        JobSpec.model_validate(spec)
    except ValidationError as e:
        errors = []
        for item in e.errors():
            where = _pydantic_loc(item["loc"])
            msg = item["msg"].removeprefix("Value error, ")
            if item["type"] == "string_type" and where[:1] == ("dataset",) and len(e.errors()) > 1:
                continue  # `dataset` is a string or an object: the object's errors say more
            if params_loc is None:
                at = (*loc, *where)
            elif where[:3] in {("metric_params", "judge_llm", ours) for ours in _JUDGE_LIMITS}:
                theirs = _JUDGE_LIMITS[str(where[2])]
                at = (*params_loc, theirs)
                msg = msg.replace(f"{where[2]}=", f"{theirs}=", 1)
            elif where[:1] == ("metric_params",):
                at = (*params_loc, *where[1:])
            else:  # "judge_llm is required" and the like are about the task's params
                at = params_loc if msg.startswith("judge_") else loc
            errors.append((at, msg))
        raise BodyError(list(dict.fromkeys(errors)) or [(loc, str(e))]) from None
    except ConfigError as e:  # a metric name, with its "did you mean"
        raise _fail(loc, str(e)) from None


def translate_spec(spec: Any, *, loc: Loc) -> Translation:
    """A seed-001 spec as a job: results under the task "rag", keyed by the metric names as written."""
    check_spec(spec, loc=loc)
    parsed = JobSpec.model_validate(spec)
    from ascend_eval.metrics import canonical_name

    metrics = {m.name: m.name for m in parsed.metric_list() if not isinstance(m, str)}
    metrics |= {name: canonical_name(name) for name in parsed.metric_list() if isinstance(name, str)}
    metrics = {name: metrics[name] for name in parsed.metric_names()}  # in the spec's order
    return Translation(spec=spec, task="rag", metrics=metrics)


def is_spec(body: dict[str, Any]) -> bool:
    """A body in the seed-001 shape (rather than NeMo's config + target)."""
    return "config" not in body and "target" not in body and any(k in body for k in ("metric", "metrics"))


def finite(value: Any) -> Any:
    """JSON cannot carry NaN: a NaN (or infinity) becomes null, anywhere in `value`."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {k: finite(v) for k, v in value.items()}
    if isinstance(value, list):
        return [finite(v) for v in value]
    return value


def nemo_results(job_results: dict[str, Any], task: str, metrics: dict[str, str]) -> dict[str, Any]:
    """Our `{"aggregate_scores", "rows"}` as NeMo's `tasks` of an evaluation result:
    `{task: {"metrics": {key: {"scores": {name: {"value": mean, "stats": {...}}}}}}}`."""
    aggregates = {a["name"]: a for a in job_results.get("aggregate_scores", [])}
    out: dict[str, Any] = {}
    for key, name in metrics.items():
        agg = aggregates.get(name)
        if agg is None:
            continue
        values = [r[name] for r in job_results.get("rows", []) if isinstance(r.get(name), int | float)]
        values = [float(v) for v in values if math.isfinite(v)]
        stats = {k: agg.get(k) for k in ("count", "mean", "min", "max", "nan_count")}
        if values:
            total = sum(values)
            variance = sum((v - total / len(values)) ** 2 for v in values) / len(values)
            stats.update(
                sum=total,
                sum_squared=sum(v * v for v in values),
                variance=variance,
                stddev=math.sqrt(variance),
                stderr=math.sqrt(variance / len(values)),
            )
        out[key] = {"scores": {name: {"value": agg.get("mean"), "stats": stats}}}
    return finite({task: {"metrics": out}})
