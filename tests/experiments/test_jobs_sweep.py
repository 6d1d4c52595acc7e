"""End to end through the real jobs: `ascend-eval experiment run` on a 2 x 2 grid over the built-in English
dataset, each point a job whose RAG model, embedder and judge sit behind a loopback HTTP server."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

pytest.importorskip("ascend_eval.jobs")
pytest.importorskip("matplotlib")

from ascend_eval.cli.main import main
from tests.jobs.conftest import RuleJudgeServer
from tests.models.loopback_server import EMBEDDINGS, LoopbackServer


@pytest.mark.slow
def test_cli_sweep_runs_a_job_per_point_with_one_cache(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with LoopbackServer() as server:
        rules = RuleJudgeServer(server)
        experiment = {
            "name": "e2e",
            "limit": 4,
            "sweep": {"chunk_size": [128, 256], "top_k": [1, 3]},
            "metric": "system/rag-faithfulness",
            "model": {"url": rules.url, "name": "rag-model"},
            "retriever_pipeline": {
                "embedding_model": {"url": server.url + "/v1", "name": "embedder", "format": "nim"},
                "chunk_overlap": 16,
            },
            "dataset": "ascend-eval/rag-mini-en",
            "metric_params": {"judge_llm": {"model": {"url": rules.url, "name": "judge"}}},
        }
        path = tmp_path / "sweep.yaml"
        path.write_text(yaml.safe_dump(experiment), encoding="utf-8")
        out = tmp_path / "out"
        code = main(["experiment", "run", str(path), "--out", str(out), "--quiet"])
        passages = [b for b in server.bodies(EMBEDDINGS) if b.get("input_type") == "passage"]
        answers = rules.generate_bodies()

    printed = capsys.readouterr().out
    assert code == 0, printed
    assert "chunk_size=128,top_k=1" in printed and "report:" in printed
    points = json.loads((out / "points.json").read_text("utf-8"))["points"]
    assert [p["status"] for p in points] == ["completed"] * 4
    assert all(p["aggregate_scores"][0]["name"] == "faithfulness" for p in points)
    # Every point is a job of its own, all with the sweep's one cache folder.
    jobs = sorted((out / "jobs").iterdir())
    assert len(jobs) == 4
    assert {json.loads((j / "status.json").read_text())["cache_dir"] for j in jobs} == {
        str((out / "cache").absolute())
    }
    # Each chunk is embedded once for the whole sweep (not once per point); rows hold top_k contexts.
    sent = [text for body in passages for text in body["input"]]
    assert sent and len(sent) == len(set(sent))
    for point in points:
        rows = json.loads((out / "points" / point["label"] / "results.json").read_text("utf-8"))["rows"]
        assert len(rows) == 4 and all(len(r["retrieved_contexts"]) == point["params"]["top_k"] for r in rows)
    # No prompt reaches the RAG model twice: the shared cache answers repeats.
    prompts = [
        json.dumps(b["messages"], sort_keys=True) for b in answers if "Context passages" in json.dumps(b)
    ]
    assert len(prompts) == len(set(prompts))
    page = (out / "report.html").read_text("utf-8")
    assert page.count('<img src="data:image/png;base64,') == 2
