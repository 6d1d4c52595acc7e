"""A drop-in for RAGAS 0.4.3's `TestsetGenerator`: test sets written by ascend-eval (`ascend_eval.testset`).

A RAGAS script switches by changing the line that imports it::

    from ragas.testset import TestsetGenerator             # before
    from ascend_eval.ragas.testset import TestsetGenerator  # after

The generator takes RAGAS's LLM and embedding objects (mapped as `evaluate` maps them), LangChain or
LlamaIndex documents or pre-made chunks, a `query_distribution` of RAGAS's three synthesizers and a
`persona_list`, and returns a `RagasTestset` with RAGAS's columns (`user_input`, `reference_contexts`,
`reference`, `synthesizer_name`). What cannot be honoured (a prebuilt knowledge graph, custom transforms,
callbacks, an executor) is a `ConfigError` naming the argument, raised before any model loads.
"""

from __future__ import annotations

import importlib
import json
import logging
import random
import sys
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ascend_eval.data.objects import is_type
from ascend_eval.errors import ConfigError, MissingDependencyError
from ascend_eval.models.factory import resolve
from ascend_eval.ragas.models import Secrets, embedder_arg, judge_arg, with_run_config
from ascend_eval.ragas.testset_args import (
    SYNTHESIZER_NAMES,
    Distribution,
    check_size,
    check_unsupported,
    documents_corpus,
    langchain_pairs,
    llama_index_pairs,
    persona_entry,
    refuse,
)
from ascend_eval.testset import Testset, TestsetConfig, generate, load_corpus
from ascend_eval.writing import replaced

logger = logging.getLogger("ascend_eval.ragas")

NUM_PERSONAS = 3
"""How many personas of `persona_list` RAGAS asks with (`generate(num_personas=3)`)."""

RAGAS_COLUMNS = ("user_input", "reference_contexts", "reference", "persona_name", "synthesizer_name")
"""`to_pandas()`'s columns, in RAGAS's order; `persona_name` only when personas asked."""


@contextmanager
def _runtimes(secrets: Secrets, device: str | None, judge: Any, embedder: Any) -> Iterator[tuple[Any, Any]]:
    """The judge and embedder to generate with: an endpoint whose key was written into the script is built
    here while its key is exposed (and closed afterwards); anything else as it is."""
    built: list[Any] = []
    try:
        models = []
        for value, role in ((judge, "judge"), (embedder, "embedder")):
            if value in secrets:
                with secrets.exposed():
                    value = resolve(value, role, device=device)  # type: ignore[call-overload]
                built.append(value)
            models.append(value)
        yield models[0], models[1]
    finally:
        for runtime in built:
            close = getattr(runtime, "close", None)
            if close is not None:
                close()


def _to_stderr(line: str) -> None:
    print(f"[ascend-eval testset] {line}", file=sys.stderr, flush=True)


@dataclass(frozen=True)
class Run:
    """One generate call's arguments, as `TestsetGenerator.write` takes them."""

    testset_size: Any
    query_distribution: Any
    run_config: Any
    with_debugging_logs: bool
    seed: int | None
    language: str
    device: str | None
    cache_dir: Any
    num_personas: Any = NUM_PERSONAS


@dataclass(frozen=True)
class Source:
    """What a generate method writes from: the corpus, how it is chunked, and the embedder that finds
    neighbouring chunks (kept for a later `generate()`)."""

    corpus: list[dict[str, str]]
    chunk_size: int
    chunk_overlap: int
    embedder: Any


def _ragas_module(name: str, what: str) -> Any:
    try:
        return importlib.import_module(name)
    except ImportError as e:
        raise MissingDependencyError(
            f"{what} builds RAGAS's own objects: install ragas (pip install 'ragas==0.4.3'), or use "
            "to_list() / to_pandas() / .testset, which need no ragas."
        ) from e


