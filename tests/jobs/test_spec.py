"""The job spec: NeMo's example specs load unchanged; typos and the seed's troubleshooting errors are
reported with the field and the fix."""

from __future__ import annotations

import copy
import json

import pytest

from ascend_eval.jobs import JobSpec, load_spec
from ascend_eval.jobs.datasets import inline_rows, truncate_contexts
from ascend_eval.jobs.runtimes import JobModels
from ascend_eval.jobs.spec import ModelRef
from ascend_eval.models.errors import ConfigError, DataError
from ascend_eval.models.http import endpoint_base
from ascend_eval.models.spec import ModelSpec
from tests.jobs.conftest import NEMO_SPECS, inline_spec_for, nemo_spec


def test_all_six_seed_examples_are_here():
    assert [p.stem for p in NEMO_SPECS] == [
        "nemo_basic", "nemo_huggingface_private", "nemo_huggingface_public", "nemo_inline",
        "nemo_judge_embeddings", "nemo_reranker",
    ]  # fmt: skip


@pytest.mark.parametrize("path", NEMO_SPECS, ids=lambda p: p.stem)
def test_nemo_example_specs_parse_unchanged(path):
    spec = load_spec(path)
    raw = json.loads(path.read_text(encoding="utf-8"))
    # Nothing dropped or rewritten: the stored form is the input plus our defaults.
    stored = json.loads(spec.to_json())
    assert stored["metric"] == raw["metric"]
    assert stored["model"] == raw["model"]
    assert stored["retriever_pipeline"] == raw["retriever_pipeline"]
    assert stored["dataset"] == raw["dataset"]
    judge = spec.metric_params.judge_llm
    assert judge is not None and judge.model.api_key_secret == "judge-api-key"
    assert spec.metric_params.top_k == 10 and spec.metric_params.dataset_format == "ragas"


def test_the_basic_example_keeps_every_judge_setting():
    judge = load_spec(nemo_spec("basic")).metric_params.judge_llm
    assert (judge.request_timeout, judge.max_retries, judge.parallelism) == (120, 3, 2)
    assert judge.inference_params.max_tokens == 4000


def test_the_reranker_and_hugging_face_examples():
    reranker = load_spec(nemo_spec("reranker")).retriever_pipeline.reranker_model
    assert (reranker.url, reranker.format) == ("https://integrate.api.nvidia.com/v1/ranking", "nim")
    storage = load_spec(nemo_spec("huggingface_private")).dataset.storage
    assert (storage.repo_id, storage.repo_type, storage.token_secret) == (
        "my-org/private-dataset",
        "dataset",
        "hf-token",
    )


@pytest.mark.parametrize(
    ("path", "typo", "suggestion"),
    [
        (("metric_params", "judge_llm"), "paralelism", "parallelism"),
        (("metric_params",), "topk", "top_k"),
        (("retriever_pipeline",), "reranker", "reranker_model"),
        (("model",), "api_key_secrets", "api_key_secret"),
        ((), "metric_param", "metric_params"),
        (("dataset", "storage"), "repo", "repo_id"),
    ],
)
def test_unknown_keys_are_rejected_with_did_you_mean(path, typo, suggestion):
    spec = nemo_spec("huggingface_private")
    node = spec
    for key in path:
        node = node[key]
    node[typo] = 1
    with pytest.raises(ConfigError) as info:
        load_spec(spec)
    message = str(info.value)
    assert f"unknown field '{typo}'" in message and f"Did you mean '{suggestion}'" in message
    assert ".".join(path) in message


def test_a_misspelt_metric_gets_did_you_mean():
    spec = nemo_spec("inline")
    spec["metric"] = "system/rag-faithfulnes"
    with pytest.raises(ConfigError, match=r"metric: Unknown metric .*Did you mean 'system/rag-faithfulness'"):
        load_spec(spec)


def test_troubleshooting_judge_llm_is_required():
    spec = nemo_spec("inline")
    del spec["metric_params"]["judge_llm"]
    with pytest.raises(ConfigError, match=r"judge_llm is required.*Add `judge_llm`.*to `metric_params`"):
        load_spec(spec)


