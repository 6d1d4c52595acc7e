"""Where the actors run and what each one builds, decided in the driver before any actor starts: no Ray
needed (a stand-in answers for the cluster)."""

from __future__ import annotations

from typing import Any

import pytest

from ascend_eval.executors.ray_data import (
    ENDPOINT_PARALLELISM,
    actor_resources,
    default_workers,
    for_actor,
    placement_of,
)
from ascend_eval.models.errors import ConfigError
from ascend_eval.models.judge.openai import JUDGE_PARALLELISM
from ascend_eval.models.spec import ModelSpec

URL = "http://judge.internal:8000/v1/chat/completions"


class FakeRay:
    """`cluster_resources()` and `nodes()` of a cluster, as Ray reports them."""

    def __init__(self, resources: dict[str, float], nodes: int = 1) -> None:
        self.resources = resources
        self.count = nodes

    def cluster_resources(self) -> dict[str, float]:
        return dict(self.resources)

    def nodes(self) -> list[dict[str, Any]]:
        share = {name: value / self.count for name, value in self.resources.items()}
        return [{"Alive": True, "Resources": share} for _ in range(self.count)]


def _local(device: str | None = None, role: str = "judge") -> ModelSpec:
    return ModelSpec(model="/models/qwen", role=role, device=device)


def test_placement_follows_the_models_and_the_cluster():
    endpoint = ModelSpec(model=URL, role="judge")
    assert placement_of({"judge": endpoint}, "auto", {"GPU": 8, "CPU": 64}) == "cpu"  # nothing runs locally
    assert placement_of({"judge": _local()}, "auto", {"GPU": 8}) == "cuda"
    assert placement_of({"judge": _local()}, "auto", {"NPU": 8, "GPU": 0}) == "npu"
    assert placement_of({"judge": _local()}, "auto", {"CPU": 4}) == "cpu"
    assert placement_of({"judge": _local("cpu")}, "auto", {"GPU": 8}) == "cpu"
    assert placement_of({"judge": _local()}, "npu:1", {"NPU": 8}) == "npu"
    mixed = {"judge": _local("cuda"), "embedder": _local("cpu", "embedder")}
    assert placement_of(mixed, "auto", {"GPU": 1}) == "cuda"
    with pytest.raises(ConfigError, match="NPUs and GPUs"):
        placement_of({"judge": _local("cuda"), "embedder": _local("npu", "embedder")}, "auto", {})


def test_default_workers_one_per_accelerator_else_one_per_node_and_at_least_two_cpus():
    assert default_workers(FakeRay({"GPU": 8, "CPU": 64}), "cuda") == 8
    assert default_workers(FakeRay({"NPU": 16, "CPU": 192}, nodes=2), "npu") == 16
    assert default_workers(FakeRay({"CPU": 2}), "cpu") == 2
    assert default_workers(FakeRay({"CPU": 1}), "cpu") == 1
    assert default_workers(FakeRay({"CPU": 128}, nodes=4), "cpu") == 4


def test_actor_resources_and_a_cluster_too_small_for_them():
    assert actor_resources(FakeRay({"GPU": 2}), "cuda", 2, 1.0) == {"num_gpus": 1}
    assert actor_resources(FakeRay({"NPU": 8}), "npu", 8, 1.0) == {"resources": {"NPU": 1}}
    assert actor_resources(FakeRay({"CPU": 2}), "cpu", 2, 1.0) == {"num_cpus": 1.0}
    with pytest.raises(ConfigError, match=r"num_workers=3 actors need 3 NPU and the Ray cluster has 2"):
        actor_resources(FakeRay({"NPU": 2}), "npu", 3, 1.0)


def test_an_endpoint_shares_its_parallelism_among_the_actors():
    assert for_actor(ModelSpec(model=URL, role="judge"), "cpu", 4).parallelism == JUDGE_PARALLELISM // 4
    assert for_actor(ModelSpec(model=URL, role="judge", parallelism=10), "cpu", 4).parallelism == 2
    assert for_actor(ModelSpec(model=URL, role="judge", parallelism=3), "cpu", 8).parallelism == 1
    embedder = ModelSpec(model="http://embed.internal/v1/embeddings", role="embedder")
    assert for_actor(embedder, "cpu", 2).parallelism == max(1, ENDPOINT_PARALLELISM // 2)


def test_a_local_model_runs_on_the_actors_own_device():
    # Ray narrows the visible devices to the actor's one, so a machine-wide index would point elsewhere
    assert for_actor(_local("cuda:3"), "cuda", 8).device == "cuda"
    assert for_actor(_local(None), "npu", 8).device == "npu"
    assert for_actor(_local("auto"), "cpu", 2).device == "cpu"
    assert for_actor(_local("cpu", "embedder"), "cuda", 2).device == "cpu"  # asked for the CPU: stays
    runtime = object()
    assert for_actor(runtime, "cpu", 2) is runtime
