"""`generate`: a test set from the user's documents, written and filtered by the judge in rounds.

corpus -> documents (checked) -> chunks (the pipeline's chunker) -> chunk embeddings -> candidates per
query kind (seeded) -> rounds: each round takes, per kind, the candidates it expects to need (from the
share that passed so far), runs them through the engine as plans (write, then two verdicts; batched,
cached), then keeps the survivors that are no near-duplicate, until `size` rows pass or every candidate
was tried. Everything that can be wrong with the input is found before any model loads.
"""

from __future__ import annotations

import logging
import math
from collections import Counter, deque
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from ascend_eval.config import EvaluationConfig
from ascend_eval.engine import Backends, Engine, PlanError, Progress
from ascend_eval.errors import BackendError, DataError
from ascend_eval.executors.local import close_built, open_cache
from ascend_eval.models.factory import build_models
from ascend_eval.pipeline.chunking import Chunk, chunk_corpus
from ascend_eval.pipeline.retrieval import EmbeddingMemo, embed_texts
from ascend_eval.testset.candidates import (
    Candidate,
    build_candidates,
    chunk_id,
    document_languages,
)
from ascend_eval.testset.config import DEFAULT_KINDS, TestsetConfig, allocate
from ascend_eval.testset.corpus import load_corpus
from ascend_eval.testset.filters import Dropped, DuplicateFilter, Failed, Written, candidate_plan
from ascend_eval.testset.result import Testset

logger = logging.getLogger("ascend_eval.testset")

Say = Callable[[str], None]


def corpus_chunks(documents: Sequence[Mapping[str, str]], config: TestsetConfig) -> list[Chunk]:
    """The chunks questions are written from.

    Raises:
        DataError: the corpus holds less text than one chunk (`config.chunk_size` characters).
    """
    total = sum(len(doc["text"].strip()) for doc in documents)
    if total < config.chunk_size:
        raise DataError(
            f"The corpus holds {total} characters of text, less than one chunk (chunk_size="
            f"{config.chunk_size}): too little to write a test set from. Add documents, or lower the chunk "
            f"size (--chunk-size / chunk_size=) to at most {total}."
        )
    return chunk_corpus(documents, size=config.chunk_size, overlap=config.chunk_overlap)


def generate(
    corpus: Any,
    size: int,
    *,
    kinds: Mapping[str, float] | None = None,
    personas: Sequence[str] | None = None,
    language: str = "auto",
    seed: int = 0,
    chunk_size: int = 512,
    chunk_overlap: int = 0,
    duplicate_threshold: float = 0.95,
    max_tokens: int = 512,
    judge: Any = None,
    embedder: Any = None,
    judge_backend: str = "auto",
    embedder_backend: str = "auto",
    device: str | None = None,
    memory_budget: float | None = None,
    cache_dir: Any = None,
    progress: Say | None = None,
    on_progress: Callable[[Progress], None] | None = None,
) -> Testset:
    """Write a test set (question, reference answer, reference contexts) from `corpus` with the judge.

    Args:
        corpus: a folder of .txt/.md/.jsonl/.pdf files, one such file, a built-in corpus name
            ("ascend-eval/rag-mini-en"), or a list of texts (`load_corpus`).
        size: rows wanted.
        kinds, personas, language, seed, chunk_size, chunk_overlap, duplicate_threshold, max_tokens: see
            `TestsetConfig` (kinds default: single_hop 0.5, multi_hop 0.25, abstract 0.25).
        judge, embedder, judge_backend, embedder_backend, device, memory_budget, cache_dir: the models
            and the request cache, as `evaluate` takes them (`EvaluationConfig`): the judge writes and
            judges, the embedder finds neighbouring chunks and near-duplicate questions.
        progress: called with a line as each stage and round starts and ends.
        on_progress: called with the engine's `Progress` snapshots while a round runs.

    Returns:
        A `Testset`: its rows, and the counts (rows per kind and language, drops per reason). When the
        corpus's candidates run out first it has fewer rows than `size` (`complete` is False and its
        summary says so).

    Raises:
        ConfigError: a bad setting or model argument (before anything is read).
        DataError, MissingDependencyError: the corpus cannot be read (before any model loads).
        BackendError: a model call failed; what was answered is cached, the same call resumes.
    """
    config = TestsetConfig(
        size=size,
        kinds=dict(DEFAULT_KINDS) if kinds is None else kinds,
        personas=personas,
        language=language,
        seed=seed,
        chunk_size=chunk_size,
        chunk_overlap=chunk_overlap,
        duplicate_threshold=duplicate_threshold,
        max_tokens=max_tokens,
    )
    settings = EvaluationConfig.of(
        judge=judge,
        embedder=embedder,
        judge_backend=judge_backend,
        embedder_backend=embedder_backend,
        device=device,
        memory_budget=memory_budget,
        cache_dir=cache_dir,
    )
    documents = load_corpus(corpus)
    chunks = corpus_chunks(documents, config)
    languages = document_languages(documents)
    say = progress or (lambda line: None)
    say(f"{len(documents)} documents, {len(chunks)} chunks of at most {config.chunk_size} characters")
    given, built = {id(judge), id(embedder)}, {}
    cache = open_cache(settings.cache_dir)
    try:
        built = build_models(
            settings.model_specs(("judge", "embedder")), memory_budget=settings.memory_budget
        )
        backends = Backends(judge=built["judge"], embedder=built["embedder"])
        engine = Engine(backends, cache, on_progress=on_progress)
        return Generation(engine, chunks, languages, config, say).run()
    except KeyboardInterrupt:
        if cache.enabled:
            logger.warning(
                "Interrupted. Answered requests are cached in %s; run again to resume.", cache.path
            )
        raise
    finally:
        cache.close()
        close_built(built, given)


