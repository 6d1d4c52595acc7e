"""A RAGAS 0.4 user's script, with only its `from ragas import ...` line changed, runs on ascend-eval
against a scripted judge server on 127.0.0.1; the result has RAGAS's surface."""

from __future__ import annotations

import asyncio
import math
import os
import subprocess
import sys
from pathlib import Path

import pytest

from ascend_eval.errors import BackendError, ConfigError
from ascend_eval.ragas import EvaluationDataset, RagasResult, aevaluate, evaluate
from tests.models.loopback_server import CHAT, Reply
from tests.test_api_endpoints import judge_route

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "ragas_user.py"

ROWS = [
    {
        "user_input": "Where is the Eiffel Tower?",
        "retrieved_contexts": ["The Eiffel Tower is in Paris."],
        "response": "The Eiffel Tower is in Paris. It is made of cheese.",
        "reference": "The Eiffel Tower is in Paris.",
    },
    {
        "user_input": "What is Australia's capital?",
        "retrieved_contexts": ["Canberra is Australia's capital."],
        "response": "Sydney is Australia's capital.",
        "reference": "Canberra is Australia's capital.",
    },
]


def test_the_example_differs_from_a_ragas_script_only_in_its_import_line():
    lines = EXAMPLE.read_text(encoding="utf-8").splitlines()
    ours = [line for line in lines if "ascend_eval" in line]
    assert ours == [line for line in lines if line.startswith("from ascend_eval.ragas import")]
    assert len(ours) == 1 and ours[0].split("#")[0].strip().endswith("EvaluationDataset, evaluate")


def test_the_example_script_runs_against_the_scripted_judge(server, tmp_path):
    env = {**os.environ, "JUDGE_BASE_URL": f"{server.url}/v1", "ASCEND_EVAL_HOME": str(tmp_path)}
    env["PYTHONWARNINGS"] = "ignore::DeprecationWarning"
    run = subprocess.run(
        [sys.executable, str(EXAMPLE)], env=env, capture_output=True, text=True, timeout=300, cwd=tmp_path
    )
    assert run.returncode == 0, run.stderr[-3000:]
    # Eiffel: 1 of 1 statements supported; Sydney: 0 of 1. Context recall: each reference is its context.
    first = run.stdout.splitlines()[0]
    assert first.startswith("{'faithfulness': 0.5000, 'context_recall': 1.0000, 'semantic_similarity': ")
    assert "semantic_similarity" in run.stdout.splitlines()[1]
    # the judge asks once whether the server is vLLM (for its loop guard), then only posts
    paths = [r.path for r in server.requests]
    assert set(paths) == {"/v1/models", "/v1/chat/completions", "/v1/embeddings"}
    assert paths.count("/v1/models") == 1
    assert {r.headers.get("authorization") for r in server.requests} == {"Bearer EMPTY"}
    posts = [r for r in server.requests if r.path != "/v1/models"]
    assert {r.body["model"] for r in posts} == {"judge", "embedder"}


@pytest.fixture
def wrapped(server):
    """The RAGAS objects of the example, pointed at the server."""
    from langchain_openai import ChatOpenAI, OpenAIEmbeddings
    from ragas.embeddings import LangchainEmbeddingsWrapper
    from ragas.llms import LangchainLLMWrapper

    url = f"{server.url}/v1"
    llm = LangchainLLMWrapper(ChatOpenAI(base_url=url, model="judge", api_key="EMPTY", temperature=0))
    emb = LangchainEmbeddingsWrapper(OpenAIEmbeddings(base_url=url, model="embedder", api_key="EMPTY"))
    return llm, emb


def _run(wrapped, metrics, **kwargs) -> RagasResult:
    llm, emb = wrapped
    data = EvaluationDataset.from_list(ROWS)
    return evaluate(data, metrics=metrics, llm=llm, embeddings=emb, show_progress=False, **kwargs)


