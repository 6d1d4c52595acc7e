"""`ascend_eval.mxrag`: the Ascend RAG SDK's RAGEvaluator on our engine, end to end over real HTTP.

The SDK user's script (examples/mxrag_user.py, the SDK's own example with the imports changed) runs as a
subprocess against a scripted OpenAI-compatible judge and a TEI stand-in, both on 127.0.0.1."""

from __future__ import annotations

import json
import logging
import math
import os
import subprocess
import sys
from pathlib import Path

import pytest

from ascend_eval.models.errors import BackendError, ConfigError, MissingDependencyError
from ascend_eval.models.spec import ModelSpec
from ascend_eval.mxrag import (
    LANGUAGES,
    ClientParam,
    RAGEvaluator,
    TEIEmbedding,
    Text2TextLLM,
    TextEmbedding,
    embedder_of,
    judge_of,
)
from tests.compat.judge_standin import judge_route
from tests.models.loopback_server import CHAT, EMBEDDINGS, LoopbackServer, Reply
from tests.models.tei_standin import EMBED, INFO, TeiStandIn

ROOT = Path(__file__).resolve().parents[2]
# The stand-in judge says p(supported) = 0.9 for a claim its context holds and 0.3 otherwise. Calibration
# (on by default) puts the threshold at the midpoint of those log-odds and scales them so that its anchors,
# answered the same way, read 0.9 and 0.1: a held claim reads 0.9 and an unheld one 0.1.
HELD = 0.9
SDK_KEYS = ["faithfulness", "answer_relevancy", "context_precision", "context_recall", "semantic_similarity"]


@pytest.fixture
def judge():
    with LoopbackServer() as server:
        server.route(CHAT, judge_route)
        yield server


@pytest.fixture
def tei():
    with LoopbackServer() as server:
        yield TeiStandIn(server).install()


def _evaluator(judge, tei, **kwargs) -> RAGEvaluator:
    return RAGEvaluator(
        llm=Text2TextLLM(base_url=judge.url + CHAT, model_name="loopback-judge"),
        embeddings=TEIEmbedding(url=tei.url + EMBED),
        cache_dir=False,
        **kwargs,
    )


def _dataset(n: int = 3) -> dict[str, list]:
    rows = [
        ("谁提出了相对论？", "爱因斯坦提出了相对论。", ["爱因斯坦提出了相对论。"], "爱因斯坦提出了相对论。"),
        ("水在几度沸腾？", "水在一百度沸腾。", ["标准气压下水在一百度沸腾。"], "水在一百摄氏度沸腾。"),
        ("Who wrote Hamlet?", "Shakespeare wrote Hamlet.", ["Hamlet is a play."], "William Shakespeare."),
    ]
    picked = [rows[i % 3] for i in range(n)]
    return {
        "user_input": [f"{q} #{i}" for i, (q, *_) in enumerate(picked)],
        "response": [r[1] for r in picked],
        "retrieved_contexts": [r[2] for r in picked],
        "reference": [r[3] for r in picked],
    }


def _run_example(judge, tei, tmp_path, **env) -> subprocess.CompletedProcess:
    environment = {
        **os.environ,
        "JUDGE_URL": judge.url + CHAT,
        "JUDGE_MODEL": "loopback-judge",
        "TEI_URL": tei.url + EMBED,
        "ASCEND_EVAL_HOME": str(tmp_path / "home"),
        **env,
    }
    return subprocess.run(
        [sys.executable, str(ROOT / "examples" / "mxrag_user.py")],
        cwd=ROOT,
        env=environment,
        capture_output=True,
        text=True,
        timeout=300,
    )


def _printed(stdout: str) -> dict[str, list[float]]:
    """The dict the script printed (Python's repr; NaN prints as nan)."""
    return eval(stdout.strip().splitlines()[-1], {"__builtins__": {}}, {"nan": math.nan})