class Generation:
    """One run's state: the candidates left per kind, the rows accepted, and the counts."""

    def __init__(
        self,
        engine: Engine,
        chunks: Sequence[Chunk],
        languages: Mapping[str, Any],
        config: TestsetConfig,
        say: Say,
    ) -> None:
        self.engine = engine
        self.chunks = chunks
        self.languages = languages
        self.config = config
        self.say = say
        self.weights = {k: config.kinds[k] for k in config.active_kinds}
        self.quota = allocate(config.size, self.weights)
        self.got: Counter[str] = Counter()
        self.passed: Counter[str] = Counter()
        self.pools: dict[str, deque[Candidate]] = {}
        self.duplicates = DuplicateFilter(config.duplicate_threshold)

    def run(self) -> Testset:
        texts = [c.text for c in self.chunks]
        self.say(f"embedding {len(texts)} chunks")
        [vectors] = embed_texts(self.engine, [(texts, "document")], memo=EmbeddingMemo())
        candidates = build_candidates(self.chunks, vectors, self.languages, self.config)
        self.pools = {kind: deque(found) for kind, found in candidates.items()}
        result = Testset(rows=[], size=self.config.size, available={k: len(v) for k, v in candidates.items()})
        while len(result.rows) < self.config.size:
            wanted = self.wanted(len(result.rows))
            if not wanted:
                break
            result.rounds += 1
            batch = self.take(wanted, result.tried)
            self.say(f"round {result.rounds}: writing {len(batch)} candidates ({_counts(batch)})")
            outcomes = self.ask(batch, result.rounds)
            self.accept(batch, outcomes, wanted, result)
            self.say(
                f"round {result.rounds}: {len(result.rows)} of {self.config.size} rows, "
                f"{sum(result.drops.values())} dropped so far"
            )
        return result

    def wanted(self, have: int) -> dict[str, int]:
        """Rows still needed per kind that has candidates left: its quota less what it has, and the share
        of kinds that ran out spread over the others by weight. Empty when every kind ran out."""
        need = self.config.size - have
        alive = [k for k in self.weights if self.pools[k]]
        if not alive or need <= 0:
            return {}
        short = {k: max(0, self.quota[k] - self.got[k]) for k in alive}
        total = sum(short.values())
        if total > need:
            short = allocate(need, short)
        elif total < need:
            extra = allocate(need - total, {k: self.weights[k] for k in alive})
            short = {k: short[k] + extra[k] for k in alive}
        return {k: n for k, n in short.items() if n > 0}

    def take(self, wanted: Mapping[str, int], tried: Counter[str]) -> list[Candidate]:
        """The next candidates of each kind: as many as the share that passed so far says it takes to get
        `wanted` rows (1.5 times as many before any passed), at most what is left."""
        batch: list[Candidate] = []
        for kind, n in wanted.items():
            rate = (self.passed[kind] + 2) / (tried[kind] + 3)
            count = min(len(self.pools[kind]), math.ceil(n / rate))
            batch += [self.pools[kind].popleft() for _ in range(count)]
            tried[kind] += count
        return batch

    def ask(self, batch: Sequence[Candidate], round_number: int) -> list[Any]:
        """Each candidate's outcome (`Written` or `Dropped`), all through the engine in one run.

        Raises:
            BackendError: a request failed in a backend; the rest of the round is answered and cached.
        """
        plans = {
            i: candidate_plan(c, [self.chunks[j].text for j in c.chunks], self.config.max_tokens)
            for i, c in enumerate(batch)
        }
        outcomes = self.engine.run(plans)
        failed = [o for o in outcomes.values() if isinstance(o, PlanError | Failed)]
        if failed:
            first = failed[0].reason if isinstance(failed[0], PlanError) else failed[0].detail
            raise BackendError(
                f"{len(failed)} of {len(batch)} candidates of round {round_number} could not be judged "
                f"({first}). Every answered request is cached: fix the judge, embedder or endpoint and run "
                "the same call again to resume."
            )
        return [outcomes[i] for i in range(len(batch))]

    def accept(
        self, batch: Sequence[Candidate], outcomes: Sequence[Any], wanted: Mapping[str, int], result: Testset
    ) -> None:
        """Keep, in batch order, each written candidate that is no near-duplicate until its kind has the rows
        it wanted this round; count every drop. Candidates that passed after their kind was full go back to
        the front of their pool (their answers are cached: a later round that needs them asks nothing)."""
        written = [i for i, o in enumerate(outcomes) if isinstance(o, Written)]
        questions = [outcomes[i].question for i in written]
        [vectors] = embed_texts(self.engine, [(questions, "query")], memo=EmbeddingMemo())
        vector_of = dict(zip(written, vectors, strict=True))
        target = {k: self.got[k] + n for k, n in wanted.items()}
        back: dict[str, list[Candidate]] = {}
        for i, (candidate, outcome) in enumerate(zip(batch, outcomes, strict=True)):
            kind = candidate.kind
            if isinstance(outcome, Dropped):
                result.drops[outcome.reason] += 1
                result.examples.setdefault(outcome.reason, outcome.detail)
            elif self.got[kind] >= target[kind]:
                back.setdefault(kind, []).append(candidate)
            elif not self.duplicates.admit(vector_of[i]):
                result.drops["near_duplicate"] += 1
                result.examples.setdefault("near_duplicate", repr(outcome.question[:80]))
            else:
                self.got[kind] += 1
                self.passed[kind] += 1
                result.rows.append(self.row(candidate, outcome))
        for kind, returned in back.items():
            self.pools[kind].extendleft(reversed(returned))
            result.tried[kind] -= len(returned)

    def row(self, candidate: Candidate, written: Written) -> dict[str, Any]:
        chunks = [self.chunks[j] for j in candidate.chunks]
        row: dict[str, Any] = {
            "question": written.question,
            "ground_truth": written.answer,
            "reference_contexts": [c.text for c in chunks],
            "source_chunks": [chunk_id(c) for c in chunks],
            "query_kind": candidate.kind,
            "language": candidate.language,
        }
        if self.config.personas:
            row["persona"] = candidate.persona
        return row


def _counts(batch: Sequence[Candidate]) -> str:
    return ", ".join(f"{kind} {n}" for kind, n in Counter(c.kind for c in batch).items())
