"""RAGAS 0.4.3's `TestsetGenerator`, on ascend-eval: LangChain and LlamaIndex-shaped documents and
pre-made chunks, written end to end by the scripted judge of the test-set tests (in process, and behind
RAGAS's LangChain wrappers through a loopback server); RAGAS's columns and synthesizer names, the query
distribution and personas mapped, and every argument that cannot be honoured refused before any model
loads."""

from __future__ import annotations

import json
import math
from collections import Counter

import pytest
from langchain_core.callbacks import BaseCallbackHandler
from langchain_core.documents import Document
from ragas.testset.graph import KnowledgeGraph, Node, NodeType
from ragas.testset.persona import Persona
from ragas.testset.synthesizers import (
    MultiHopAbstractQuerySynthesizer,
    MultiHopSpecificQuerySynthesizer,
    SingleHopSpecificQuerySynthesizer,
)
from ragas.testset.synthesizers.testset_schema import Testset as RagasOwnTestset

import ascend_eval.ragas
from ascend_eval.errors import ConfigError, DataError
from ascend_eval.models.base import ClassifyRequest, GenerateRequest, Message
from ascend_eval.ragas.testset import RagasTestset, TestsetGenerator
from ascend_eval.testset import load_corpus
from tests.conftest import NgramEmbedder
from tests.models.loopback_server import CHAT, EMBEDDINGS, LoopbackServer, chat_reply, embeddings_reply
from tests.testset.conftest import scripted_judge, verdict_rule, write_rule

COLUMNS = ["user_input", "reference_contexts", "reference", "synthesizer_name"]
SINGLE, MULTI, ABSTRACT = (
    "single_hop_specific_query_synthesizer",
    "multi_hop_specific_query_synthesizer",
    "multi_hop_abstract_query_synthesizer",
)
CORPUS = load_corpus("ascend-eval/rag-mini-en")


def documents() -> list[Document]:
    """The English mini corpus as a LangChain loader gives it: one Document per file, named by "source"."""
    return [Document(page_content=d["text"], metadata={"source": f"docs/{d['id']}.md"}) for d in CORPUS]


@pytest.fixture
def judge():
    return scripted_judge()


@pytest.fixture
def embedder():
    return NgramEmbedder(dim=512)


def test_langchain_documents_give_ragas_columns_and_synthesizer_names(judge, embedder):
    generator = TestsetGenerator(judge, embedder)
    result = generator.generate_with_langchain_docs(documents(), testset_size=9, cache_dir=False)
    assert isinstance(result, RagasTestset) and len(result) == 9
    frame = result.to_pandas()
    assert list(frame.columns) == COLUMNS
    # RAGAS's default distribution: its three synthesizers in equal shares.
    assert Counter(frame["synthesizer_name"]) == {SINGLE: 3, MULTI: 3, ABSTRACT: 3}
    ours = result.testset
    assert ours.complete and ours.kinds() == {"single_hop": 3, "multi_hop": 3, "abstract": 3}
    for row, mine in zip(frame.to_dict("records"), ours.rows, strict=True):
        assert row["user_input"] == mine["question"] and row["user_input"].startswith("What is said about")
        assert row["reference"] == mine["ground_truth"]
        assert row["reference_contexts"] == mine["reference_contexts"]
        assert len(row["reference_contexts"]) == (
            1 if row["synthesizer_name"] == SINGLE else len(mine["source_chunks"])
        )
        # each document is named by its metadata's "source"
        assert all(chunk.startswith("docs/") and ".md#" in chunk for chunk in mine["source_chunks"])
    # the rows are what RAGAS's own Testset holds and gives
    own = result.to_ragas()
    assert isinstance(own, RagasOwnTestset) and own.to_list() == result.to_list()
    assert list(own.to_pandas().columns) == COLUMNS
    assert [s.synthesizer_name for s in result.samples] == list(frame["synthesizer_name"])
    dataset = result.to_evaluation_dataset()
    assert [s.user_input for s in dataset.samples] == list(frame["user_input"])
    # one batched call per request kind for the round, as `generate` makes them
    assert [kind for kind, _ in judge.calls] == ["generate", "classify"]


