"""`build_rag_samples` (and `build_rag_rows` for row dicts): fill in the contexts and answers a dataset
lacks, as a RAG system would have.

chunk the corpus -> embed chunks and questions (batched, cached) -> retrieve the top chunks by cosine
similarity -> rerank them with a cross-encoder if one is given -> generate each answer with the RAG model
(one batched, cached `generate` call). Everything that can be wrong with the input is checked before any
model loads; rows that already have contexts and an answer are returned unchanged without touching a model.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ascend_eval.data import Sample
from ascend_eval.data.corpus import check_corpus
from ascend_eval.engine import Backends, Engine, RequestCache
from ascend_eval.errors import ConfigError, DataError
from ascend_eval.models.base import Embedder, GenerationParams, Judge, Reranker
from ascend_eval.pipeline.chunking import Chunk, OffsetTokenizer, chunk_corpus, load_tokenizer
from ascend_eval.pipeline.config import PipelineConfig
from ascend_eval.pipeline.generation import generate_answers
from ascend_eval.pipeline.retrieval import EmbeddingMemo, embed_texts, rerank
from ascend_eval.similarity import cosine_matrix, top_k
from ascend_eval.text.language import Language, detect_language

Progress = Callable[[str, int, int], None]

# Each column under its current name first, then its RAGAS v0.1 / NeMo name.
_QUESTION = ("user_input", "question")
_CONTEXTS = ("retrieved_contexts", "contexts")
_RESPONSE = ("response", "answer")

CONTEXT_IDS = "retrieved_context_ids"
"""Column the pipeline adds beside the contexts it retrieved: `doc_id#chunk_index` of each, for
retrieval diagnostics (e.g. whether a question's source document was found)."""


def _value(row: Mapping[str, Any], names: Sequence[str]) -> Any:
    for name in names:
        value = row.get(name)
        if not _absent(value):
            return value
    return None


def _absent(value: Any) -> bool:
    return value is None or (isinstance(value, float) and math.isnan(value))


def _as_list(contexts: Any) -> list[str]:
    return [contexts] if isinstance(contexts, str) else list(contexts)


def _row_name(row: Mapping[str, Any], index: int) -> str:
    return f"row {index}" + (f" (id {row['id']!r})" if row.get("id") is not None else "")


def _check_inputs(
    questions: Sequence[Any],
    name: Callable[[int], str],
    need_contexts: list[int],
    need_answers: list[int],
    *,
    corpus: Any,
    embedder: Embedder | None,
    generator: Judge | None,
) -> None:
    """Raise DataError for the first row the pipeline cannot complete, naming the missing piece."""
    for i in sorted(set(need_contexts) | set(need_answers)):
        question = questions[i]
        if not isinstance(question, str) or not question.strip():
            raise DataError(
                f"{name(i)} has no question ('user_input' or 'question'), so the RAG pipeline "
                "cannot retrieve contexts or generate an answer for it. Add the question or drop the row."
            )
    if need_contexts:
        first = name(need_contexts[0])
        if corpus is None:
            raise DataError(
                f"{first} has no 'retrieved_contexts' and no corpus was given to retrieve them from "
                f"({len(need_contexts)} rows lack contexts). Add a corpus to the dataset "
                "(dataset.corpus: a list of {'id', 'text'} documents or a JSON/JSONL file) or give every "
                "row its contexts."
            )
        if embedder is None:
            raise DataError(
                f"{first} has no 'retrieved_contexts' and no embedding model is configured to retrieve "
                "them. Set retriever_pipeline.embedding_model or give every row its contexts."
            )
    if need_answers and generator is None:
        first = name(need_answers[0])
        raise DataError(
            f"{first} has no 'response' and no RAG model is configured to generate one "
            f"({len(need_answers)} rows lack answers). Set `model` (the RAG model) or give every row "
            "its answer."
        )


def embedder_tokenizer(backends: Backends) -> OffsetTokenizer:
    """The tokenizer of the local (sentence-transformers) embedder of `backends`, for chunk_unit="tokens";
    a local embedder not loaded yet loads now.

    Raises:
        ConfigError: the embedder exposes no tokenizer (an HTTP endpoint).
    """
    runtime = backends.runtime("embedder")
    tokenizer = getattr(runtime, "tokenizer", None)  # local embedders expose their model's tokenizer
    if tokenizer is not None:
        return tokenizer  # type: ignore[no-any-return]
    raise ConfigError(
        f"chunk_unit='tokens' needs a tokenizer, and the embedder {backends.model_id('embedder')!r} "
        f"({type(runtime).__name__}) has none to offer (an endpoint, not a local model). Pass tokenizer=... "
        "(a tokenizer directory or object) or use chunk_unit='chars'."
    )


def _languages(questions: Sequence[str], setting: str) -> list[Language]:
    if setting == "auto":
        return [detect_language(q) for q in questions]
    return [setting] * len(questions)  # type: ignore[list-item]


def _report(progress: Progress | None, stage: str, done: int, total: int) -> None:
    if progress is not None:
        progress(stage, done, total)


def _retrieve(
    engine: Engine,
    questions: Sequence[str],
    chunks: Sequence[Chunk],
    config: PipelineConfig,
    memo: EmbeddingMemo | None,
    progress: Progress | None,
) -> list[list[Chunk]]:
    """The top_k chunks per question, reranked when there is a reranker."""
    texts = [c.text for c in chunks]
    _report(progress, "embed", 0, len(texts) + len(questions))
    query_vectors, chunk_vectors = embed_texts(engine, [(questions, "query"), (texts, "document")], memo=memo)
    _report(progress, "embed", len(texts) + len(questions), len(texts) + len(questions))
    reranking = engine.backends.has("reranker")
    picked = top_k(
        cosine_matrix(query_vectors, chunk_vectors), config.candidates if reranking else config.top_k
    )
    if reranking:
        _report(progress, "rerank", 0, len(questions))
        order = rerank(engine, questions, [[texts[j] for j in row] for row in picked], config.top_k)
        picked = [[row[o] for o in keep] for row, keep in zip(picked, order, strict=True)]
        _report(progress, "rerank", len(questions), len(questions))
    return [[chunks[j] for j in row] for row in picked]


@dataclass
class _Filled:
    """What the pipeline built, by input position."""

    contexts: dict[int, tuple[list[str], list[str]]] = field(default_factory=dict)
    """Retrieved chunk texts and their ids (`doc_id#chunk_index`)."""
    answers: dict[int, str] = field(default_factory=dict)


def _fill(
    questions: Sequence[Any],
    given_contexts: Sequence[Any],
    given_answers: Sequence[Any],
    name: Callable[[int], str],
    *,
    corpus: Sequence[Mapping[str, Any]] | None,
    config: PipelineConfig,
    embedder: Embedder | None,
    generator: Judge | None,
    reranker: Reranker | None,
    cache: RequestCache | None,
    progress: Progress | None,
    tokenizer: Any,
    memo: EmbeddingMemo | None,
) -> _Filled:
    """Retrieve contexts where `given_contexts[i]` is None and generate answers where `given_answers[i]`
    is None; the shared work of `build_rag_samples` and `build_rag_rows`."""
    filled = _Filled()
    need_contexts = [i for i, contexts in enumerate(given_contexts) if contexts is None]
    need_answers = [i for i, answer in enumerate(given_answers) if answer is None]
    if not need_contexts and not need_answers:
        return filled
    _check_inputs(
        questions, name, need_contexts, need_answers, corpus=corpus, embedder=embedder, generator=generator
    )
    documents = check_corpus(corpus) if need_contexts else []
    backends = Backends(judge=generator, embedder=embedder, reranker=reranker)
    engine = Engine(backends, cache if cache is not None else RequestCache(None))
    tokens = need_contexts and config.chunk_unit == "tokens" and tokenizer is None
    if tokens and backends.loaded("embedder"):
        embedder_tokenizer(backends)  # an endpoint fails here, before any other model loads
    if need_contexts:
        tok = None
        if config.chunk_unit == "tokens":
            tok = load_tokenizer(tokenizer) if tokenizer is not None else embedder_tokenizer(backends)
        _report(progress, "chunk", 0, len(documents))
        chunks = chunk_corpus(
            documents,
            size=config.chunk_size,
            overlap=config.chunk_overlap,
            tokenizer=tok,
            truncate=config.truncate_long_documents,
            max_document_chars=config.max_document_chars,
        )
        _report(progress, "chunk", len(documents), len(documents))
        asked = [questions[i] for i in need_contexts]
        for i, found in zip(
            need_contexts, _retrieve(engine, asked, chunks, config, memo, progress), strict=True
        ):
            filled.contexts[i] = ([c.text for c in found], [f"{c.doc_id}#{c.index}" for c in found])
    if need_answers:
        asked = [questions[i] for i in need_answers]
        contexts = [
            filled.contexts[i][0] if i in filled.contexts else _as_list(given_contexts[i])
            for i in need_answers
        ]
        params = GenerationParams(max_tokens=config.answer_max_tokens, temperature=config.answer_temperature)
        _report(progress, "generate", 0, len(need_answers))
        answers = generate_answers(engine, asked, contexts, _languages(asked, config.language), params)
        filled.answers = dict(zip(need_answers, answers, strict=True))
        _report(progress, "generate", len(need_answers), len(need_answers))
    return filled


def _sample_name(samples: Sequence[Sample], index: int) -> str:
    sample_id = samples[index].id
    return f"Sample {index}" + ("" if sample_id in ("", str(index)) else f" (id {sample_id!r})")


def build_rag_samples(
    samples: Sequence[Sample],
    *,
    corpus: Sequence[Mapping[str, Any]] | None,
    config: PipelineConfig,
    embedder: Embedder | None,
    generator: Judge | None,
    reranker: Reranker | None = None,
    cache: RequestCache | None = None,
    progress: Progress | None = None,
    tokenizer: Any = None,
    memo: EmbeddingMemo | None = None,
) -> list[Sample]:
    """Fill `retrieved_contexts` and `response` where samples lack them (None); keep everything else.

    Args:
        samples: loaded samples (`load_dataset`); each that lacks contexts or an answer needs its
            `user_input`.
        corpus: documents `{"id", "text", "title" (optional)}` to retrieve from; needed if any sample
            lacks contexts.
        config: chunking, retrieval and generation settings.
        embedder: embeds chunks (kind "document") and questions (kind "query"); needed with `corpus`.
        generator: the RAG model; answers through `Judge.generate`. Needed if any sample lacks an answer.
        reranker: reorders the `config.candidates` best chunks before `top_k` are kept.
        cache: the request cache; embeddings, reranker scores and answers are stored there, so identical
            requests (same chunk, same prompt) are answered once across runs and experiment points.
        progress: called with (stage, done, total) as stages start and finish: "chunk", "embed",
            "rerank", "generate".
        tokenizer: for chunk_unit="tokens": a fast tokenizer or a local tokenizer directory; default the
            local embedder's own tokenizer.
        memo: in-process embedding memo; default the process-wide one.

    Returns:
        The samples in input order: complete ones are the same objects, the others new samples with the
        built columns. Given contexts are kept (and generation uses them); retrieved contexts come with
        the metadata `retrieved_context_ids` (`doc_id#chunk_index` of each).

    Raises:
        DataError: a sample that needs the pipeline has no question, or the corpus, embedder or RAG model
            it needs is missing (before any model loads), or the corpus is malformed.
        ConfigError: chunk_unit="tokens" without a tokenizer.
        BackendError: a model call failed (answered requests stay cached; run again to resume).
    """
    filled = _fill(
        [s.user_input for s in samples],
        [s.retrieved_contexts for s in samples],
        [s.response for s in samples],
        lambda i: _sample_name(samples, i),
        corpus=corpus,
        config=config,
        embedder=embedder,
        generator=generator,
        reranker=reranker,
        cache=cache,
        progress=progress,
        tokenizer=tokenizer,
        memo=memo,
    )
    out = list(samples)
    for i in sorted(filled.contexts.keys() | filled.answers.keys()):
        fields = out[i].model_dump()
        if i in filled.contexts:
            texts, ids = filled.contexts[i]
            fields["retrieved_contexts"] = texts
            fields["metadata"] = {**fields["metadata"], CONTEXT_IDS: ids}
        if i in filled.answers:
            fields["response"] = filled.answers[i]
        out[i] = Sample.model_validate(fields)
    return out


def build_rag_rows(
    rows: Sequence[Mapping[str, Any]],
    *,
    corpus: Sequence[Mapping[str, Any]] | None,
    config: PipelineConfig,
    embedder: Embedder | None,
    generator: Judge | None,
    reranker: Reranker | None = None,
    cache: RequestCache | None = None,
    progress: Progress | None = None,
    tokenizer: Any = None,
    memo: EmbeddingMemo | None = None,
) -> list[dict[str, Any]]:
    """`build_rag_samples` for row dicts: fill `retrieved_contexts` and `response` where rows lack
    them; keep every other field.

    Args:
        rows: rows with `user_input` (or `question`) and optionally `reference`, `retrieved_contexts`
            (`contexts`) and `response` (`answer`). None or NaN counts as missing.
        corpus, config, embedder, generator, reranker, cache, progress, tokenizer, memo: see
            `build_rag_samples`.

    Returns:
        New row dicts in input order. Rows given contexts keep them (and generation uses them); retrieved
        contexts come with `retrieved_context_ids` (`doc_id#chunk_index`).

    Raises:
        DataError, ConfigError, BackendError: see `build_rag_samples`.
    """
    out = [dict(row) for row in rows]
    filled = _fill(
        [_value(row, _QUESTION) for row in out],
        [_value(row, _CONTEXTS) for row in out],
        [_value(row, _RESPONSE) for row in out],
        lambda i: _row_name(out[i], i),
        corpus=corpus,
        config=config,
        embedder=embedder,
        generator=generator,
        reranker=reranker,
        cache=cache,
        progress=progress,
        tokenizer=tokenizer,
        memo=memo,
    )
    for i, (texts, ids) in filled.contexts.items():
        out[i]["retrieved_contexts"] = texts
        out[i][CONTEXT_IDS] = ids
    for i, answer in filled.answers.items():
        out[i]["response"] = answer
    return out
