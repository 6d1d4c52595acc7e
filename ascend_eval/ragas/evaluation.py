"""`evaluate()` with RAGAS 0.4.3's signature, on our engine.

Each RAGAS argument maps onto ours: metric objects onto our metrics (`ascend_eval.ragas.metrics`), `llm`
and `embeddings` (and a metric's own) onto our judge and embedder (`ascend_eval.ragas.models`),
`run_config` onto the endpoint client's timeout, retries and parallelism, `batch_size` onto the engine's
`chunk_size`, `show_progress` onto `progress`, and `raise_exceptions` decides whether a sample the judge
failed on is NaN (RAGAS's default) or an error. Metrics that carry different models run as separate
engine runs, merged into one result.
"""

from __future__ import annotations

import asyncio
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from ascend_eval.api import evaluate as ascend_evaluate
from ascend_eval.data import Dataset, load_dataset
from ascend_eval.errors import BACKEND_ERROR, BackendError, ConfigError
from ascend_eval.metrics import Metric, MetricResult
from ascend_eval.models.checks import CHUNK_SIZE
from ascend_eval.models.factory import resolve
from ascend_eval.models.spec import ModelSpec
from ascend_eval.ragas.metrics import MappedMetric, SampleFields, map_metrics
from ascend_eval.ragas.models import Secrets, embedder_arg, judge_arg, with_run_config
from ascend_eval.ragas.result import RagasResult
from ascend_eval.results import EvaluationResult

FAILURES = (BACKEND_ERROR, "parse_failure", "truncated")
"""NaN reasons that mean the judge or a backend failed (RAGAS raises these with raise_exceptions=True);
the others ("no_statements", ...) mean the score is undefined, which RAGAS returns as NaN too."""


@dataclass
class _Group:
    """Metrics that share one judge and one embedder: one engine run."""

    judge: Any = None
    embedder: Any = None
    metrics: list[Metric] = field(default_factory=list)

    def takes(self, judge: Any, embedder: Any) -> bool:
        return all(
            mine is None or theirs is None or _same(mine, theirs)
            for mine, theirs in ((self.judge, judge), (self.embedder, embedder))
        )


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, ModelSpec | str | Path) and isinstance(b, ModelSpec | str | Path):
        return a == b
    return a is b


def _refuse(name: str, value: Any, why: str) -> None:
    raise ConfigError(f"evaluate({name}={repr(value)[:80]}): {why}")


def _check_unsupported(callbacks: Any, return_executor: bool) -> None:
    if callbacks:
        _refuse(
            "callbacks",
            callbacks,
            "LangChain callbacks wrap each of RAGAS's per-sample LLM calls; ascend-eval batches requests "
            "itself and runs no callbacks. Drop callbacks=; pass on_round=FUNCTION for each engine round's "
            "stats (requests, cache hits, tokens, seconds).",
        )
    if return_executor:
        _refuse(
            "return_executor",
            True,
            "there is no RAGAS Executor to cancel; ascend-eval's runs resume from their request cache "
            "when interrupted and run again. Drop return_executor=.",
        )


def _check_batch_size(batch_size: Any) -> None:
    """RAGAS's batch_size becomes our chunk_size: None or a positive integer (not a bool) up to
    `CHUNK_SIZE`'s bound."""
    if batch_size is not None and (
        isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1
    ):
        _refuse("batch_size", batch_size, "pass a positive integer (requests per backend call) or None.")
    if batch_size is not None and batch_size > CHUNK_SIZE.most:
        _refuse(
            "batch_size",
            batch_size,
            f"over its bound of {CHUNK_SIZE.most:,} requests per backend call ({CHUNK_SIZE.why}). Lower "
            f"it to {CHUNK_SIZE.most:,} or less.",
        )