def test_the_sdk_users_script_runs_with_only_its_imports_changed(judge, tei, tmp_path):
    done = _run_example(judge, tei, tmp_path)
    assert done.returncode == 0, done.stderr[-3000:]
    scores = _printed(done.stdout)
    assert list(scores) == SDK_KEYS  # the SDK's keys: answer_similarity comes back as semantic_similarity
    assert all(len(v) == 3 and all(0.0 <= s <= 1.0 for s in v) for v in scores.values()), scores
    # "牛顿发明了电话" is in no context: one held claim and one not, (HELD + 1 - HELD) / 2
    assert scores["faithfulness"] == pytest.approx([HELD, HELD, 0.5])
    chats = judge.bodies(CHAT)
    assert chats and all(b["model"] == "loopback-judge" for b in chats)
    assert any("输入: {" in b["messages"][-1]["content"] for b in chats)  # language="chinese": zh prompts
    paths = {r.path for r in tei.server.requests}
    assert paths == {INFO, EMBED}  # TEI's native API, never /embed/v1/embeddings


def test_more_than_128_samples_are_scored(judge, tei, tmp_path):
    done = _run_example(judge, tei, tmp_path, REPEAT="45")
    assert done.returncode == 0, done.stderr[-3000:]
    scores = _printed(done.stdout)
    assert {len(v) for v in scores.values()} == {135}
    assert max(tei.batches) <= tei.max_client_batch_size  # batched to the server's limit, not one call


def test_positional_arguments_in_the_sdks_order(judge, tei):
    scores = _evaluator(judge, tei).evaluate(["answer_similarity"], _dataset(), "english", None, False)
    assert list(scores) == ["semantic_similarity"] and len(scores["semantic_similarity"]) == 3


def test_our_specs_work_as_llm_and_embeddings(judge, tei):
    evaluator = RAGEvaluator(
        ModelSpec(model=judge.url + "/v1", served_model_name="loopback-judge"),
        ModelSpec(model=tei.url + EMBED, request_timeout=10),
        cache_dir=False,
    )
    scores = evaluator.evaluate(["faithfulness", "answer_similarity"], _dataset(), language="chinese")
    assert list(scores) == ["faithfulness", "semantic_similarity"]
    assert scores["faithfulness"][0] == pytest.approx(HELD)


@pytest.mark.parametrize(("language", "marker"), [("chinese", "输入: {"), ("english", "Input: {")])
def test_language_picks_the_prompts(judge, tei, language, marker):
    _evaluator(judge, tei).evaluate(["faithfulness"], _dataset(), language=language)
    prompts = [b["messages"][-1]["content"] for b in judge.bodies(CHAT)]
    assert prompts and all(marker in p for p in prompts)


def test_language_values():
    assert (LANGUAGES["chinese"], LANGUAGES["english"], LANGUAGES[None]) == ("zh", "en", "auto")


def test_an_unknown_language_is_refused_like_the_sdk_refuses_it(judge, tei):
    with pytest.raises(ConfigError, match="'chinese', 'english'"):
        _evaluator(judge, tei).evaluate(["faithfulness"], _dataset(), language="french")
    with pytest.raises(ConfigError, match="show_progress"):
        _evaluator(judge, tei).evaluate(["faithfulness"], _dataset(), show_progress="yes")


def test_keys_are_the_sdks_and_nan_stays_nan(judge, tei):
    data = _dataset()
    data["response"][2] = "   "  # no statements: NaN, as RAGAS gives
    scores = _evaluator(judge, tei).evaluate(["noise_sensitivity", "answer_similarity", "faithfulness"], data)
    assert list(scores) == ["noise_sensitivity(mode=relevant)", "semantic_similarity", "faithfulness"]
    assert math.isnan(scores["faithfulness"][2]) and not math.isnan(scores["faithfulness"][0])


def test_unknown_and_repeated_metrics_are_dropped_with_a_warning_or_refused_when_strict(judge, tei, caplog):
    with caplog.at_level(logging.WARNING, logger="ascend_eval.mxrag"):
        scores = _evaluator(judge, tei).evaluate(
            ["faithfulnes", "answer_similarity", "semantic_similarity"], _dataset()
        )
    assert list(scores) == ["semantic_similarity"]
    assert "Did you mean 'faithfulness'" in caplog.text and "Duplicate metric" in caplog.text
    with pytest.raises(ConfigError, match="Did you mean 'faithfulness'"):
        _evaluator(judge, tei, strict=True).evaluate(["faithfulnes"], _dataset())
    with pytest.raises(ConfigError, match="No valid metrics"):
        _evaluator(judge, tei).evaluate(["nonsense"], _dataset())