@dataclass
class RagasTestset:
    """What `TestsetGenerator` returns: RAGAS's `Testset` surface (`to_pandas()`, `to_list()`,
    `to_jsonl()`, `to_evaluation_dataset()`, `samples`, `len()`) over our `Testset` (`.testset`: the rows
    with their source chunks, kinds and languages, and the counts of what was tried and dropped)."""

    testset: Testset
    synthesizer_names: dict[str, str] = field(default_factory=lambda: dict(SYNTHESIZER_NAMES))
    """Query kind -> the `synthesizer_name` its rows carry."""
    persona_names: dict[str, str] = field(default_factory=dict)
    """Our persona text -> the `Persona.name` it came from."""

    def to_list(self) -> list[dict[str, Any]]:
        """One dict per row, as RAGAS's `Testset.to_list()` gives them: `user_input`,
        `reference_contexts`, `reference`, `persona_name` (when personas asked), `synthesizer_name`."""
        rows = []
        for row in self.testset.rows:
            item: dict[str, Any] = {
                "user_input": row["question"],
                "reference_contexts": list(row["reference_contexts"]),
                "reference": row["ground_truth"],
            }
            if row.get("persona"):
                item["persona_name"] = self.persona_names.get(row["persona"], row["persona"])
            item["synthesizer_name"] = self.synthesizer_names.get(
                row["query_kind"], SYNTHESIZER_NAMES[row["query_kind"]]
            )
            rows.append(item)
        return rows

    def to_pandas(self) -> Any:
        """`to_list()` as a pandas DataFrame (RAGAS's columns, in its order).

        Raises:
            MissingDependencyError: pandas is not installed.
        """
        try:
            import pandas as pd
        except ImportError as e:
            raise MissingDependencyError("to_pandas() needs pandas: pip install 'ascend-eval[data]'.") from e
        return pd.DataFrame(self.to_list(), columns=self.columns())

    def columns(self) -> list[str]:
        """The columns of `to_pandas()`: RAGAS's, `persona_name` only when a row has one."""
        rows = self.to_list()
        return [c for c in RAGAS_COLUMNS if c != "persona_name" or any(c in r for r in rows)]

    def to_jsonl(self, path: str | Path) -> Path:
        """Write `to_list()` as JSON Lines (UTF-8, as RAGAS writes it; `Testset.from_jsonl` reads it back),
        in one step: the whole file or none.

        Raises:
            OutputError: the file cannot be written.
        """
        target = Path(path)
        with replaced(target) as f:
            for row in self.to_list():
                f.write(json.dumps(row, ensure_ascii=False) + "\n")
        return target

    def to_csv(self, path: str | Path) -> None:
        """Write `to_pandas()` as CSV (a list cell as Python writes it, as RAGAS's `to_csv` does)."""
        if self.testset.rows:
            self.to_pandas().to_csv(path, index=False)

    def to_hf_dataset(self) -> Any:
        """`to_list()` as a Hugging Face `datasets.Dataset`.

        Raises:
            MissingDependencyError: datasets is not installed.
        """
        try:
            from datasets import Dataset as HFDataset
        except ImportError as e:
            raise MissingDependencyError("to_hf_dataset() needs datasets: pip install datasets.") from e
        return HFDataset.from_list(self.to_list())

    @property
    def samples(self) -> list[Any]:
        """RAGAS's `TestsetSample`s (each a `SingleTurnSample` and its `synthesizer_name`); needs ragas."""
        schema = _ragas_module("ragas.testset.synthesizers.testset_schema", "Testset.samples")
        dataset = _ragas_module("ragas.dataset_schema", "Testset.samples")
        out = []
        for row in self.to_list():
            name = row.pop("synthesizer_name")
            out.append(
                schema.TestsetSample(eval_sample=dataset.SingleTurnSample(**row), synthesizer_name=name)
            )
        return out

    def to_evaluation_dataset(self) -> Any:
        """RAGAS's `EvaluationDataset` of the rows' `SingleTurnSample`s (to add your system's responses and
        score them with `ascend_eval.ragas.evaluate`); needs ragas."""
        dataset = _ragas_module("ragas.dataset_schema", "to_evaluation_dataset()")
        return dataset.EvaluationDataset(samples=[s.eval_sample for s in self.samples])

    def to_ragas(self) -> Any:
        """RAGAS's own `Testset` of these rows, for whatever else of RAGAS's surface you use; needs ragas."""
        schema = _ragas_module("ragas.testset.synthesizers.testset_schema", "to_ragas()")
        return schema.Testset(samples=self.samples)

    def __len__(self) -> int:
        return len(self.testset.rows)

    def __iter__(self) -> Iterator[Any]:
        """RAGAS's `TestsetSample`s, as iterating RAGAS's `Testset` gives them."""
        return iter(self.samples)

    def __repr__(self) -> str:
        kinds = {self.synthesizer_names.get(k, k): n for k, n in self.testset.kinds().items()}
        return f"RagasTestset(len={len(self)}, of={self.testset.size}, synthesizers={kinds})"