def _plan_groups(
    mapped: Sequence[MappedMetric], llm: Any, embeddings: Any, run_config: Any
) -> tuple[list[_Group], Secrets]:
    """One group per distinct (judge, embedder) among the metrics' models; each metric uses its own
    model first, then evaluate()'s (as RAGAS does).

    Raises:
        ConfigError: a model object that cannot be mapped, or a metric that needs a judge (embedder) when
            neither it nor evaluate() has one (RAGAS would call OpenAI's gpt-4o-mini).
    """
    secrets = Secrets()
    shared_judge = with_run_config(judge_arg(llm, secrets), run_config)
    shared_embedder = with_run_config(embedder_arg(embeddings, secrets), run_config)
    groups: list[_Group] = []
    placed: dict[str, tuple[MappedMetric, _Group]] = {}
    for m in mapped:
        roles = m.metric.roles
        judge = embedder = None
        if "judge" in roles:
            own = judge_arg(m.llm, secrets, what=f"{m.source}.llm")
            judge = with_run_config(own, run_config) if own is not None else shared_judge
            if judge is None:
                raise ConfigError(
                    f"{m.source} needs a judge LLM and evaluate() got llm=None (RAGAS would create "
                    "OpenAI's gpt-4o-mini behind your back). Pass llm=LangchainLLMWrapper(ChatOpenAI("
                    "base_url=URL, model=NAME)), llm=llm_factory(NAME, client=OpenAI(base_url=URL)) or "
                    "llm=PATH of a local checkpoint."
                )
        if "embedder" in roles:
            own = embedder_arg(m.embeddings, secrets, what=f"{m.source}.embeddings")
            embedder = with_run_config(own, run_config) if own is not None else shared_embedder
            if embedder is None:
                raise ConfigError(
                    f"{m.source} needs embeddings and evaluate() got embeddings=None (RAGAS would create "
                    "OpenAI embeddings behind your back). Pass embeddings=OpenAIEmbeddings(base_url=URL, "
                    "model=NAME), HuggingFaceEmbeddings(model_name=LOCAL_DIR) or embeddings=PATH."
                )
        group = next((g for g in groups if g.takes(judge, embedder)), None)
        if group is None:
            group = _Group()
            groups.append(group)
        group.judge = group.judge if judge is None else judge
        group.embedder = group.embedder if embedder is None else embedder
        first = placed.setdefault(m.metric.name, (m, group))
        if first[0] is not m and (first[1] is not group or first[0].metric.params != m.metric.params):
            # Both are our one metric: one engine run can hold it once, with one set of parameters.
            raise ConfigError(
                f"metrics= has {first[0].source} and {m.source}, which ascend-eval computes as one metric "
                f"({m.metric.name}) but here with different parameters or models ({first[0].metric!r} vs "
                f"{m.metric!r}). Evaluate them in two evaluate() calls."
            )
        if first[0] is m:
            group.metrics.append(m.metric)
    return groups, secrets


def _built(value: Any, role: str, secrets: Secrets, device: str | None) -> Any:
    """An endpoint whose key was written into the script, built now while its key is exposed; anything
    else as it is (our evaluate builds it)."""
    if value not in secrets:
        return value
    with secrets.exposed():
        return resolve(value, role, device=device)  # type: ignore[call-overload]


def _run_groups(
    data: Dataset, groups: Sequence[_Group], secrets: Secrets, device: str | None, **options: Any
) -> list[EvaluationResult]:
    """One engine run per group over `data`, with `options` (our evaluate()'s keywords) for each. The
    runtimes built here for keys written into the script are closed afterwards, whatever happens."""
    built: list[Any] = []
    runs = []
    try:
        for group in groups:
            judge = _built(group.judge, "judge", secrets, device)
            embedder = _built(group.embedder, "embedder", secrets, device)
            built += [b for b, given in ((judge, group.judge), (embedder, group.embedder)) if b is not given]
            runs.append(
                ascend_evaluate(data, group.metrics, judge=judge, embedder=embedder, device=device, **options)
            )
    finally:
        for runtime in built:
            close = getattr(runtime, "close", None)
            if close is not None:
                close()
    return runs


def _merge(runs: Sequence[EvaluationResult]) -> EvaluationResult:
    """One result from runs over the same samples with different metrics."""
    first = runs[0]
    if len(runs) == 1:
        return first
    results: dict[str, list[MetricResult]] = {}
    for run in runs:
        results.update(run.results)
    provenance = dict(first.provenance)
    provenance["runs"] = [run.provenance.get("models", {}) for run in runs]
    return EvaluationResult(
        samples=first.samples,
        results=results,
        languages=first.languages,
        rounds=[r for run in runs for r in run.rounds],
        provenance=provenance,
        wall_seconds=sum(run.wall_seconds for run in runs),
    )


def _raise_first_failure(result: EvaluationResult, columns: Mapping[str, str]) -> None:
    for column, ours in columns.items():
        for i, r in enumerate(result.results[ours]):
            if math.isnan(r.score) and (r.reason or "").startswith(FAILURES):
                raise BackendError(
                    f"{column}, sample {i} (id {result.samples[i].id!r}): {r.reason}. raise_exceptions=True "
                    "stops at the first failure (the requests answered so far are cached); pass "
                    "raise_exceptions=False to get NaN for it and keep the other scores."
                )


