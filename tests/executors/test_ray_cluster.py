"""Two Ray nodes on this machine (`ray.cluster_utils.Cluster`, one CPU each), reached by address: one
actor per node by default, both score batches, and the results are those of a local run."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

import ascend_eval
from ascend_eval.config import EvaluationConfig
from ascend_eval.executors import score_on_ray
from tests.executors.conftest import METRICS, assert_same_as_local, dataset_rows, roles_of, specs, write_jsonl
from tests.jobs.conftest import RuleJudgeServer
from tests.models.loopback_server import LoopbackServer, Reply


class SlowRuleJudge(RuleJudgeServer):
    """The rule judge, answering statement requests after 0.3 s: a batch takes long enough that the actor
    that starts second still finds batches to score."""

    def _chat(self, body: dict[str, Any]) -> Any:
        reply = super()._chat(body)
        return reply if body.get("logprobs") else Reply(reply, delay=0.3)


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    cluster_utils = pytest.importorskip("ray.cluster_utils")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("ASCEND_EVAL_HOME", str(tmp_path_factory.mktemp("ray-home")))  # the nodes inherit it
        cluster = cluster_utils.Cluster(initialize_head=True, head_node_args={"num_cpus": 1})
        cluster.add_node(num_cpus=1)
    try:
        cluster.wait_for_nodes()
        yield cluster
    finally:
        cluster.shutdown()


def test_two_nodes_run_one_actor_each_and_score_as_the_local_run(tmp_path, cluster):
    import ray

    source = str(write_jsonl(dataset_rows(), tmp_path / "data.jsonl"))
    roles, count = roles_of(source)
    with LoopbackServer() as server:
        models = specs(server, SlowRuleJudge(server))
        local = ascend_eval.evaluate(source, METRICS, **models, cache_dir=False, progress=False)
        run = score_on_ray(
            source,
            roles=roles,
            count=count,
            metrics=METRICS,
            # each node's own disk, here shared
            config=EvaluationConfig.of(**models, cache_dir=tmp_path / "cache"),
            address=cluster.address,
            batch_size=1,
        )
        scored = list(run)
    assert_same_as_local(scored, local)
    assert run.workers == 2 and len(run.nodes) == 2  # the default: one actor per node, and both scored
    assert not ray.is_initialized()  # score_on_ray connected to the cluster, and disconnected at the end
