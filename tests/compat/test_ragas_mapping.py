"""How RAGAS's objects map onto ours: every supported metric class of both families with its parameters,
the LLM and embedding clients (endpoint, model, key source, decoding, timeouts), and the clear errors for
what cannot be mapped."""

from __future__ import annotations

import os

import pytest

import ascend_eval.metrics as ours
from ascend_eval.errors import ConfigError
from ascend_eval.ragas import EvaluationDataset, evaluate
from ascend_eval.ragas.metrics import RAGAS_DEFAULT_METRICS, map_metric, map_metrics
from ascend_eval.ragas.models import KEY_VARIABLE, Secrets, embedder_arg, judge_arg, with_run_config
from tests.compat.test_ragas_shim import ROWS
from tests.models.loopback_server import CHAT, EMBEDDINGS

URL = "http://127.0.0.1:9/v1"


def _openai(url: str = URL, key: str = "sk-test"):
    from openai import OpenAI

    return OpenAI(base_url=url, api_key=key)


def _instructor(model: str = "judge", url: str = URL, **kwargs):
    from ragas.llms import llm_factory

    return llm_factory(model, client=_openai(url), **kwargs)


def _modern_embeddings(url: str = URL):
    from ragas.embeddings import embedding_factory

    return embedding_factory("openai", model="embedder", client=_openai(url))


LEGACY = [
    # (class name, constructor kwargs, our class, our params, result column)
    ("Faithfulness", {}, ours.Faithfulness, {}, "faithfulness"),
    (
        "AnswerCorrectness",
        {"weights": [0.5, 0.5], "beta": 2.0},
        ours.AnswerCorrectness,
        {"weights": [0.5, 0.5], "beta": 2.0},
        "answer_correctness",
    ),
    # coverage is our default; the drop-in's ragas_compat=True leaves it out of the score
    (
        "AnswerRelevancy",
        {"strictness": 5},
        ours.AnswerRelevancy,
        {"strictness": 5, "coverage": True},
        "answer_relevancy",
    ),
    (
        "ResponseRelevancy",
        {"strictness": 2},
        ours.AnswerRelevancy,
        {"strictness": 2, "coverage": True},
        "answer_relevancy",
    ),
    (
        "SemanticSimilarity",
        {"threshold": 0.8},
        ours.AnswerSimilarity,
        {"method": "embedding", "threshold": 0.8},
        "semantic_similarity",
    ),
    (
        "AnswerSimilarity",
        {},
        ours.AnswerSimilarity,
        {"method": "embedding", "threshold": None},
        "answer_similarity",
    ),
    ("ContextEntityRecall", {}, ours.ContextEntityRecall, {"extractor": "judge"}, "context_entity_recall"),
    ("ContextPrecision", {}, ours.ContextPrecision, {}, "context_precision"),
    (
        "LLMContextPrecisionWithReference",
        {},
        ours.ContextPrecision,
        {},
        "llm_context_precision_with_reference",
    ),
    ("ContextUtilization", {}, ours.ContextUtilization, {}, "context_utilization"),
    (
        "LLMContextPrecisionWithoutReference",
        {},
        ours.ContextUtilization,
        {},
        "llm_context_precision_without_reference",
    ),
    ("ContextRecall", {}, ours.ContextRecall, {}, "context_recall"),
    ("LLMContextRecall", {}, ours.ContextRecall, {}, "context_recall"),
    ("NoiseSensitivity", {}, ours.NoiseSensitivity, {"mode": "relevant"}, "noise_sensitivity(mode=relevant)"),
    (
        "NoiseSensitivity",
        {"mode": "irrelevant"},
        ours.NoiseSensitivity,
        {"mode": "irrelevant"},
        "noise_sensitivity(mode=irrelevant)",
    ),
    ("AnswerAccuracy", {}, ours.AnswerAccuracy, {}, "nv_accuracy"),
    ("ContextRelevance", {}, ours.ContextRelevance, {}, "nv_context_relevance"),
    ("ResponseGroundedness", {}, ours.ResponseGroundedness, {}, "nv_response_groundedness"),
]


@pytest.mark.parametrize(("name", "kwargs", "cls", "params", "column"), LEGACY)
def test_each_legacy_metric_maps_with_its_parameters(name, kwargs, cls, params, column):
    import ragas.metrics

    mapped = map_metric(getattr(ragas.metrics, name)(**kwargs))
    assert type(mapped.metric) is cls
    assert mapped.metric.params == params
    assert mapped.column == column