def evaluate(
    dataset: Any,
    metrics: Sequence[Any] | None = None,
    llm: Any = None,
    embeddings: Any = None,
    experiment_name: str | None = None,
    callbacks: Any = None,
    run_config: Any = None,
    token_usage_parser: Any = None,
    raise_exceptions: bool = False,
    column_map: Mapping[str, str] | None = None,
    show_progress: bool = True,
    batch_size: int | None = None,
    _run_id: Any = None,
    _pbar: Any = None,
    return_executor: bool = False,
    allow_nest_asyncio: bool = True,
    *,
    cross_encoder: Any = None,
    device: str | None = None,
    cache_dir: str | Path | Literal[False] | None = None,
    language: str = "auto",
    ragas_compat: bool = True,
    judge_mode: str = "classify",
    on_round: Any = None,
) -> RagasResult:
    """RAGAS 0.4.3's `evaluate`, computed by ascend-eval: batched, cached, on local models or servers.

    Args:
        dataset: a RAGAS `EvaluationDataset`, a Hugging Face `datasets.Dataset`, or anything
            `ascend_eval.evaluate` reads (dicts, rows, files, DataFrames).
        metrics: RAGAS metric objects, legacy (`ragas.metrics.Faithfulness()`) or collections
            (`ragas.metrics.collections.Faithfulness(llm=...)`), with their parameters; metric names and
            `ascend_eval.metrics` instances work too. None: RAGAS's default four. `AspectCritic` and
            `RubricsScore` become our `Criterion` and `Rubric`, on RAGAS's scales (0/1, the level).
        llm: `LangchainLLMWrapper(ChatOpenAI(base_url=...))`, a `ChatOpenAI`, `llm_factory(model,
            client=OpenAI(base_url=...))`, a LangChain `HuggingFacePipeline` of a local directory, or one
            of our judge arguments (a path, URL, `ModelSpec`, `Judge`). A metric's own `llm` comes first.
        embeddings: LangChain `OpenAIEmbeddings(base_url=...)` or `HuggingFaceEmbeddings(model_name=DIR)`
            (wrapped or not), RAGAS's OpenAI or Hugging Face embeddings, or our embedder arguments.
        experiment_name: recorded in the provenance.
        callbacks: not supported (an error when given): ascend-eval makes no per-sample LLM calls.
        run_config: RAGAS's `RunConfig`: `timeout`, `max_retries` and `max_workers` become the endpoint
            client's request_timeout, max_retries and parallelism.
        token_usage_parser: accepted and not needed: tokens are always counted (`total_tokens()`).
        raise_exceptions: False (RAGAS's default): a sample the judge failed on is NaN; True: raise
            `BackendError` naming the first failed sample and metric, after the run.
        column_map: RAGAS's column name -> your dataset's column, e.g. {"user_input": "question"}.
        show_progress: show a progress bar.
        batch_size: at most this many requests per backend call (None: 1024; at most 65,536).
        _run_id, _pbar, allow_nest_asyncio: accepted for RAGAS's signature; unused.
        return_executor: not supported (an error when True).
        cross_encoder, device, cache_dir, language, judge_mode, on_round: as in `ascend_eval.evaluate`.
        ragas_compat: RAGAS's exact arithmetic, quirks included (default True here, so scores match
            RAGAS's for the same judge decisions); False gives ascend-eval's sensible defaults.

    Returns:
        A `RagasResult`: RAGAS's result surface (`scores`, `to_pandas()`, `result[column]`, `repr`,
        `total_tokens()`), with our full result on `.evaluation`.

    Raises:
        ConfigError: an object that cannot be mapped (named, with what to use instead), before any model
            loads.
        DataError: the dataset lacks a column a metric needs.
        BackendError: raise_exceptions=True and the judge or a backend failed on a sample.
    """
    del token_usage_parser, _pbar, allow_nest_asyncio  # RAGAS's signature; nothing to do with them here
    _check_unsupported(callbacks, return_executor)
    _check_batch_size(batch_size)
    data = dataset if isinstance(dataset, Dataset) else load_dataset(dataset, column_map=column_map)
    mapped = map_metrics(metrics, SampleFields.of(data))  # a criterion reads the fields the samples have
    groups, secrets = _plan_groups(mapped, llm, embeddings, run_config)
    runs = _run_groups(
        data,
        groups,
        secrets,
        device,
        cross_encoder=cross_encoder,
        cache_dir=cache_dir,
        language=language,
        ragas_compat=ragas_compat,
        judge_mode=judge_mode,
        progress=show_progress,
        chunk_size=batch_size or 1024,
        on_round=on_round,
    )
    result = _merge(runs)
    if experiment_name is not None:
        result.provenance["experiment_name"] = experiment_name
    columns = {m.column: m.metric.name for m in mapped}
    if raise_exceptions:
        _raise_first_failure(result, columns)
    return RagasResult(
        result,
        columns,
        dataset=dataset,
        binary_columns=[m.column for m in mapped if m.binary],
        run_id=_run_id,
        scales={m.column: m.to_ragas for m in mapped if m.to_ragas is not None},
    )


async def aevaluate(
    dataset: Any, metrics: Sequence[Any] | None = None, *args: Any, **kwargs: Any
) -> RagasResult:
    """RAGAS's `aevaluate`: `evaluate` in a worker thread, so the caller's event loop keeps running."""
    return await asyncio.to_thread(evaluate, dataset, metrics, *args, **kwargs)
