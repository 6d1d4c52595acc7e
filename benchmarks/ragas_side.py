"""RAGAS 0.4.3's side of the benchmark, set up as its documentation tells a user to.

* Metrics: the twelve legacy metric classes (`ragas.metrics._*`) that `ragas.evaluate()` runs, with their
  default settings (answer_relevancy strictness 3, noise_sensitivity mode "relevant").
* Server: `LangchainLLMWrapper(ChatOpenAI(model=NAME, base_url=URL/v1, api_key="EMPTY", temperature=0,
  max_tokens=N))`, RAGAS's wrapper for a LangChain chat model pointed at a local OpenAI-compatible server.
  RAGAS then sets its own per-call temperatures (0.01 for one generation, 0.1 in the NV metrics, 0.3 for
  answer_relevancy's three), which match ours (greedy, and 0.3 for the three generated questions).
  `bypass_temperature=True` would force 0 everywhere, and vLLM refuses `n=3` at temperature 0, so
  answer_relevancy would be NaN.
* In-process: `LangchainLLMWrapper(HuggingFacePipeline(pipeline=transformers.pipeline("text-generation",
  model=DIR, max_new_tokens=N, do_sample=False, return_full_text=False)))`, LangChain's local transformers
  wrapper (`langchain_community.llms.HuggingFacePipeline`). `return_full_text=False` is needed: with the
  pipeline's default the prompt, which contains RAGAS's JSON examples, is returned in front of the answer
  and RAGAS parses the examples instead of the answer.
* Embeddings: `LangchainEmbeddingsWrapper(HuggingFaceEmbeddings(model_name=DIR))` (LangChain's
  sentence-transformers embeddings in RAGAS's wrapper).
* `ragas.evaluate(dataset, metrics, llm=..., embeddings=..., run_config=RunConfig(timeout=T))`: default
  concurrency (max_workers=16), retries and batching; only the per-job timeout is raised (default 180 s),
  because on a slow CPU a 9-call noise_sensitivity job takes longer and would be reported as NaN.
  No cache (RAGAS's cache is off unless a `cache=` backend is passed).

Requests and tokens: for the server rows, from the server's /metrics when it has them, otherwise from the
`usage` of every HTTP response (an httpx response hook); in-process, by counting around the model's
`generate` (prompt tokens by attention mask, generated tokens up to the first end-of-sequence token).
"""

from __future__ import annotations

import json
import logging
import math
import os
import re
import threading
import time
from collections import Counter
from typing import Any

os.environ.setdefault("RAGAS_DO_NOT_TRACK", "true")

JOB_ERROR = re.compile(r"Exception raised in Job\[(\d+)\]: (\w+)\((.*)\)", re.DOTALL)


def ragas_metrics(names: list[str], llm: Any, embeddings: Any) -> list[Any]:
    """RAGAS's legacy metric objects for our metric names, in the same order."""
    from ragas.metrics._answer_correctness import AnswerCorrectness
    from ragas.metrics._answer_relevance import AnswerRelevancy
    from ragas.metrics._answer_similarity import AnswerSimilarity
    from ragas.metrics._context_entities_recall import ContextEntityRecall
    from ragas.metrics._context_precision import ContextPrecision, ContextUtilization
    from ragas.metrics._context_recall import ContextRecall
    from ragas.metrics._faithfulness import Faithfulness
    from ragas.metrics._noise_sensitivity import NoiseSensitivity
    from ragas.metrics._nv_metrics import AnswerAccuracy, ContextRelevance, ResponseGroundedness

    build = {
        "answer_correctness": lambda: AnswerCorrectness(llm=llm, embeddings=embeddings),
        "answer_relevancy": lambda: AnswerRelevancy(llm=llm, embeddings=embeddings),
        "answer_similarity": lambda: AnswerSimilarity(embeddings=embeddings),
        "context_entity_recall": lambda: ContextEntityRecall(llm=llm),
        "context_precision": lambda: ContextPrecision(llm=llm),
        "context_recall": lambda: ContextRecall(llm=llm),
        "context_utilization": lambda: ContextUtilization(llm=llm),
        "faithfulness": lambda: Faithfulness(llm=llm),
        "noise_sensitivity": lambda: NoiseSensitivity(llm=llm),
        "nv_accuracy": lambda: AnswerAccuracy(llm=llm),
        "nv_context_relevance": lambda: ContextRelevance(llm=llm),
        "nv_response_groundedness": lambda: ResponseGroundedness(llm=llm),
    }
    unknown = [n for n in names if n not in build]
    if unknown:
        raise ValueError(f"RAGAS has no legacy metric for {unknown}; choose from {sorted(build)}.")
    return [build[n]() for n in names]


class Counts:
    """Requests and tokens of RAGAS's model calls, from the HTTP responses or around `generate()`
    (thread-safe)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.reset()

    def reset(self) -> None:
        self.requests = self.prompt_tokens = self.completion_tokens = 0

    def add(self, requests: int, prompt_tokens: int, completion_tokens: int) -> None:
        with self._lock:
            self.requests += requests
            self.prompt_tokens += prompt_tokens
            self.completion_tokens += completion_tokens

    def add_response(self, body: bytes) -> None:
        """One OpenAI-compatible response: one request and the tokens its `usage` reports."""
        try:
            usage = json.loads(body).get("usage") or {}
        except (ValueError, AttributeError):
            usage = {}
        self.add(1, int(usage.get("prompt_tokens") or 0), int(usage.get("completion_tokens") or 0))


def server_llm(url: str, model: str, max_tokens: int, counts: Counts) -> Any:
    """RAGAS's LangChain wrapper around `ChatOpenAI` pointed at the local server."""
    import httpx
    from langchain_openai import ChatOpenAI
    from ragas.llms import LangchainLLMWrapper

    async def on_response(response: httpx.Response) -> None:
        counts.add_response(await response.aread())

    def on_response_sync(response: httpx.Response) -> None:
        counts.add_response(response.read())

    chat = ChatOpenAI(
        model=model,
        base_url=url.rstrip("/") + "/v1",
        api_key="EMPTY",
        temperature=0,
        max_tokens=max_tokens,
        http_async_client=httpx.AsyncClient(event_hooks={"response": [on_response]}, timeout=None),
        http_client=httpx.Client(event_hooks={"response": [on_response_sync]}, timeout=None),
    )
    return LangchainLLMWrapper(chat)