COLLECTIONS = [
    ("Faithfulness", {}, ours.Faithfulness, {}, "faithfulness"),
    (
        "AnswerCorrectness",
        {"weights": [0.9, 0.1], "beta": 0.5, "embeddings": True},
        ours.AnswerCorrectness,
        {"weights": [0.9, 0.1], "beta": 0.5},
        "answer_correctness",
    ),
    (
        "AnswerRelevancy",
        {"strictness": 4, "embeddings": True},
        ours.AnswerRelevancy,
        {"strictness": 4, "coverage": True},
        "answer_relevancy",
    ),
    ("ContextEntityRecall", {}, ours.ContextEntityRecall, {"extractor": "judge"}, "context_entity_recall"),
    ("ContextPrecision", {}, ours.ContextPrecision, {}, "context_precision"),
    ("ContextPrecisionWithReference", {}, ours.ContextPrecision, {}, "context_precision_with_reference"),
    ("ContextUtilization", {}, ours.ContextUtilization, {}, "context_utilization"),
    (
        "ContextPrecisionWithoutReference",
        {},
        ours.ContextUtilization,
        {},
        "context_precision_without_reference",
    ),
    ("ContextRecall", {}, ours.ContextRecall, {}, "context_recall"),
    (
        "NoiseSensitivity",
        {"mode": "irrelevant"},
        ours.NoiseSensitivity,
        {"mode": "irrelevant"},
        "noise_sensitivity",
    ),
    ("AnswerAccuracy", {}, ours.AnswerAccuracy, {}, "answer_accuracy"),
    ("ContextRelevance", {}, ours.ContextRelevance, {}, "context_relevance"),
    ("ResponseGroundedness", {}, ours.ResponseGroundedness, {}, "response_groundedness"),
]


@pytest.mark.parametrize(("name", "kwargs", "cls", "params", "column"), COLLECTIONS)
def test_each_collections_metric_maps_with_its_parameters_and_models(name, kwargs, cls, params, column):
    from ragas.metrics import collections

    kwargs = dict(kwargs)
    if kwargs.pop("embeddings", False):
        kwargs["embeddings"] = _modern_embeddings()
    llm = _instructor()
    mapped = map_metric(getattr(collections, name)(llm=llm, **kwargs))
    assert type(mapped.metric) is cls
    assert mapped.metric.params == params
    assert mapped.column == column
    assert mapped.llm is llm  # a collections metric carries its judge


def test_collections_semantic_similarity_maps_with_its_threshold():
    from ragas.metrics.collections import SemanticSimilarity

    mapped = map_metric(SemanticSimilarity(embeddings=_modern_embeddings(), threshold=0.7))
    assert mapped.metric.params == {"method": "embedding", "threshold": 0.7}
    assert mapped.column == "semantic_similarity"


def test_no_metrics_means_ragas_default_four_and_names_still_work():
    assert [m.column for m in map_metrics(None)] == list(RAGAS_DEFAULT_METRICS)
    assert map_metrics(["semantic_similarity"])[0].metric.name == "answer_similarity"


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (
            lambda m: m.SummarizationScore(),
            r"ragas\.metrics\.SummarizationScore \('summary_score'\): it is not one of the twelve .*evaluate",
        ),
        (lambda m: m.FactualCorrectness(), r"FactualCorrectness .*Use AnswerCorrectness\(\)"),
        (
            lambda m: type("MyFaithfulness", (m.Faithfulness,), {})(),
            r"MyFaithfulness .*subclasses Faithfulness.*Pass Faithfulness\(\) itself",
        ),
    ],
)
def test_legacy_metrics_we_do_not_compute_are_refused_with_the_replacement(make, message):
    import ragas.metrics

    with pytest.raises(ConfigError, match=message):
        map_metric(make(ragas.metrics))


def test_collections_metrics_we_do_not_compute_are_refused():
    from ragas.metrics.collections import ExactMatch

    with pytest.raises(ConfigError, match=r"ragas\.metrics\.collections\.ExactMatch .*choose from"):
        map_metric(ExactMatch())


def test_an_edited_prompt_is_refused_rather_than_silently_replaced():
    from ragas.metrics import Faithfulness

    metric = Faithfulness()
    metric.statement_generator_prompt.instruction = "Split the answer into words."
    with pytest.raises(
        ConfigError, match=r"Faithfulness\.statement_generator_prompt has a changed instruction"
    ):
        map_metric(metric)


def test_two_metrics_ragas_names_alike_are_refused_and_non_metrics_are_named():
    from ragas.metrics import ContextRecall, LLMContextRecall

    with pytest.raises(ConfigError, match="two entries named 'context_recall'"):
        map_metrics([LLMContextRecall(), ContextRecall()])
    with pytest.raises(ConfigError, match="must be a list"):
        map_metrics(ContextRecall())
    with pytest.raises(ConfigError, match=r"holds int .*not a metric"):
        map_metrics([3])