def test_the_jsonl_file_reads_back_with_ragas(judge, embedder, tmp_path):
    result = TestsetGenerator(judge, embedder).generate_with_langchain_docs(documents(), 4, cache_dir=False)
    path = result.to_jsonl(tmp_path / "testset.jsonl")
    lines = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
    assert lines == result.to_list()
    assert RagasOwnTestset.from_jsonl(path).to_list() == result.to_list()
    result.to_csv(tmp_path / "testset.csv")
    header = (tmp_path / "testset.csv").read_text(encoding="utf-8").splitlines()[0]
    assert header == ",".join(COLUMNS)


def test_debugging_logs_print_each_stage_and_round(judge, embedder, capsys):
    TestsetGenerator(judge, embedder).generate_with_langchain_docs(
        documents(), 3, with_debugging_logs=True, cache_dir=False
    )
    err = capsys.readouterr().err
    assert "14 documents, 28 chunks" in err and "round 1: 3 of 3 rows" in err


def test_only_single_hop_gives_only_single_hop_rows(judge, embedder):
    distribution = [(SingleHopSpecificQuerySynthesizer(llm=judge), 1.0)]
    result = TestsetGenerator(judge, embedder).generate_with_langchain_docs(
        documents(), 6, query_distribution=distribution, cache_dir=False
    )
    assert len(result) == 6 and set(result.to_pandas()["synthesizer_name"]) == {SINGLE}
    assert result.testset.kinds() == {"single_hop": 6} and set(result.testset.tried) == {"single_hop"}
    assert all(len(row["reference_contexts"]) == 1 for row in result.to_list())


def test_weights_are_normalised_and_a_synthesizer_keeps_its_name(judge, embedder):
    distribution = [
        (SingleHopSpecificQuerySynthesizer(llm=judge, name="facts"), 2),
        (MultiHopSpecificQuerySynthesizer(llm=judge), 1),
        (MultiHopAbstractQuerySynthesizer(llm=judge), 1),
    ]
    result = TestsetGenerator(judge, embedder).generate_with_langchain_docs(
        documents(), 8, query_distribution=distribution, cache_dir=False
    )
    assert Counter(result.to_pandas()["synthesizer_name"]) == {"facts": 4, MULTI: 2, ABSTRACT: 2}


class LlamaDocument:
    """A LlamaIndex `Document`'s shape (llama_index is not installed here): `text`, `metadata`."""

    def __init__(self, text: str, metadata: dict):
        self.text, self.metadata = text, metadata


class ContentOnly:
    """A LlamaIndex node read through `get_content()` only."""

    def __init__(self, text: str):
        self.text, self.metadata, self._content = None, {"file_name": "notes.txt"}, text

    def get_content(self) -> str:
        return self._content


def test_llama_index_shaped_documents(judge, embedder):
    docs = [LlamaDocument(d["text"], {"file_name": f"{d['id']}.txt"}) for d in CORPUS[:-1]]
    docs += [ContentOnly(CORPUS[-1]["text"]), LlamaDocument("   ", {"file_name": "blank.txt"})]
    result = TestsetGenerator.from_llama_index(judge, embedder).generate_with_llamaindex_docs(
        docs, 6, cache_dir=False
    )
    assert len(result) == 6 and list(result.to_pandas().columns) == COLUMNS
    chunks = {c.split("#")[0] for row in result.testset.rows for c in row["source_chunks"]}
    assert chunks <= {f"{d['id']}.txt" for d in CORPUS[:-1]} | {"notes.txt"}
    assert "blank.txt" not in chunks  # a blank document is skipped, as RAGAS skips it


def test_pages_that_share_a_source_get_their_own_names(judge, embedder):
    pages = [
        Document(page_content=d["text"], metadata={"source": "guide.pdf", "page": i})
        for i, d in enumerate(CORPUS)
    ]
    result = TestsetGenerator(judge, embedder).generate_with_langchain_docs(pages, 3, cache_dir=False)
    names = {c.split("#")[0] for row in result.testset.rows for c in row["source_chunks"]}
    assert names and all(n.startswith("guide.pdf:") for n in names)


def test_chunks_are_kept_whole(judge, embedder):
    chunks = [d["text"] for d in CORPUS[:6]] + [Document(page_content=d["text"]) for d in CORPUS[6:]]
    result = TestsetGenerator(judge, embedder).generate_with_chunks(chunks, 6, cache_dir=False)
    texts = {d["text"].strip() for d in CORPUS}
    assert len(result) == 6
    assert all(context in texts for row in result.to_list() for context in row["reference_contexts"])