def test_the_result_has_ragas_surface(server, wrapped):
    from ragas.metrics import Faithfulness, NoiseSensitivity, SemanticSimilarity

    metrics = [Faithfulness(), SemanticSimilarity(), NoiseSensitivity(mode="irrelevant")]
    result = _run(wrapped, metrics, cache_dir=False)
    columns = ["faithfulness", "semantic_similarity", "noise_sensitivity(mode=irrelevant)"]
    assert [list(s) for s in result.scores] == [columns, columns]
    assert result["faithfulness"] == [0.5, 0.0]
    assert [s["faithfulness"] for s in result.scores] == [0.5, 0.0]
    assert result["semantic_similarity"][1] < 1.0
    with pytest.raises(KeyError, match="answer_similarity"):
        result["answer_similarity"]
    means = result.means()
    assert repr(result) == "{" + ", ".join(f"'{k}': {v:0.4f}" for k, v in means.items()) + "}"
    assert repr(result).startswith("{'faithfulness': 0.2500, 'semantic_similarity': ")
    frame = result.to_pandas()
    # RAGAS's to_pandas: the dataset's columns (in its order), then the scores.
    assert list(frame.columns) == ["user_input", "retrieved_contexts", "response", "reference", *columns]
    assert list(frame.columns[:4]) == list(EvaluationDataset.from_list(ROWS).to_pandas().columns)
    assert frame["retrieved_contexts"][0] == ["The Eiffel Tower is in Paris."]
    tokens = result.total_tokens()
    assert type(tokens).__module__ == "ragas.cost"
    # The scripted server reports 120 prompt tokens per statements call, 100 per verdict.
    bodies = server.bodies(CHAT)
    generated = sum(1 for b in bodies if b.get("response_format"))
    assert tokens.input_tokens == 120 * generated + 100 * (len(bodies) - generated) > 0
    assert result.total_cost(cost_per_input_token=1.0, cost_per_output_token=0.0) == tokens.input_tokens
    assert result.evaluation.nan_reasons("faithfulness") == {}


def test_raise_exceptions_false_gives_nan_and_true_raises(server, wrapped):
    from ragas.metrics import Faithfulness

    def flaky(body):
        if "Sydney" in str(body["messages"]):
            return Reply({"error": {"message": "bad request"}}, status=400)
        return judge_route(body)

    server.route(CHAT, flaky)
    result = _run(wrapped, [Faithfulness()], cache_dir=False)
    assert result["faithfulness"][0] == 0.5 and math.isnan(result["faithfulness"][1])
    assert result.means()["faithfulness"] == 0.5  # RAGAS's nanmean
    assert repr(result) == "{'faithfulness': 0.5000}"
    with pytest.raises(BackendError, match=r"faithfulness, sample 1 .*backend_error.*raise_exceptions=False"):
        _run(wrapped, [Faithfulness()], cache_dir=False, raise_exceptions=True)


def test_ragas_arguments_map_onto_the_engine(wrapped):
    from ragas import RunConfig
    from ragas.metrics import Faithfulness

    rounds = []
    result = _run(
        wrapped,
        [Faithfulness()],
        cache_dir=False,
        run_config=RunConfig(timeout=30, max_retries=1, max_workers=2),
        batch_size=1,
        experiment_name="shim",
        token_usage_parser=lambda r: None,
        on_round=rounds.append,
    )
    assert rounds and result.evaluation.provenance["experiment_name"] == "shim"
    assert result.evaluation.provenance["ragas_compat"] is True


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"callbacks": [object()]}, "callbacks"),
        ({"return_executor": True}, "return_executor"),
        ({"batch_size": 0}, "batch_size"),
    ],
)
def test_ragas_arguments_we_cannot_honour_are_refused(wrapped, kwargs, message):
    from ragas.metrics import Faithfulness

    with pytest.raises(ConfigError, match=message):
        _run(wrapped, [Faithfulness()], cache_dir=False, **kwargs)


def test_a_metric_without_a_judge_is_refused_rather_than_sent_to_openai():
    from ragas.metrics import Faithfulness

    with pytest.raises(ConfigError, match=r"Faithfulness\(\) needs a judge LLM .*gpt-4o-mini"):
        evaluate(EvaluationDataset.from_list(ROWS), metrics=[Faithfulness()])


def test_aevaluate_and_other_datasets_with_a_column_map(wrapped):
    from ragas.metrics import Faithfulness

    llm, _ = wrapped
    legacy = {
        "query": [r["user_input"] for r in ROWS],
        "contexts": [r["retrieved_contexts"] for r in ROWS],
        "answer": [r["response"] for r in ROWS],
    }
    result = asyncio.run(
        aevaluate(
            legacy,
            [Faithfulness()],
            llm=llm,
            column_map={"user_input": "query"},
            show_progress=False,
            cache_dir=False,
        )
    )
    assert result["faithfulness"] == [0.5, 0.0]
    assert list(result.to_pandas().columns) == [
        "user_input",
        "retrieved_contexts",
        "response",
        "faithfulness",
    ]


def test_the_other_names_of_ragas_top_level_are_ragas_own():
    import ragas

    import ascend_eval.ragas as shim

    for name in ("EvaluationDataset", "SingleTurnSample", "MultiTurnSample", "RunConfig"):
        assert getattr(shim, name) is getattr(ragas, name)
    assert shim.EvaluationResult is RagasResult
    with pytest.raises(AttributeError, match="no attribute 'Evaluate'"):
        shim.Evaluate  # noqa: B018