def test_chat_openai_maps_to_an_endpoint_spec(monkeypatch):
    from langchain_openai import ChatOpenAI
    from ragas.llms import LangchainLLMWrapper

    monkeypatch.setenv("MY_JUDGE_KEY", "sk-from-env")
    chat = ChatOpenAI(
        base_url=URL,
        model="qwen",
        api_key=os.environ["MY_JUDGE_KEY"],
        temperature=0.3,
        max_tokens=256,
        timeout=12,
        max_retries=4,
    )
    secrets = Secrets()
    spec = judge_arg(chat, secrets)
    assert (spec.model, spec.role, spec.served_model_name) == (URL, "judge", "qwen")
    assert (spec.temperature, spec.max_tokens, spec.request_timeout, spec.max_retries) == (0.3, 256, 12.0, 4)
    assert spec.api_key_env == "MY_JUDGE_KEY" and not secrets.keys  # the key's own variable, no copy
    # LangchainLLMWrapper applies RAGAS's RunConfig() to the model it wraps (timeout 180 s), as RAGAS runs it.
    wrapped = judge_arg(LangchainLLMWrapper(chat), secrets)
    assert wrapped == spec.replace(request_timeout=180.0)


def test_a_key_written_into_the_script_is_handed_over_only_while_the_client_is_built():
    from langchain_openai import ChatOpenAI

    secrets = Secrets()
    spec = judge_arg(ChatOpenAI(base_url=URL, model="m", api_key="sk-literal-7"), secrets)
    assert spec.api_key_env == KEY_VARIABLE.format(0) and spec in secrets
    assert "sk-literal-7" not in spec.model_dump_json()
    assert spec.api_key_env not in os.environ
    with secrets.exposed():
        assert os.environ[spec.api_key_env] == "sk-literal-7"
    assert spec.api_key_env not in os.environ


def test_llm_factory_maps_its_client_and_changed_model_args():
    spec = judge_arg(_instructor("llama", max_tokens=300), Secrets())
    assert (spec.model, spec.served_model_name, spec.max_tokens) == (URL, "llama", 300)
    assert spec.temperature is None and spec.top_p is None  # RAGAS's defaults: ours (greedy) stay


def test_run_config_sets_the_endpoint_client():
    from ragas import RunConfig

    spec = judge_arg(_instructor(), Secrets())
    tuned = with_run_config(spec, RunConfig(timeout=33, max_retries=2, max_workers=5))
    assert (tuned.request_timeout, tuned.max_retries, tuned.parallelism) == (33.0, 2, 5)
    assert with_run_config("/models/qwen", RunConfig()) == "/models/qwen"  # a local model: nothing to set


def test_openai_embeddings_map_to_an_endpoint_spec():
    from langchain_openai import OpenAIEmbeddings
    from ragas.embeddings import LangchainEmbeddingsWrapper

    spec = embedder_arg(
        LangchainEmbeddingsWrapper(OpenAIEmbeddings(base_url=URL, model="bge", api_key="k")), Secrets()
    )
    assert (spec.model, spec.role, spec.served_model_name) == (URL, "embedder", "bge")
    modern = embedder_arg(_modern_embeddings(), Secrets())
    assert (modern.model, modern.served_model_name) == (URL, "embedder")
    with pytest.raises(ConfigError, match=r"dimensions=64"):
        embedder_arg(OpenAIEmbeddings(base_url=URL, model="bge", api_key="k", dimensions=64), Secrets())


def test_our_own_model_arguments_pass_through():
    assert judge_arg("/models/qwen", Secrets()) == "/models/qwen"
    assert embedder_arg("multilingual-e5-small", Secrets()) == "multilingual-e5-small"


def test_llms_we_cannot_reach_are_refused_with_the_replacement():
    from langchain_core.language_models.fake_chat_models import FakeListChatModel
    from langchain_openai import AzureChatOpenAI
    from ragas.llms import LangchainLLMWrapper

    with pytest.raises(ConfigError, match=r"llm \(LangchainLLMWrapper\) is .*FakeListChatModel.*ChatOpenAI"):
        judge_arg(LangchainLLMWrapper(FakeListChatModel(responses=["x"])), Secrets())
    azure = AzureChatOpenAI(
        azure_endpoint="https://x.openai.azure.com",
        api_version="2024-06-01",
        api_key="k",
        azure_deployment="d",
    )
    with pytest.raises(ConfigError, match="Azure OpenAI deployments are not mapped"):
        judge_arg(azure, Secrets())