def test_persona_list_asks_as_the_personas(judge, embedder):
    personas = [
        Persona(name="Ferry captain", role_description="Runs the morning crossing and knows the harbour."),
        "a first-time visitor",
    ]
    result = TestsetGenerator(judge, embedder, persona_list=personas).generate_with_langchain_docs(
        documents(), 10, seed=3, cache_dir=False
    )
    frame = result.to_pandas()
    assert list(frame.columns) == [
        "user_input",
        "reference_contexts",
        "reference",
        "persona_name",
        "synthesizer_name",
    ]
    assert set(frame["persona_name"]) == {"Ferry captain", "a first-time visitor"}
    for row in frame.to_dict("records"):
        asked = (
            "Ferry captain: Runs the morning crossing"
            if row["persona_name"] == "Ferry captain"
            else row["persona_name"]
        )
        assert row["user_input"].startswith(f"[{asked}")  # the scripted judge writes who asks
    assert {s.eval_sample.persona_name for s in result.samples} == set(frame["persona_name"])


def test_at_most_three_personas_ask_as_in_ragas(judge, embedder):
    personas = [f"reader number {i}" for i in range(6)]
    result = TestsetGenerator(judge, embedder, persona_list=personas).generate_with_langchain_docs(
        documents(), 12, cache_dir=False
    )
    assert 1 <= len(set(result.to_pandas()["persona_name"])) <= 3


def test_generate_writes_more_from_the_last_documents(judge, embedder):
    generator = TestsetGenerator(judge, embedder)
    with pytest.raises(ConfigError, match=r"generate_with_langchain_docs\(documents"):
        generator.generate(testset_size=3)
    first = generator.generate_with_langchain_docs(documents(), 3, cache_dir=False)
    more = generator.generate(3, seed=1, cache_dir=False)
    assert len(more) == 3 and more.to_list() != first.to_list()


def test_a_run_config_sets_the_seed(judge, embedder):
    from ragas.run_config import RunConfig

    generator = TestsetGenerator(judge, embedder)
    by_config = generator.generate_with_langchain_docs(
        documents(), 4, run_config=RunConfig(seed=5), cache_dir=False
    )
    by_seed = generator.generate_with_langchain_docs(documents(), 4, seed=5, cache_dir=False)
    assert by_config.to_list() == by_seed.to_list()


def test_ascend_eval_ragas_exports_the_generator():
    assert ascend_eval.ragas.TestsetGenerator is TestsetGenerator
    assert ascend_eval.ragas.RagasTestset is RagasTestset


class MyQuerySynthesizer:
    name = "my_query_synthesizer"


def _kg_with_a_node() -> KnowledgeGraph:
    return KnowledgeGraph(nodes=[Node(type=NodeType.DOCUMENT, properties={"page_content": "Tea."})])


@pytest.mark.parametrize(
    ("name", "build", "call"),
    [
        ("knowledge_graph", {"knowledge_graph": _kg_with_a_node()}, {}),
        ("llm_context", {"llm_context": "Write for engineers."}, {}),
        ("transforms", {}, {"transforms": [object()]}),
        ("callbacks", {}, {"callbacks": [BaseCallbackHandler()]}),
        ("token_usage_parser", {}, {"token_usage_parser": lambda result: None}),
        ("return_executor", {}, {"return_executor": True}),
        ("MyQuerySynthesizer", {}, {"query_distribution": [(MyQuerySynthesizer(), 1.0)]}),
        ("testset_size", {}, {"testset_size": 0}),
    ],
)
def test_what_cannot_be_honoured_is_refused_before_any_model_loads(judge, embedder, name, build, call):
    call = {"testset_size": 5, **call}
    with pytest.raises(ConfigError, match=name):
        TestsetGenerator(judge, embedder, **build).generate_with_langchain_docs(documents(), **call)
    assert judge.calls == [] and embedder.calls == []