@pytest.mark.parametrize("metric", ["system/rag-response-relevancy", "system/rag-answer-similarity"])
def test_troubleshooting_judge_embeddings_is_required(metric):
    spec = nemo_spec("judge_embeddings")
    spec["metric"] = metric
    del spec["metric_params"]["judge_embeddings"]
    with pytest.raises(ConfigError, match=r"judge_embeddings is required.*Add `judge_embeddings`"):
        load_spec(spec)


def test_metrics_list_extension_and_pipeline_extensions():
    spec = nemo_spec("judge_embeddings")
    spec["metrics"] = ["faithfulness", "system/rag-response-relevancy", "context_recall"]
    spec["retriever_pipeline"].update(
        chunk_size=256, chunk_overlap=32, chunk_unit="tokens", rerank_candidates=40
    )
    parsed = load_spec(spec)
    # `metric` first, then `metrics`, without the repeat
    assert parsed.metric_names() == ["system/rag-response-relevancy", "faithfulness", "context_recall"]
    assert parsed.retriever_pipeline.chunk_unit == "tokens"


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"metric_params": {"top_k": 0}}, "metric_params.top_k"),
        ({"metric_params": {"truncate_long_documents": "middle"}}, "metric_params.truncate_long_documents"),
        ({"metric_params": {"dataset_format": "beir"}}, "metric_params.dataset_format"),
        ({"dataset": {"rows": [], "path": "x.json"}}, "give exactly one of 'rows'"),
        ({"dataset": {"storage": {"type": "huggingface", "repo_id": "a/b"}}}, "give exactly one of 'rows'"),
        (
            {"dataset": {"path": "d.json", "storage": {"type": "s3", "repo_id": "a/b"}}},
            "dataset.storage.type",
        ),
        ({"model": {"url": "http://x", "api_key_secret": "has space"}}, "model.api_key_secret"),
    ],
)
def test_invalid_values_name_the_field(change, message):
    spec = nemo_spec("inline")
    for key, value in change.items():
        if isinstance(spec.get(key), dict) and key == "metric_params":
            spec[key] = {**spec[key], **value}
        else:
            spec[key] = value
    with pytest.raises(ConfigError, match="Invalid job spec") as info:
        load_spec(spec)
    assert message in str(info.value)
    assert "Input should be a valid string" not in str(info.value)  # the union's other member is noise


def test_yaml_spec_files_load_and_relative_dataset_paths_follow_the_spec(tmp_path):
    yaml = pytest.importorskip("yaml")
    (tmp_path / "data.json").write_text(json.dumps({"question": ["q"], "answer": ["a"]}), encoding="utf-8")
    spec = copy.deepcopy(nemo_spec("inline"))
    spec["dataset"] = "data.json"
    path = tmp_path / "job.yaml"
    path.write_text(yaml.safe_dump(spec), encoding="utf-8")
    assert load_spec(path).dataset == str(tmp_path / "data.json")


def test_unreadable_and_malformed_spec_files(tmp_path):
    with pytest.raises(ConfigError, match="Cannot read job spec"):
        load_spec(tmp_path / "missing.json")
    bad = tmp_path / "bad.json"
    bad.write_text("{", encoding="utf-8")
    with pytest.raises(ConfigError, match="not valid JSON"):
        load_spec(bad)


def test_a_stored_spec_holds_secret_names_only():
    text = load_spec(nemo_spec("huggingface_private")).to_json()
    assert '"api_key_secret": "judge-api-key"' in text and '"token_secret": "hf-token"' in text
    assert isinstance(JobSpec.model_validate_json(text), JobSpec)


@pytest.mark.parametrize(
    ("url", "base"),
    [
        ("https://integrate.api.nvidia.com/v1/chat/completions", "https://integrate.api.nvidia.com/v1"),
        ("https://integrate.api.nvidia.com/v1", "https://integrate.api.nvidia.com/v1"),
        ("https://integrate.api.nvidia.com/v1/ranking", "https://integrate.api.nvidia.com/v1"),
        ("http://127.0.0.1:8000/v1/embeddings/", "http://127.0.0.1:8000/v1"),
    ],
)
def test_seed_urls_become_the_base_urls_our_clients_take(url, base):
    from ascend_eval.models.http import EndpointConfig

    assert endpoint_base(url) == base
    assert EndpointConfig(url=endpoint_base(url), model="m").url == base  # accepted by the client