@pytest.mark.slow
def test_hugging_face_embeddings_of_a_local_directory_run_here(server):
    from langchain_community.embeddings import HuggingFaceEmbeddings
    from ragas.metrics import SemanticSimilarity

    from tests.tiny_models import minilm_dir

    local = HuggingFaceEmbeddings(model_name=str(minilm_dir()), model_kwargs={"device": "cpu"})
    spec = embedder_arg(local, Secrets())
    assert (spec.model, spec.role, spec.device) == (str(minilm_dir()), "embedder", "cpu")
    result = evaluate(
        EvaluationDataset.from_list(ROWS),
        [SemanticSimilarity()],
        embeddings=local,
        show_progress=False,
        cache_dir=False,
    )
    assert 0.5 < result["semantic_similarity"][1] < 1.0 and not server.requests


def test_collections_metrics_run_on_their_own_models(server):
    from ragas.metrics.collections import Faithfulness, SemanticSimilarity

    url = f"{server.url}/v1"
    metrics = [
        Faithfulness(llm=_instructor("judge-c", url)),
        SemanticSimilarity(embeddings=_modern_embeddings(url)),
    ]
    result = evaluate(EvaluationDataset.from_list(ROWS), metrics, show_progress=False, cache_dir=False)
    assert list(result.scores[0]) == ["faithfulness", "semantic_similarity"]
    assert result["faithfulness"] == [0.5, 0.0]
    assert {b["model"] for b in server.bodies(CHAT)} == {"judge-c"}
    assert {b["model"] for b in server.bodies(EMBEDDINGS)} == {"embedder"}
    assert not [name for name in os.environ if name.startswith(KEY_VARIABLE.format(""))]


def test_metrics_with_their_own_judge_run_apart_and_merge(server):
    from langchain_openai import ChatOpenAI
    from ragas.llms import LangchainLLMWrapper
    from ragas.metrics import Faithfulness, LLMContextRecall

    url = f"{server.url}/v1"
    own = LangchainLLMWrapper(ChatOpenAI(base_url=url, model="judge-a", api_key="EMPTY"))
    shared = LangchainLLMWrapper(ChatOpenAI(base_url=url, model="judge-b", api_key="EMPTY"))
    result = evaluate(
        EvaluationDataset.from_list(ROWS),
        [Faithfulness(llm=own), LLMContextRecall()],
        llm=shared,
        show_progress=False,
        cache_dir=False,
    )
    assert result["faithfulness"] == [0.5, 0.0] and result["context_recall"] == [1.0, 1.0]
    assert {b["model"] for b in server.bodies(CHAT)} == {"judge-a", "judge-b"}
    assert len(result.evaluation.provenance["runs"]) == 2


def test_two_entries_of_one_of_our_metrics_with_different_parameters_are_refused(server):
    from langchain_openai import OpenAIEmbeddings
    from ragas.metrics import AnswerSimilarity, SemanticSimilarity

    emb = OpenAIEmbeddings(base_url=f"{server.url}/v1", model="embedder", api_key="EMPTY")
    data = EvaluationDataset.from_list(ROWS)
    with pytest.raises(ConfigError, match=r"SemanticSimilarity\(\) and AnswerSimilarity\(\).*two evaluate"):
        evaluate(data, [SemanticSimilarity(threshold=0.5), AnswerSimilarity()], embeddings=emb)
    same = evaluate(
        data, [SemanticSimilarity(), AnswerSimilarity()], embeddings=emb, show_progress=False, cache_dir=False
    )
    assert same["semantic_similarity"] == same["answer_similarity"]
    assert len(server.bodies(EMBEDDINGS)) >= 1 and not server.bodies(CHAT)


@pytest.mark.slow
def test_a_hugging_face_pipeline_of_a_local_directory_is_a_local_judge(tiny_llama_dir):
    from langchain_community.llms import HuggingFacePipeline
    from ragas.llms import LangchainLLMWrapper

    local = HuggingFacePipeline.from_model_id(model_id=str(tiny_llama_dir), task="text-generation")
    spec = judge_arg(LangchainLLMWrapper(local), Secrets())
    assert (spec.model, spec.role, spec.is_endpoint) == (str(tiny_llama_dir), "judge", False)
    hub = HuggingFacePipeline(pipeline=local.pipeline, model_id="Qwen/Qwen2.5-7B-Instruct")
    with pytest.raises(ConfigError, match=r"model_id='Qwen/Qwen2.5-7B-Instruct', which is not a local dir"):
        judge_arg(hub, Secrets())