def test_a_failed_evaluation_returns_none_with_the_reason_logged_or_raises_when_strict(judge, tei, caplog):
    judge.route(CHAT, lambda body: Reply({"error": {"message": "model not loaded"}}, status=404))
    with caplog.at_level(logging.ERROR, logger="ascend_eval.mxrag"):
        assert _evaluator(judge, tei).evaluate(["faithfulness"], _dataset()) is None
    assert "all 3 samples failed in a model backend" in caplog.text and "HTTP 404" in caplog.text
    with pytest.raises(BackendError, match="all 3 samples failed"):
        _evaluator(judge, tei, strict=True).evaluate(["faithfulness"], _dataset())


def test_some_lost_samples_keep_the_rest_and_are_logged(judge, tei, caplog):
    def flaky(body):
        if "水" in json.dumps(body, ensure_ascii=False):
            return Reply({"error": {"message": "bad request"}}, status=400)
        return judge_route(body)

    judge.route(CHAT, flaky)
    with caplog.at_level(logging.WARNING, logger="ascend_eval.mxrag"):
        scores = _evaluator(judge, tei).evaluate(["faithfulness"], _dataset())
    assert math.isnan(scores["faithfulness"][1]) and scores["faithfulness"][0] == pytest.approx(HELD)
    assert "1 of 3 samples lost to backend errors" in caplog.text


def test_a_url_that_is_not_tei_fails_clearly_instead_of_an_all_nan_table(judge, caplog):
    with LoopbackServer() as other:  # answers 404 to everything, as a server without TEI's routes does
        evaluator = RAGEvaluator(
            Text2TextLLM(base_url=judge.url + CHAT, model_name="m"), TEIEmbedding(other.url + EMBED)
        )
        with caplog.at_level(logging.ERROR, logger="ascend_eval.mxrag"):
            assert evaluator.evaluate(["answer_similarity"], _dataset()) is None
        assert "/info" in caplog.text and "text-embeddings-inference" in caplog.text
        assert EMBEDDINGS not in {r.path for r in other.requests}
        assert "/embed/v1/embeddings" not in {r.path for r in other.requests}


def test_bad_data_returns_none_with_the_reason(judge, tei, caplog):
    data = _dataset()
    del data["retrieved_contexts"]
    with caplog.at_level(logging.ERROR, logger="ascend_eval.mxrag"):
        assert _evaluator(judge, tei).evaluate(["faithfulness"], data) is None
    assert "retrieved_contexts" in caplog.text or "contexts" in caplog.text


def test_prompts_path_without_ragas_files_is_passed_over(judge, tei, tmp_path, caplog):
    (tmp_path / "notes.txt").write_text("x")
    assert _evaluator(judge, tei).evaluate(["faithfulness"], _dataset(), "chinese", str(tmp_path))
    with caplog.at_level(logging.WARNING, logger="ascend_eval.mxrag"):
        assert _evaluator(judge, tei).evaluate(["faithfulness"], _dataset(), "chinese", str(tmp_path / "no"))
    assert "does not exist" in caplog.text


def test_prompts_path_with_ragas_prompt_files_is_a_clear_error(judge, tei, tmp_path, caplog):
    (tmp_path / "faithfulness_n_l_i_statement_prompt_chinese.json").write_text("{}")
    with caplog.at_level(logging.ERROR, logger="ascend_eval.mxrag"):
        assert _evaluator(judge, tei).evaluate(["faithfulness"], _dataset(), "chinese", str(tmp_path)) is None
    assert "does not load RAGAS prompts" in caplog.text and "Drop prompts_path" in caplog.text
    with pytest.raises(ConfigError, match=r"faithfulness_n_l_i_statement_prompt_chinese\.json"):
        _evaluator(judge, tei, strict=True).evaluate(["faithfulness"], _dataset(), "chinese", str(tmp_path))
    assert judge.requests == []  # refused before any request


class _SdkText2TextLLM:
    """Shaped like mx_rag.llm.Text2TextLLM (a LangChain LLM: it has `generate`, but not ours)."""

    def __init__(self, base_url, model_name):
        self.base_url, self.model_name = base_url, model_name
        self.client_param = ClientParam(timeout=30)

    def generate(self, prompts):  # LangChain's signature, not a Judge's
        raise AssertionError("never called")


class _SdkTextEmbedding:
    """Shaped like mx_rag.embedding.local.TextEmbedding: no dev_id attribute, a model already placed."""

    class _Model:
        device = "npu:3"

    def __init__(self, model_path):
        self.model_path, self.pooling_method, self.model = model_path, "mean", self._Model()


