"""The Ray executor, driver side: `score_on_ray` reads the dataset as a Ray Dataset, scores it on a pool of
actors (`ascend_eval.executors.ray_actor.BatchScorer`: one engine per actor, models built once), and streams
the scored samples back in dataset order.

* The dataset is read as `open_samples` reads it, every format by `data/`'s own decisions
  (`ascend_eval.data.blocks`): `.jsonl` and `.csv` where they lie, by our own readers in a task on the
  cluster; `.parquet` by Ray's `read_parquet`, spread over the cluster, each block made rows by
  `arrow_rows`; a `.json` file, a DataFrame, a Hugging Face dataset and in-memory rows by the driver, from
  the stream's rows. The actors make samples with `make_sample` and the stream's roles. The driver has
  already checked the samples (`check_samples`).
* One actor per accelerator where the models run on one (`num_gpus=1`, or the custom resource `NPU` on
  Ascend), else one per node (at least two where the cluster has two CPUs): see `default_workers`.
* An endpoint judge (a URL) is shared by all actors: each gets its share of the spec's `parallelism`.
* A killed actor is restarted by Ray and its batch runs again; answered requests come from the node's
  request cache, so only those in flight at the kill are sent again.

Ray is imported only when `score_on_ray` runs; without it that is a `MissingDependencyError`.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import logging
import math
import os
import pickle
import time
import warnings
from collections.abc import Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from ascend_eval.config import EvaluationConfig
from ascend_eval.data.blocks import ARROW_FILES, ROW_FILES, file_blocks
from ascend_eval.data.cells import make_sample
from ascend_eval.data.stream import SampleStream, open_samples
from ascend_eval.engine.stats import StageStats
from ascend_eval.errors import AscendEvalError, ConfigError, DataError, MissingDependencyError
from ascend_eval.examples import builtin_dataset
from ascend_eval.executors.base import RunInput
from ascend_eval.executors.provenance import provenance
from ascend_eval.executors.ray_actor import (
    LANGUAGE,
    MODELS,
    NODE,
    PID,
    PROMPTS,
    RESTARTED,
    ROW,
    STAGES,
    WORKER,
    BatchScorer,
    details_column,
    merge_stage,
    reason_column,
    score_column,
)
from ascend_eval.metrics import Metric, MetricResult, resolve_metrics
from ascend_eval.models.device import DEVICE_ENV
from ascend_eval.models.http import EndpointConfig
from ascend_eval.models.judge.openai import JUDGE_PARALLELISM
from ascend_eval.models.platforms import ACCELERATORS, CPU, cluster_platform, platform_for
from ascend_eval.models.spec import ModelSpec
from ascend_eval.results import EvaluationResult
from ascend_eval.results.records import ScoredSample

__all__ = ["RAY_INSTALL", "RayRun", "default_workers", "run_on_ray", "score_on_ray"]

logger = logging.getLogger("ascend_eval.executors")

RAY_INSTALL = "pip install 'ascend-eval[ray]'"

ENDPOINT_PARALLELISM = next(f.default for f in dataclasses.fields(EndpointConfig) if f.name == "parallelism")
"""Requests in flight at an embedding or ranking server by default (a judge's is `JUDGE_PARALLELISM`)."""
READ_CPUS = 0
"""CPUs a read task reserves. Reading is light next to scoring, and the scoring actors reserve their CPUs
for the whole run: a read that waited for a free CPU would wait for ever on a node the actors fill."""


def import_ray() -> Any:
    """The `ray` module with Ray Data loaded, or a `MissingDependencyError` that says what to install."""
    try:
        import ray
        import ray.data
    except ImportError as exc:
        raise MissingDependencyError(
            f"The Ray executor needs Ray Data, which is not installed. Install it with {RAY_INSTALL}, or run "
            "without Ray (the local executor)."
        ) from exc
    return ray


class RayRun:
    """The scored samples of a Ray run, in dataset order, as they arrive (iterate once).

    After the iteration: `stages` (label -> `StageStats`, summed over every batch), `prompt_tags` (every
    prompt name@version used), `workers` (how many actors scored batches), `nodes` (their node ids) and
    `processes` (how many actor processes ran: more than `workers` when Ray restarted one).
    """

    def __init__(
        self,
        dataset: Any,
        *,
        roles: Mapping[str, str],
        count: int,
        metrics: Sequence[str],
        ray: Any,
        owns_ray: bool,
    ) -> None:
        self.count = count
        self.metrics = list(metrics)
        self.stages: dict[str, StageStats] = {}
        self.prompt_tags: set[str] = set()
        self.models: dict[str, str | None] = {}
        """role -> the model identity the actors built (part of every request's cache key)."""
        self.nodes: set[str] = set()
        self._dataset = dataset
        self._roles = dict(roles)
        self._ray = ray
        self._owns_ray = owns_ray
        self._workers: set[str] = set()
        self._processes: set[tuple[str, int]] = set()
        self._restarted: set[str] = set()
        self._started = False

    @property
    def workers(self) -> int:
        return len(self._workers)

    @property
    def processes(self) -> int:
        return len(self._processes)

    @property
    def restarted(self) -> int:
        return len(self._restarted)

    def __len__(self) -> int:
        return self.count

    def __iter__(self) -> Iterator[ScoredSample]:
        if self._started:
            raise RuntimeError("A RayRun is iterated once; call score_on_ray again to score again.")
        self._started = True
        stages: dict[str, dict[str, Any]] = {}
        position = 0
        try:
            for block in self._dataset.iter_batches(batch_format="pyarrow", batch_size=None):
                for record in block.to_pylist():
                    yield self._scored(position, record, stages)
                    position += 1
        except Exception as exc:
            cause = _our_error(exc)
            if cause is not None and cause is not exc:
                raise cause from None
            raise
        finally:
            self.stages = {label: StageStats(**fields) for label, fields in stages.items()}
            self.close()
        if position != self.count:
            raise DataError(
                f"Ray read {position} rows of a dataset of {self.count}: its reader and ours disagree on "
                "this file. Run it without Ray, or convert it to .jsonl or .parquet."
            )

    def close(self) -> None:
        """Disconnect from (or stop) the Ray that `score_on_ray` started; a Ray the caller started stays."""
        if self._owns_ray:
            self._owns_ray = False
            self._ray.shutdown()

    def _scored(
        self, position: int, record: Mapping[str, Any], stages: dict[str, dict[str, Any]]
    ) -> ScoredSample:
        if record[STAGES]:
            for label, fields in json.loads(record[STAGES]).items():
                stages[label] = merge_stage(stages.get(label, {}), fields)
            self.prompt_tags.update(json.loads(record[PROMPTS]))
            self.models.update(json.loads(record[MODELS]))
        self._workers.add(record[WORKER])
        self._processes.add((record[NODE], record[PID]))
        self.nodes.add(record[NODE])
        if record[RESTARTED]:
            self._restarted.add(record[WORKER])
        results = {
            name: MetricResult(
                record[score_column(name)],
                json.loads(record[reason_column(name)]),
                json.loads(record[details_column(name)]),
            )
            for name in self.metrics
        }
        sample = make_sample(position, pickle.loads(record[ROW]), self._roles)
        return ScoredSample(position, sample, record[LANGUAGE], results)


def _our_error(exc: BaseException) -> AscendEvalError | None:
    """The library error an actor raised, as raised there: the innermost one in what Ray wrapped it in (a
    `RayTaskError` that is also of the error's class, with the error itself as its `cause`)."""
    found: AscendEvalError | None = None
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        if isinstance(current, AscendEvalError):
            found = current
        seen.add(id(current))
        current = getattr(current, "cause", None) or current.__cause__
    return found


def score_on_ray(
    source: Any,
    *,
    roles: Mapping[str, str] | None = None,
    count: int,
    metrics: Sequence[str | Metric],
    config: EvaluationConfig,
    address: str | None = None,
    num_workers: int | None = None,
    batch_size: int = 64,
    num_cpus_per_worker: float = 1.0,
    progress: bool = False,
) -> RayRun:
    """Score `source` on a Ray cluster; the scored samples stream back in dataset order.

    Args:
        source: the dataset, already checked by the caller: a `SampleStream` (`open_samples`, as
            evaluate() opened it), or what evaluate() accepts (a path to a .jsonl/.csv/.parquet/.json file
            on storage every node reads, a pandas DataFrame, a Hugging Face `datasets.Dataset`, a list of
            rows, a columnar dict or a built-in dataset name), opened here. Either is read as
            `open_samples` reads it (`ascend_eval.data.blocks`).
        roles: source column -> role (`ascend_eval.data.columns.column_roles`); default: the stream's
            (`SampleStream.row_roles`), `column_map` applied where the stream was opened with one.
        count: the number of rows (checked against what Ray read).
        metrics: the metric names or objects (a user's criteria and rubrics travel to the actors as objects).
        config: the run's settings; the actors get `config.for_actors()`. Its models must be picklable
            (names, paths, URLs, `ModelSpec`s, or picklable runtimes); its cache_dir is a folder on each
            node's own disk, relative to the driver's working directory.
        address: None: the Ray this process is connected to, else the one RAY_ADDRESS names, else a new
            local one (as many CPUs as this machine, at least one per worker); "auto", "host:port" or
            "ray://host:port": that cluster.
        num_workers: actors (default `default_workers`).
        batch_size: rows per actor call (each call is one evaluate() of that many samples).
        num_cpus_per_worker: CPUs each actor reserves where the models run on no accelerator.
        progress: show Ray Data's progress bars.

    Raises:
        MissingDependencyError: Ray is not installed.
        ConfigError: the cluster cannot hold `num_workers` actors, or a model argument is invalid.
    """
    ray = import_ray()
    if batch_size < 1:
        raise ConfigError(f"batch_size={batch_size}; it must be at least 1.")
    if num_workers is not None and num_workers < 1:
        raise ConfigError(f"num_workers={num_workers}; it must be at least 1.")
    chosen = resolve_metrics(list(metrics))
    needed = sorted(set().union(*(m.roles for m in chosen)))
    models = config.model_specs(needed)
    requested = config.device or os.environ.get(DEVICE_ENV) or "auto"
    if isinstance(source, str) and not Path(source).exists() and (builtin := builtin_dataset(source)):
        source = builtin
    stream = source if isinstance(source, SampleStream) else open_samples(source)
    roles = stream.row_roles if roles is None else roles
    owns_ray = connect(ray, address, num_cpus=max(os.cpu_count() or 1, num_workers or 1))
    try:
        placement = placement_of(models, requested, ray.cluster_resources())
        workers = num_workers or default_workers(ray, placement)
        remote = actor_resources(ray, placement, workers, num_cpus_per_worker)
        kind, dataset = read_source(ray, stream, count=count, size=batch_size)
        constructor = {
            "kind": kind,
            "roles": dict(roles),
            "metrics": list(metrics),
            "models": {role: for_actor(spec, placement, workers) for role, spec in models.items()},
            "config": config.for_actors(),
        }
        with warnings.catch_warnings():
            # Ray Data 2.60 already defaults both to -1 for actors and deprecates passing remote arguments
            # this way; they are stated so that no change of default can take away the restarts.
            warnings.filterwarnings("ignore", message=".*ray_remote_args.*deprecated", category=Warning)
            scored = dataset.map_batches(
                BatchScorer,
                fn_constructor_kwargs=constructor,
                batch_size=batch_size,
                batch_format="pandas" if kind == "pandas" else "pyarrow",
                zero_copy_batch=True,
                compute=ray.data.ActorPoolStrategy(size=workers),
                max_restarts=-1,
                max_task_retries=-1,
                **remote,
            )
        context = scored.context
        context.execution_options.preserve_order = True
        context.enable_progress_bars = progress
        context.raise_original_map_exception = True  # our error, not "UDF failed to process a data block"
    except BaseException:
        if owns_ray:
            ray.shutdown()
        raise
    logger.info("Ray executor: %d %s actor(s), %d rows, batches of %d", workers, placement, count, batch_size)
    names = [m.name for m in chosen]
    return RayRun(scored, roles=roles, count=count, metrics=names, ray=ray, owns_ray=owns_ray)


def connect(ray: Any, address: str | None, *, num_cpus: int) -> bool:
    """Connect to (or start) Ray; True when this call did, so that the run disconnects at its end."""
    if ray.is_initialized():
        return False  # the caller's Ray: used as it is, and left running
    if address is None and not os.environ.get("RAY_ADDRESS"):
        ray.init(address="local", num_cpus=num_cpus, include_dashboard=False)
    else:
        ray.init(address=address)
    return True


def placement_of(models: Mapping[str, Any], requested: str, resources: Mapping[str, float]) -> str:
    """Where the actors' models run: "cuda", "npu" or "cpu". A local model follows its spec's device, else
    `requested`; "auto" is the cluster's accelerator (an NPU before a GPU), if it has one. Endpoints and
    runtimes given as objects run on the CPU as far as the actors are concerned."""
    kinds: set[str] = set()
    for spec in models.values():
        if not isinstance(spec, ModelSpec) or spec.is_endpoint:
            continue
        device = (spec.device or requested).split(":")[0]
        if device == "auto":
            device = cluster_platform(resources).name
        kinds.add(device)
    for platform in ACCELERATORS:
        if platform.name in kinds:
            if len(kinds - {CPU.name}) > 1:
                raise ConfigError(f"The models ask for NPUs and GPUs ({sorted(kinds)}); choose one device.")
            return platform.name
    return CPU.name


def default_workers(ray: Any, placement: str) -> int:
    """One actor per accelerator where the models run on one. Otherwise one per node that has CPUs, and
    at least min(2, CPUs): an actor is one engine process, which already keeps an endpoint's whole
    parallelism in flight, so more than one per node mostly splits that parallelism thinner, while one per
    node uses every node's request cache; two on a single machine let its Python side (prompts, parsing,
    cache) run on two cores."""
    resources = ray.cluster_resources()
    platform = platform_for(placement)
    if platform.accelerator:
        return max(1, int(resources.get(platform.ray_resource, 0)))
    nodes = sum(1 for n in ray.nodes() if n.get("Alive") and n.get("Resources", {}).get("CPU", 0) > 0)
    return max(1, nodes, min(2, int(resources.get("CPU", 1))))


def actor_resources(ray: Any, placement: str, workers: int, num_cpus: float) -> dict[str, Any]:
    """Each actor's reservation; a cluster that cannot hold `workers` of them is a ConfigError now rather
    than a run that waits for ever."""
    resources = ray.cluster_resources()
    platform = platform_for(placement)
    name = platform.ray_resource
    need, remote = platform.ray_actor(num_cpus)
    have = resources.get(name, 0)
    if workers * need > have + 1e-9:
        raise ConfigError(
            f"num_workers={workers} actors need {workers * need:g} {name} and the Ray cluster has {have:g}. "
            f"Pass num_workers={max(1, int(have // need)) if need else 1} or add nodes."
        )
    return remote


def for_actor(spec: Any, placement: str, workers: int) -> Any:
    """What an actor builds for a role: an endpoint with its share of the parallelism; a local model on
    the actor's own device (Ray narrows the visible accelerators to the one it reserved, so an index
    given for the whole machine would point elsewhere); a runtime object as it is."""
    if not isinstance(spec, ModelSpec):
        return spec
    if spec.is_endpoint:
        base = spec.parallelism or (JUDGE_PARALLELISM if spec.role == "judge" else ENDPOINT_PARALLELISM)
        return spec.replace(parallelism=max(1, base // workers))
    device = spec.device.split(":")[0] if spec.device else None
    if device in (None, "auto") or (device != "cpu" and device == placement):
        return spec.replace(device=placement)
    return spec


def read_source(ray: Any, stream: SampleStream, *, count: int, size: int) -> tuple[str, Any]:
    """The stream's rows as a Ray Dataset of blocks of about `size` rows, and how its batches hold them
    (`KINDS`). Every format is read as `open_samples` reads it (`ascend_eval.data.blocks`): a `.jsonl` or
    `.csv` file by our own reader, in a task on the cluster; a `.parquet` file by Ray's Parquet reader,
    spread over the cluster, its blocks made rows in the actors; anything else by the driver."""
    blocks = max(1, math.ceil(count / size))
    if stream.kind in ROW_FILES + ARROW_FILES:
        path = Path(os.fspath(stream.origin)).expanduser().absolute()
        if stream.kind in ARROW_FILES:
            return "arrow", read_parquet(ray, path, blocks)
        return "pickled", read_file(ray, path, stream.kind, size)
    return "pickled", pickled_rows(ray, stream.rows(), blocks)


def read_file(ray: Any, path: Path, kind: str, size: int) -> Any:
    """A `.jsonl` or `.csv` file read by our own reader in one task on the cluster (where the file lies on
    storage every node reads, as Ray's own readers read one file), as a Ray Dataset of one block per `size`
    rows, so that the actors share the blocks."""
    task = ray.remote(num_cpus=READ_CPUS, num_returns="streaming")(file_tables)
    return ray.data.from_arrow_refs(list(task.remote(str(path), kind, size)))


def file_tables(path: str, kind: str, size: int) -> Iterator[Any]:
    """The rows of the file at `path`, read by our reader for `kind` (`ascend_eval.data.blocks`), `size`
    at a time, each block a table of pickled rows (`pickled_table`)."""
    for rows in file_blocks(path, kind, size):
        yield pickled_table(rows)


def read_parquet(ray: Any, path: Path, blocks: int) -> Any:
    """A Parquet file through Ray's first reader: the newer one (Ray 2.5x, `use_datasource_v2`) lists files
    in a task that reserves a whole CPU, which never starts on a cluster whose CPUs the actors hold."""
    with data_context(ray, use_datasource_v2=False):
        return ray.data.read_parquet(str(path), num_cpus=READ_CPUS, override_num_blocks=blocks)


@contextlib.contextmanager
def data_context(ray: Any, **settings: Any) -> Iterator[None]:
    """Ray Data settings for the datasets created inside (each copies the current context when created),
    restored afterwards; a setting this Ray does not have is skipped."""
    context = ray.data.DataContext.get_current()
    saved = {name: getattr(context, name) for name in settings if hasattr(context, name)}
    for name in saved:
        setattr(context, name, settings[name])
    try:
        yield
    finally:
        for name, value in saved.items():
            setattr(context, name, value)


def pickled_rows(ray: Any, rows: Iterable[Mapping[str, Any]], blocks: int) -> Any:
    """Rows read by the driver as a Ray Dataset of one pickled row per record: Ray would otherwise turn each
    row into Arrow values and change cells (nested objects with different keys, mixed types, tuples)."""
    items = [{ROW: pickle.dumps(dict(row), protocol=pickle.HIGHEST_PROTOCOL)} for row in rows]
    return ray.data.from_items(items, override_num_blocks=blocks)


def pickled_table(rows: Iterable[Mapping[str, Any]]) -> Any:
    """Rows as an Arrow table of one pickled row per record (a `ROW` column), as `pickled_rows` holds them."""
    import pyarrow as pa

    blobs = [pickle.dumps(dict(row), protocol=pickle.HIGHEST_PROTOCOL) for row in rows]
    return pa.table({ROW: pa.array(blobs, type=pa.binary())})


def run_on_ray(run: RunInput) -> EvaluationResult:
    """The Ray executor: the actors score batches with their own engines and models, and the scored samples
    stream back here, in dataset order, into the same sink as a local run's."""
    stream, config = run.stream, run.config
    try:
        scoring = score_on_ray(
            stream,
            count=run.count,
            metrics=run.metrics,
            config=config,
            address=config.ray_address,
            num_workers=config.num_workers,
        )
        for scored in scoring:
            run.sink.add(scored)
        record = provenance(
            run, dict(scoring.models), set(scoring.prompt_tags), devices={}, cache=config.cache_dir
        )
        record["ray"] = {
            "workers": scoring.workers,
            "nodes": len(scoring.nodes),
            "restarted": scoring.restarted,
        }
        return run.sink.finish(
            rounds=[],
            stages=dict(scoring.stages),
            provenance=record,
            wall_seconds=time.perf_counter() - run.started,
        )
    finally:
        run.sink.close()
