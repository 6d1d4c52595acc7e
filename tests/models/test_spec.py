"""`ModelSpec`: one description of a model, checked before anything is read or loaded; every mistake is a
ConfigError that names the field and the fix."""

from __future__ import annotations

from pathlib import Path

import pytest

from ascend_eval.models.errors import ConfigError
from ascend_eval.models.http import EndpointConfig, endpoint_base, is_url
from ascend_eval.models.spec import ENGINE_FIELDS, ENGINE_SETTINGS, ModelSpec


def test_a_spec_is_frozen_hashable_and_takes_paths() -> None:
    spec = ModelSpec(model=Path("/models/qwen"), role="judge", max_tokens=64)
    assert spec.model == "/models/qwen" and spec.local_backend == "torch" and not spec.is_endpoint
    assert spec.inference_params == {"max_tokens": 64}
    assert hash(spec) == hash(ModelSpec(model="/models/qwen", role="judge", max_tokens=64))
    with pytest.raises(Exception, match="frozen"):
        spec.model = "/other"  # type: ignore[misc]


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"max_token": 8}, "no field 'max_token'. Did you mean 'max_tokens'?"),
        ({"backend": "tensorrt"}, "backend='tensorrt'; valid: 'auto', 'torch', 'vllm'"),
        ({"role": "generator"}, r"ModelSpec\.role='generator': Input should be 'judge', 'embedder'"),
        ({"temperature": -1}, r"ModelSpec\.temperature=-1: Input should be greater than or equal to 0"),
        ({"dtype": "int8"}, r"ModelSpec\.dtype='int8'"),
        ({"model": " "}, "model is empty"),
        (
            {"served_model_name": "qwen"},
            "served_model_name: settings of http\\(s\\) endpoints; '/m' is a local",
        ),
        ({"role": "judge", "gpu_memory_utilization": 0.5}, "torch judge has no such setting.*backend='vllm'"),
        ({"role": "embedder", "dtype": "float32"}, "torch embedder has no such setting.*backend='vllm'"),
        ({"role": "judge", "backend": "vllm", "batch_size": 8}, "vllm judge.*use backend='torch' or drop it"),
        ({"role": "embedder", "max_tokens": 8}, "decoding overrides for a judge's.*an embedder generates"),
        ({"model": "local:default", "role": "reranker"}, "no reranker ships by default"),
    ],
)
def test_mistakes_are_config_errors_naming_the_field(fields, message) -> None:
    with pytest.raises(ConfigError, match=message):
        ModelSpec(**{"model": "/m", **fields})


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"backend": "vllm"}, "backend='vllm' applies to local models.*Leave backend='auto'"),
        ({"device": "npu:0"}, "device applies to local models"),
        ({"max_model_len": 4096}, "max_model_len: engine settings of local models.*vllm serve"),
        ({"api_key_env": "K", "api_key_file": "/k"}, "pass only one"),
        ({"role": "judge", "send_input_type": True}, "NIM's embedding-request field; a judge"),
    ],
)
def test_an_endpoint_refuses_local_settings(fields, message) -> None:
    with pytest.raises(ConfigError, match=message):
        ModelSpec(**{"model": "https://integrate.api.nvidia.com/v1", **fields})


def test_zero_is_a_value_not_an_absence() -> None:
    with pytest.raises(ConfigError, match="temperature"):
        ModelSpec(model="/m", role="reranker", temperature=0.0)
    with pytest.raises(ConfigError, match="max_retries"):
        ModelSpec(model="/m", max_retries=0)


def test_the_role_comes_from_where_a_spec_is_passed() -> None:
    spec = ModelSpec(model="/m", backend="vllm", max_model_len=8192)
    assert spec.role is None and spec.for_role("embedder").role == "embedder"
    with pytest.raises(ConfigError, match=r"A ModelSpec for a judge .* where an embedder is wanted"):
        ModelSpec(model="/m", role="judge").for_role("embedder")
    with pytest.raises(ConfigError, match="torch reranker has no such setting"):
        ModelSpec(model="/m", dtype="bfloat16").for_role("reranker")  # checked again for the role
    assert spec.replace(device="cpu") == ModelSpec(
        model="/m", backend="vllm", max_model_len=8192, device="cpu"
    )


def test_every_engine_setting_maps_onto_a_runtime_config_field() -> None:
    from dataclasses import fields

    from ascend_eval.models.embedder.sentence_transformers import TorchEmbedderConfig
    from ascend_eval.models.embedder.vllm import VllmEmbedderConfig
    from ascend_eval.models.judge.torch import TorchJudgeConfig
    from ascend_eval.models.judge.vllm import VllmJudgeConfig
    from ascend_eval.models.reranker.cross_encoder import TorchRerankerConfig
    from ascend_eval.models.reranker.vllm import VllmRerankerConfig

    configs = {
        ("judge", "torch"): TorchJudgeConfig,
        ("judge", "vllm"): VllmJudgeConfig,
        ("embedder", "torch"): TorchEmbedderConfig,
        ("embedder", "vllm"): VllmEmbedderConfig,
        ("reranker", "torch"): TorchRerankerConfig,
        ("reranker", "vllm"): VllmRerankerConfig,
    }
    for key, mapping in ENGINE_SETTINGS.items():
        assert set(mapping) <= set(ENGINE_FIELDS)
        assert set(mapping.values()) <= {f.name for f in fields(configs[key])}, key
    assert set(ENGINE_FIELDS) == {f for mapping in ENGINE_SETTINGS.values() for f in mapping}


@pytest.mark.parametrize(
    ("url", "base"),
    [
        ("https://integrate.api.nvidia.com/v1/chat/completions", "https://integrate.api.nvidia.com/v1"),
        ("https://integrate.api.nvidia.com/v1", "https://integrate.api.nvidia.com/v1"),
        (
            "https://ai.api.nvidia.com/v1/retrieval/nvidia/reranking",
            "https://ai.api.nvidia.com/v1/retrieval/nvidia",
        ),
        ("http://127.0.0.1:8000/v1/embeddings/", "http://127.0.0.1:8000/v1"),
        ("http://127.0.0.1:8000/v1/completions", "http://127.0.0.1:8000/v1"),
        ("http://127.0.0.1:8000/v1/rerank", "http://127.0.0.1:8000/v1"),
    ],
)
def test_one_list_of_endpoint_paths_for_trimming_and_for_the_client(url: str, base: str) -> None:
    assert is_url(url) and endpoint_base(url) == base
    assert EndpointConfig(url=endpoint_base(url), model="m").url.startswith(base)  # accepted by the client
    if base != url.rstrip("/"):
        with pytest.raises(ConfigError, match="Drop '/"):
            EndpointConfig(url=url, model="m")  # the client itself takes base URLs only