def test_sdk_shaped_objects_become_specs(tmp_path):
    spec = judge_of(_SdkText2TextLLM("http://10.0.0.5:1025/v1/chat/completions", "qwen"))
    assert spec == ModelSpec(
        model="http://10.0.0.5:1025/v1/chat/completions",
        role="judge",
        served_model_name="qwen",
        request_timeout=30.0,
    )
    assert (
        embedder_of(TEIEmbedding("http://10.0.0.5:8080/v1/embeddings")).model == "http://10.0.0.5:8080/embed"
    )
    assert embedder_of(TEIEmbedding("http://10.0.0.5:8080/embed")).model == "http://10.0.0.5:8080/embed"
    assert embedder_of(TextEmbedding(str(tmp_path), dev_id=1, pooling_method="mean")).device == "npu:1"
    assert embedder_of(_SdkTextEmbedding(str(tmp_path))).device == "npu:3"
    assert embedder_of("multilingual-e5-small") == "multilingual-e5-small"  # ours pass through


def test_shapes_it_cannot_use_are_refused_with_the_fix(monkeypatch):
    monkeypatch.delenv("SSL_CERT_FILE", raising=False)
    with pytest.raises(ConfigError, match="sparse"):
        RAGEvaluator("http://judge/v1", TEIEmbedding("http://tei:8080/embed_sparse"))
    with pytest.raises(ConfigError, match="pass a TEIEmbedding"):
        RAGEvaluator("http://judge/v1", object())
    with pytest.raises(ConfigError, match="pass a Text2TextLLM"):
        RAGEvaluator(object(), "multilingual-e5-small")
    with pytest.raises(ConfigError, match="SSL_CERT_FILE"):
        RAGEvaluator(
            Text2TextLLM(
                base_url="https://judge/v1", model_name="m", client_param=ClientParam(ca_file="ca.crt")
            ),
            "multilingual-e5-small",
        )


def test_text_embedding_pooling_must_match_the_directory(tmp_path):
    (tmp_path / "config.json").write_text("{}")  # a plain transformers directory: mean pooling
    with pytest.raises(ConfigError, match=r"pooling_method='cls'.*pools with 'mean'"):
        embedder_of(TextEmbedding.create(model_path=str(tmp_path)))
    pooling = tmp_path / "1_Pooling"
    pooling.mkdir()
    (pooling / "config.json").write_text(json.dumps({"pooling_mode_cls_token": True}))
    (tmp_path / "modules.json").write_text(
        json.dumps([{"idx": 1, "path": "1_Pooling", "type": "sentence_transformers.models.Pooling"}])
    )
    assert embedder_of(TextEmbedding(str(tmp_path), dev_id=2)).device == "npu:2"  # cls, as the SDK's default


def test_text_embedding_on_an_npu_that_is_not_here_is_a_clear_error(judge, tmp_path, caplog):
    pytest.importorskip("torch")
    from ascend_eval.models.weights.shipped import minilm_path

    embeddings = TextEmbedding(str(minilm_path()), dev_id=0, pooling_method="mean")
    evaluator = RAGEvaluator(Text2TextLLM(base_url=judge.url + CHAT, model_name="m"), embeddings)
    with caplog.at_level(logging.ERROR, logger="ascend_eval.mxrag"):
        assert evaluator.evaluate(["answer_similarity"], _dataset()) is None
    assert "torch_npu" in caplog.text and "device='cpu'" in caplog.text
    strict = RAGEvaluator(Text2TextLLM(base_url=judge.url + CHAT, model_name="m"), embeddings, strict=True)
    with pytest.raises(MissingDependencyError, match="npu:0"):
        strict.evaluate(["answer_similarity"], _dataset())


@pytest.mark.slow
def test_text_embedding_runs_the_local_embedder_through_the_device_seam(judge):
    from ascend_eval.models.weights.shipped import minilm_path

    embeddings = TextEmbedding(str(minilm_path()), pooling_method="mean", device="cpu")
    evaluator = RAGEvaluator(
        Text2TextLLM(base_url=judge.url + CHAT, model_name="m"), embeddings, cache_dir=False
    )
    scores = evaluator.evaluate(["answer_similarity"], _dataset())
    assert len(scores["semantic_similarity"]) == 3
    assert all(0.0 < s <= 1.0 + 1e-6 for s in scores["semantic_similarity"])
    assert judge.requests == []  # answer_similarity needs no judge