def test_model_refs_become_model_specs(secrets):
    models = JobModels(secrets, device="cpu")
    secrets.set("judge-api-key", "sk-test", endpoints=["https://integrate.api.nvidia.com"])
    remote = ModelRef(url="https://integrate.api.nvidia.com/v1/chat/completions", name="meta/llama",
                      api_key_secret="judge-api-key")  # fmt: skip
    assert models.spec(remote, "judge", request_timeout=30.0, max_retries=None, max_tokens=64) == ModelSpec(
        model=remote.url, role="judge", served_model_name="meta/llama",
        api_key_file=str(secrets.directory / "judge-api-key"), request_timeout=30.0, max_tokens=64,
    )  # fmt: skip
    local = ModelRef(url="local:all-minilm-l6-v2", name="nvidia/nv-embedqa", api_key_secret="judge-api-key")
    # The endpoint settings of a spec written for endpoints do not apply to a local model (the log says so).
    assert models.spec(local, "embedder", parallelism=4, send_input_type=True) == ModelSpec(
        model="local:all-minilm-l6-v2", role="embedder", device="cpu"
    )
    with pytest.raises(ConfigError, match="no reranker ships by default"):
        models.spec(ModelRef(url="local:default"), "reranker")


def test_a_job_hands_evaluate_its_models_as_specs(secrets, tmp_path, monkeypatch):
    """evaluate builds them (through the model registry, within the run's memory budget); a job builds
    none of the evaluation's models itself."""
    from ascend_eval.jobs.execute import execute

    handed = {}
    monkeypatch.setattr("ascend_eval.api.evaluate", lambda source, metrics, **kw: handed.update(kw))
    spec = inline_spec_for("http://127.0.0.1:9/v1/chat/completions", secret=None)
    spec["metric_params"]["judge_llm"]["parallelism"] = 3
    execute(load_spec(spec), cache_dir=tmp_path, secrets=secrets, report=lambda progress: None)
    judge = handed["judge"]
    assert isinstance(judge, ModelSpec) and judge.role == "judge" and judge.parallelism == 3
    assert (judge.model, judge.served_model_name) == (spec["metric_params"]["judge_llm"]["model"]["url"],
                                                      "meta/llama-3.1-8b-instruct")  # fmt: skip
    assert handed["embedder"] is None


def test_nemo_inline_rows_are_columnar_objects():
    rows = inline_rows(nemo_spec("inline")["dataset"]["rows"])
    assert [r["question"] for r in rows] == ["What is the capital of France?", "Who wrote Romeo and Juliet?"]
    assert rows[1]["contexts"] == ["William Shakespeare wrote Romeo and Juliet in the 1590s."]
    with pytest.raises(DataError, match=r"rows\[0\] is columnar"):
        inline_rows([{"question": ["a", "b"], "answer": ["x"]}])


def test_truncate_long_documents_follows_nemo_semantics():
    from ascend_eval.data import load_dataset
    from ascend_eval.text.truncate import NIM_CHARACTER_LIMIT

    assert NIM_CHARACTER_LIMIT == 65_535  # NeMo SDK's DOCUMENT_CHARACTER_LIMIT, the NIMs' input limit
    text = "a" * 10 + "b" * 65_535
    data = load_dataset([{"contexts": [text, "short"]}, {"question": "no contexts"}])
    start, cut = truncate_contexts(data, "start")
    assert cut == 1 and start[0].contexts == ("b" * 65_535, "short")  # "start": the start is cut
    end, _ = truncate_contexts(data, "end")
    assert end[0].contexts == ("a" * 10 + "b" * 65_525, "short")  # "end": the first 65,535 kept
    assert end[1] is data[1] and end.source == data.source
    assert truncate_contexts(data[1:], "end") == (data[1:], 0)