def _count_generate(model: Any, counts: Counts) -> None:
    """Wrap `model.generate` so every call adds its rows, prompt tokens and generated tokens."""
    original = model.generate
    eos = model.generation_config.eos_token_id
    eos_ids = set(eos if isinstance(eos, list) else [eos] if eos is not None else [])

    def generate(*args: Any, **kwargs: Any) -> Any:
        out = original(*args, **kwargs)
        ids = kwargs.get("input_ids", args[0] if args else None)
        mask = kwargs.get("attention_mask")
        sequences = getattr(out, "sequences", out)
        new = sequences[:, ids.shape[1] :].tolist()
        prompt = int(mask.sum()) if mask is not None else int(ids.numel())
        generated = 0
        for row in new:
            stop = next((i + 1 for i, t in enumerate(row) if t in eos_ids), len(row))
            generated += stop
        counts.add(len(new), prompt, generated)
        return out

    model.generate = generate


def pipeline_llm(model_dir: str, max_tokens: int, counts: Counts) -> tuple[Any, Any]:
    """RAGAS's LangChain wrapper around a transformers text-generation pipeline; (ragas llm, pipeline)."""
    import torch
    import transformers
    from langchain_community.llms import HuggingFacePipeline
    from ragas.llms import LangchainLLMWrapper

    tokenizer = transformers.AutoTokenizer.from_pretrained(model_dir)
    model = transformers.AutoModelForCausalLM.from_pretrained(model_dir, dtype=torch.float32)
    model.eval()
    _count_generate(model, counts)
    pipe = transformers.pipeline(
        "text-generation",
        model=model,
        tokenizer=tokenizer,
        max_new_tokens=max_tokens,
        do_sample=False,
        return_full_text=False,
        device="cpu",
    )
    return LangchainLLMWrapper(HuggingFacePipeline(pipeline=pipe)), pipe


def embeddings(model_dir: str) -> Any:
    """LangChain's sentence-transformers embeddings in RAGAS's wrapper (RAGAS 0.4.3's own legacy
    `HuggingfaceEmbeddings` cannot be instantiated: it lacks the async methods its base class declares)."""
    from langchain_community.embeddings import HuggingFaceEmbeddings
    from ragas.embeddings import LangchainEmbeddingsWrapper

    return LangchainEmbeddingsWrapper(HuggingFaceEmbeddings(model_name=model_dir))


class JobErrors(logging.Handler):
    """Collects the exceptions RAGAS's executor logs (and otherwise turns into silent NaN)."""

    def __init__(self) -> None:
        super().__init__(logging.ERROR)
        self.jobs: dict[int, str] = {}

    def emit(self, record: logging.LogRecord) -> None:
        match = JOB_ERROR.match(record.getMessage())
        if match:
            detail = match.group(3).strip().splitlines()[0][:60] if match.group(3).strip() else ""
            self.jobs[int(match.group(1))] = f"{match.group(2)}: {detail}" if detail else match.group(2)


def rows_for_ragas(data: dict[str, list]) -> list[dict[str, Any]]:
    return [
        {"user_input": q, "retrieved_contexts": list(c), "response": a, "reference": r}
        for q, c, a, r in zip(
            data["question"], data["contexts"], data["answer"], data["ground_truth"], strict=True
        )
    ]


def run_ragas(
    data: dict[str, list], names: list[str], llm: Any, emb: Any, *, timeout: float
) -> dict[str, Any]:
    """One timed `ragas.evaluate()`; per metric the NaN count with the logged reason, and the mean."""
    import ragas
    from ragas import EvaluationDataset
    from ragas.run_config import RunConfig

    dataset = EvaluationDataset.from_list(rows_for_ragas(data))
    metrics = ragas_metrics(names, llm, emb)
    errors = JobErrors()
    logger = logging.getLogger("ragas.executor")
    logger.addHandler(errors)
    started = time.perf_counter()
    try:
        result = ragas.evaluate(
            dataset,
            metrics=metrics,
            llm=llm,
            embeddings=emb,
            run_config=RunConfig(timeout=timeout),
            raise_exceptions=False,
            show_progress=False,
        )
    finally:
        logger.removeHandler(errors)
    wall = time.perf_counter() - started
    nan: dict[str, dict[str, int]] = {}
    nan_mask: dict[str, list[bool]] = {}
    means: dict[str, float | None] = {}
    for j, (name, metric) in enumerate(zip(names, metrics, strict=True)):
        key = next(k for k in result.scores[0] if k == metric.name or k.startswith(metric.name + "("))
        values = [float(row[key]) for row in result.scores]
        reasons: Counter[str] = Counter()
        for i, value in enumerate(values):
            if math.isnan(value):
                reasons[errors.jobs.get(i * len(names) + j, "nan (no exception logged)")] += 1
        nan[name] = dict(reasons)
        nan_mask[name] = [math.isnan(v) for v in values]
        scored = [v for v in values if not math.isnan(v)]
        means[name] = sum(scored) / len(scored) if scored else None
    return {"wall_seconds": wall, "nan": nan, "nan_mask": nan_mask, "means": means}