class TestsetGenerator:
    """RAGAS 0.4.3's `TestsetGenerator`, writing with `ascend_eval.testset.generate`.

    The generate methods take RAGAS's arguments, and mapped or refused thus:

    - `query_distribution`: (synthesizer, weight) pairs of RAGAS's `SingleHopSpecificQuerySynthesizer`,
      `MultiHopSpecificQuerySynthesizer` and `MultiHopAbstractQuerySynthesizer` become our kinds
      single_hop, multi_hop and abstract, the weights normalised; None: equal shares, as RAGAS's default.
    - `run_config`: `timeout`, `max_retries` and `max_workers` go to the endpoint clients (as in
      `evaluate`), `seed` chooses the candidates (unless `seed=` is given).
    - `transforms_embedding_model`: the embedder, in place of `embedding_model` (RAGAS embeds the chunks
      with it); `transforms_llm`: accepted and unused (no LLM transform runs here).
    - `with_debugging_logs`: True prints each stage and round (chunks, candidates, drops) to stderr.
    - `raise_exceptions`: accepted; a failed backend request raises `BackendError` either way (a test set
      has no NaN rows; what was answered is cached and the same call resumes), and a question the judge
      wrote badly is dropped and counted (`.testset.drops`), never raised.
    - `transforms`, `callbacks`, `token_usage_parser`, `return_executor`: refused (`ConfigError`).

    Their keyword-only arguments are ascend-eval's: `seed` (default: `run_config.seed`, else 0),
    `language` ("auto", "en", "zh"), `chunk_size` and `chunk_overlap` (characters; not for pre-made
    chunks), `device` and `cache_dir` (as in `ascend_eval.testset.generate`).
    """

    __test__ = False  # a library class, not a pytest test class

    def __init__(
        self,
        llm: Any,
        embedding_model: Any,
        knowledge_graph: Any = None,
        persona_list: Sequence[Any] | None = None,
        llm_context: str | None = None,
    ) -> None:
        """Map the models now (nothing loads until a generate method runs).

        Args:
            llm: writes and checks the questions: what `ascend_eval.ragas.evaluate` takes as `llm`.
            embedding_model: finds neighbouring chunks and near-duplicate questions: what `evaluate`
                takes as `embeddings`.
            knowledge_graph: None or an empty `KnowledgeGraph`; a built one is refused.
            persona_list: who asks: RAGAS `Persona`s or strings; None asks as no one in particular
                (RAGAS would have the LLM invent personas). As in RAGAS, a run asks with at most 3 of
                them (`num_personas`), chosen by the seed.
            llm_context: refused when given: our writing prompts take no extra context.

        Raises:
            ConfigError: a model that cannot be mapped, a built knowledge graph, an llm_context or a bad
                persona, named.
        """
        self.llm = llm
        self.embedding_model = embedding_model
        self.knowledge_graph = knowledge_graph
        self.persona_list = persona_list
        self.llm_context = llm_context
        nodes = getattr(knowledge_graph, "nodes", None)
        if knowledge_graph is not None and (not is_type(knowledge_graph, "ragas", "KnowledgeGraph") or nodes):
            refuse(
                "knowledge_graph",
                knowledge_graph,
                "ascend-eval does not read RAGAS's knowledge graphs (their transforms' summaries, themes and "
                "relationships). Pass the documents instead: generate_with_langchain_docs([Document("
                "page_content=n.properties['page_content']) for n in kg.nodes if n.type.name == 'DOCUMENT'], "
                "testset_size).",
            )
        if llm_context:
            refuse(
                "llm_context",
                llm_context,
                "ascend-eval's writing prompts take no extra context. Drop llm_context=, or say who asks "
                "with persona_list=[Persona(name=..., role_description=...)].",
            )
        if persona_list is not None and (
            isinstance(persona_list, str) or not isinstance(persona_list, Sequence)
        ):
            refuse("persona_list", persona_list, "pass a list of ragas Persona objects or strings.")
        self.secrets = Secrets()
        self.judge = judge_arg(llm, self.secrets, what="llm")
        self.embedder = embedder_arg(embedding_model, self.secrets, what="embedding_model")
        self.personas = [persona_entry(p, i) for i, p in enumerate(persona_list or ())]
        self.source: Source | None = None
        """What the last generate method wrote from; `generate()` writes more from it."""

    @classmethod
    def from_langchain(
        cls, llm: Any, embedding_model: Any, knowledge_graph: Any = None, llm_context: str | None = None
    ) -> TestsetGenerator:
        """From a LangChain chat model (`ChatOpenAI(base_url=...)`, `HuggingFacePipeline`) and LangChain
        embeddings, as RAGAS's `from_langchain`."""
        return cls(llm, embedding_model, knowledge_graph, llm_context=llm_context)

    @classmethod
    def from_llama_index(
        cls, llm: Any, embedding_model: Any, knowledge_graph: Any = None, llm_context: str | None = None
    ) -> TestsetGenerator:
        """As RAGAS's `from_llama_index`. LlamaIndex's model objects are not mapped (a `ConfigError` says
        what to pass): give ours (a URL, a local directory, a `ModelSpec`) or LangChain's."""
        return cls(llm, embedding_model, knowledge_graph, llm_context=llm_context)

    def generate_with_langchain_docs(
        self,
        documents: Sequence[Any],
        testset_size: int,
        transforms: Any = None,
        transforms_llm: Any = None,
        transforms_embedding_model: Any = None,
        query_distribution: Sequence[tuple[Any, float]] | None = None,
        run_config: Any = None,
        callbacks: Any = None,
        token_usage_parser: Any = None,
        with_debugging_logs: bool = False,
        raise_exceptions: bool = True,
        return_executor: bool = False,
        *,
        seed: int | None = None,
        language: str = "auto",
        chunk_size: int = 512,
        chunk_overlap: int = 0,
        device: str | None = None,
        cache_dir: Any = None,
    ) -> RagasTestset:
        """A test set of `testset_size` rows from LangChain `Document`s (`page_content`, `metadata`; a
        document is named by its metadata's "source" or "filename"), chunked by the RAG pipeline's chunker.
        The other arguments: see the class.

        Raises:
            ConfigError: an argument that cannot be honoured or a bad setting, before any model loads.
            DataError: no document has text, or an item is no `Document`.
            BackendError: a model call failed; what was answered is cached, the same call resumes.
        """
        del transforms_llm, raise_exceptions  # see the class: nothing to do with them here
        run = Run(
            testset_size,
            query_distribution,
            run_config,
            with_debugging_logs,
            seed,
            language,
            device,
            cache_dir,
        )
        return self.from_corpus(
            lambda: documents_corpus(langchain_pairs(documents)),
            (chunk_size, chunk_overlap),
            transforms_embedding_model,
            run,
            transforms=transforms,
            callbacks=callbacks,
            token_usage_parser=token_usage_parser,
            return_executor=return_executor,
        )

    def generate_with_llamaindex_docs(
        self,
        documents: Sequence[Any],
        testset_size: int,
        transforms: Any = None,
        transforms_llm: Any = None,
        transforms_embedding_model: Any = None,
        query_distribution: Sequence[tuple[Any, float]] | None = None,
        run_config: Any = None,
        callbacks: Any = None,
        token_usage_parser: Any = None,
        with_debugging_logs: bool = False,
        raise_exceptions: bool = True,
        *,
        seed: int | None = None,
        language: str = "auto",
        chunk_size: int = 512,
        chunk_overlap: int = 0,
        device: str | None = None,
        cache_dir: Any = None,
    ) -> RagasTestset:
        """As `generate_with_langchain_docs`, from LlamaIndex `Document`s (`.text` or `.get_content()`,
        `.metadata`; "file_name" names one), read by their attributes: llama_index need not be installed.
        Blank documents are skipped, as RAGAS skips them."""
        del transforms_llm, raise_exceptions
        run = Run(
            testset_size,
            query_distribution,
            run_config,
            with_debugging_logs,
            seed,
            language,
            device,
            cache_dir,
        )
        return self.from_corpus(
            lambda: documents_corpus(llama_index_pairs(documents)),
            (chunk_size, chunk_overlap),
            transforms_embedding_model,
            run,
            transforms=transforms,
            callbacks=callbacks,
            token_usage_parser=token_usage_parser,
        )

    def generate_with_chunks(
        self,
        chunks: Sequence[Any],
        testset_size: int,
        transforms: Any = None,
        transforms_llm: Any = None,
        transforms_embedding_model: Any = None,
        query_distribution: Sequence[tuple[Any, float]] | None = None,
        run_config: Any = None,
        callbacks: Any = None,
        token_usage_parser: Any = None,
        with_debugging_logs: bool = False,
        raise_exceptions: bool = True,
        return_executor: bool = False,
        *,
        seed: int | None = None,
        language: str = "auto",
        device: str | None = None,
        cache_dir: Any = None,
    ) -> RagasTestset:
        """As `generate_with_langchain_docs`, from chunks already made (LangChain `Document`s or strings):
        each is one chunk, kept whole (the chunk size is the longest chunk's length), blank ones skipped."""
        del transforms_llm, raise_exceptions
        run = Run(
            testset_size,
            query_distribution,
            run_config,
            with_debugging_logs,
            seed,
            language,
            device,
            cache_dir,
        )
        return self.from_corpus(
            lambda: documents_corpus(langchain_pairs(chunks, strings=True, what="chunks")),
            (None, 0),
            transforms_embedding_model,
            run,
            transforms=transforms,
            callbacks=callbacks,
            token_usage_parser=token_usage_parser,
            return_executor=return_executor,
        )

    def generate(
        self,
        testset_size: int,
        query_distribution: Sequence[tuple[Any, float]] | None = None,
        num_personas: int = NUM_PERSONAS,
        run_config: Any = None,
        batch_size: int | None = None,
        callbacks: Any = None,
        token_usage_parser: Any = None,
        with_debugging_logs: bool = False,
        raise_exceptions: bool = True,
        return_executor: bool = False,
        *,
        seed: int | None = None,
        language: str = "auto",
        device: str | None = None,
        cache_dir: Any = None,
    ) -> RagasTestset:
        """More rows from the documents of the last generate method (RAGAS's `generate` writes from the
        knowledge graph that method built). The same seed gives the same rows again (from the request
        cache): pass another `seed=` for others. `batch_size` is accepted and unused (the engine batches).

        Raises:
            ConfigError: no generate method ran before (there is no knowledge graph to write from here),
                or see `generate_with_langchain_docs`.
        """
        del raise_exceptions
        check_unsupported(
            callbacks=callbacks, token_usage_parser=token_usage_parser, return_executor=return_executor
        )
        if batch_size is not None and (isinstance(batch_size, bool) or not isinstance(batch_size, int)):
            refuse("batch_size", batch_size, "pass a positive integer or None (it is unused here).")
        if self.source is None:
            raise ConfigError(
                "TestsetGenerator.generate() writes from the knowledge graph RAGAS builds from documents, "
                "which ascend-eval does not build. Call generate_with_langchain_docs(documents, "
                "testset_size) (or generate_with_llamaindex_docs / generate_with_chunks) first; generate() "
                "then writes more rows from the same documents."
            )
        run = Run(
            testset_size,
            query_distribution,
            run_config,
            with_debugging_logs,
            seed,
            language,
            device,
            cache_dir,
            num_personas,
        )
        return self.write(self.source, run)

    def from_corpus(
        self,
        read: Callable[[], list[dict[str, str]]],
        chunking: tuple[int | None, int],
        transforms_embedding_model: Any,
        run: Run,
        **unsupported: Any,
    ) -> RagasTestset:
        """What each `generate_with_*` method does once its arguments are named: refuse what cannot be
        honoured, then read the documents (`read`), then write. `chunking` is (chunk size, overlap); a size
        of None keeps every document one chunk (the longest one's length). Raises as
        `generate_with_langchain_docs` does."""
        check_unsupported(**unsupported)
        corpus = read()
        size, overlap = chunking
        if size is None:
            size = max(len(doc["text"].strip()) for doc in corpus)
        return self.write(Source(corpus, size, overlap, self.embedder_for(transforms_embedding_model)), run)

    def embedder_for(self, transforms_embedding_model: Any) -> Any:
        """The embedder: `transforms_embedding_model` when given (RAGAS embeds the chunks with it), else
        the generator's `embedding_model`."""
        if transforms_embedding_model is None:
            return self.embedder
        return embedder_arg(transforms_embedding_model, self.secrets, what="transforms_embedding_model")

    def chosen_personas(self, num_personas: Any, seed: int) -> list[tuple[str, str]]:
        """At most `num_personas` of `persona_list` (RAGAS shuffles the list and takes the first ones; here
        the seed shuffles it)."""
        if isinstance(num_personas, bool) or not isinstance(num_personas, int) or num_personas < 1:
            refuse("num_personas", num_personas, "pass an integer >= 1.")
        chosen = list(self.personas)
        random.Random(seed).shuffle(chosen)
        return chosen[:num_personas]

    def write(self, source: Source, run: Run) -> RagasTestset:
        """Check everything, then write the test set with `ascend_eval.testset.generate`.

        Raises:
            ConfigError: no llm or embedder, or a bad setting (before any model loads).
        """
        size = check_size(run.testset_size)
        if self.judge is None:
            refuse("llm", None, "a test set is written by an LLM; pass llm= (see evaluate's llm).")
        if source.embedder is None:
            refuse("embedding_model", None, "pass embedding_model= or transforms_embedding_model=.")
        plan = Distribution.of(run.query_distribution, self.llm, self.judge, self.secrets)
        seed = run.seed
        if seed is None:
            seed = getattr(run.run_config, "seed", 0) if run.run_config is not None else 0
        personas = self.chosen_personas(run.num_personas, seed)
        options: dict[str, Any] = {
            "kinds": plan.kinds,
            "personas": [text for text, _ in personas] or None,
            "language": run.language,
            "seed": seed,
            "chunk_size": source.chunk_size,
            "chunk_overlap": source.chunk_overlap,
        }
        TestsetConfig(size=size, **options)  # every setting checked before any model loads
        documents = load_corpus(source.corpus)
        self.source = source
        say: Callable[[str], None] | None = _to_stderr if run.with_debugging_logs else None
        judge = with_run_config(self.judge, run.run_config)
        embedder = with_run_config(source.embedder, run.run_config)
        with _runtimes(self.secrets, run.device, judge, embedder) as (judge, embedder):
            result = generate(
                documents,
                size,
                judge=judge,
                embedder=embedder,
                device=run.device,
                cache_dir=run.cache_dir,
                progress=say,
                **options,
            )
        if not result.complete:
            logger.warning("The test set has %d of %d rows:\n%s", len(result), size, result.summary())
        return RagasTestset(result, plan.names, dict(personas))