def test_a_synthesizer_with_another_llm_or_context_is_refused(judge, embedder):
    generator = TestsetGenerator(judge, embedder)
    other = [(SingleHopSpecificQuerySynthesizer(llm=scripted_judge("another")), 1.0)]
    with pytest.raises(ConfigError, match=r"SingleHopSpecificQuerySynthesizer\.llm"):
        generator.generate_with_langchain_docs(documents(), 3, query_distribution=other)
    context = [(MultiHopAbstractQuerySynthesizer(llm=judge, llm_context="Be terse."), 1.0)]
    with pytest.raises(ConfigError, match=r"MultiHopAbstractQuerySynthesizer\.llm_context"):
        generator.generate_with_langchain_docs(documents(), 3, query_distribution=context)
    with pytest.raises(ConfigError, match="weight"):
        generator.generate_with_langchain_docs(
            documents(), 3, query_distribution=[(SingleHopSpecificQuerySynthesizer(llm=judge), -1)]
        )
    assert judge.calls == [] and embedder.calls == []


def test_an_empty_knowledge_graph_is_what_ragas_starts_with(judge, embedder):
    TestsetGenerator(judge, embedder, knowledge_graph=KnowledgeGraph())  # no error


def test_documents_that_are_not_documents_are_a_data_error(judge, embedder):
    with pytest.raises(DataError, match=r"documents\[1\]"):
        TestsetGenerator(judge, embedder).generate_with_langchain_docs([documents()[0], "text"], 3)
    with pytest.raises(DataError, match="None of the 2 documents"):
        TestsetGenerator(judge, embedder).generate_with_langchain_docs([Document(page_content=" ")] * 2, 3)


# --- behind RAGAS's LangChain wrappers, against the scripted judge served on 127.0.0.1 ---------------------


def _testset_route(body):
    """The scripted judge's rules, answering the chat requests the endpoint judge sends."""
    messages = tuple(Message(m["role"], m["content"]) for m in body["messages"])
    if not body.get("logprobs"):
        return chat_reply(write_rule(GenerateRequest(messages)), prompt_tokens=100, completion_tokens=20)
    p_yes, p_no = verdict_rule(ClassifyRequest(messages, ("Yes", "No")))
    top = [("Yes", math.log(p_yes)), ("No", math.log(p_no))]
    return chat_reply(
        "Yes" if p_yes > p_no else "No", prompt_tokens=100, completion_tokens=1, top_logprobs=top
    )


@pytest.fixture
def testset_server():
    with LoopbackServer() as s:
        s.route(CHAT, _testset_route)
        s.route(
            EMBEDDINGS, lambda body: embeddings_reply(NgramEmbedder(dim=512).embed(body["input"]).tolist())
        )
        s.enqueue("/v1/models", {"data": [{"id": "loopback-judge"}]})
        yield s


def test_ragas_langchain_wrappers_write_through_the_server(testset_server):
    from langchain_openai import ChatOpenAI, OpenAIEmbeddings
    from ragas.embeddings import LangchainEmbeddingsWrapper
    from ragas.llms import LangchainLLMWrapper
    from ragas.run_config import RunConfig

    url = f"{testset_server.url}/v1"
    llm = LangchainLLMWrapper(ChatOpenAI(base_url=url, model="judge", api_key="EMPTY", temperature=0))
    emb = LangchainEmbeddingsWrapper(OpenAIEmbeddings(base_url=url, model="embedder", api_key="EMPTY"))
    generator = TestsetGenerator(llm=llm, embedding_model=emb)
    distribution = [
        (SingleHopSpecificQuerySynthesizer(llm=llm), 0.5),
        (MultiHopSpecificQuerySynthesizer(llm=llm), 0.5),
    ]
    result = generator.generate_with_langchain_docs(
        documents(), 4, query_distribution=distribution, run_config=RunConfig(timeout=30), cache_dir=False
    )
    assert Counter(result.to_pandas()["synthesizer_name"]) == {SINGLE: 2, MULTI: 2}
    posts = [r for r in testset_server.requests if r.path != "/v1/models"]
    assert {r.body["model"] for r in posts} == {"judge", "embedder"}
    assert {r.headers.get("authorization") for r in posts} == {"Bearer EMPTY"}
    # from_langchain takes the unwrapped LangChain objects, as RAGAS's does
    plain = TestsetGenerator.from_langchain(llm.langchain_llm, emb.embeddings)
    assert plain.judge == generator.judge and plain.embedder == generator.embedder
