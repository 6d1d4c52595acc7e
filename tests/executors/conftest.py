"""Shared pieces of the Ray executor tests: a bilingual dataset written in every format, the loopback rule
judge (and its embeddings route) as picklable model specs, the comparison with a local run, and a Ray
started once per module."""

from __future__ import annotations

import csv
import json
import math
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest

import ascend_eval
from ascend_eval.data import load_dataset
from ascend_eval.models.spec import ModelSpec
from ascend_eval.results.records import ScoredSample
from tests.jobs.conftest import RuleJudgeServer
from tests.models.loopback_server import LoopbackServer

METRICS = ["faithfulness", "answer_correctness", "answer_similarity", "context_recall"]
"""Metrics the rule judge answers: statements and verdicts from the judge, similarities from its
embeddings route."""

_ENGLISH = [
    ("What is the capital of France?", "Paris is the capital of France. It has a big tower.", "Paris."),
    ("Who wrote Hamlet?", "Shakespeare wrote Hamlet. He was English.", "William Shakespeare."),
    ("What is water made of?", "Water is hydrogen and oxygen.", "Hydrogen and oxygen."),
    ("How far is the Moon?", "The Moon is far away. It orbits the Earth.", "About 384,000 km."),
]
_CHINESE = [
    ("什么是RAG？", "检索增强生成是一种方法。它先检索再生成。", "检索增强生成。"),
    ("长城在哪里？", "长城在中国。它很长。", "中国北方。"),
    ("茶起源于哪里？", "茶起源于中国。", "中国。"),
]


def dataset_rows() -> list[dict[str, Any]]:
    """Seven samples, English and Chinese; an id on some rows only (the others number by position), and
    metadata cells a CSV keeps as text ("007", "NA", a line break)."""
    rows = []
    for i, (question, answer, reference) in enumerate(_ENGLISH + _CHINESE):
        first = answer.split(". ")[0].split("。")[0]
        rows.append(
            {
                "id": f"s-{i}" if i % 3 == 0 else None,
                "question": question,
                "contexts": [first + ("." if "." in answer else "。"), "An unrelated passage."],
                "answer": answer,
                "ground_truth": reference,
                "code": "007" if i == 1 else "NA" if i == 2 else f"{i}",
                "note": "two\nlines" if i == 4 else f"note {i}",
            }
        )
    return rows


def write_jsonl(rows: Sequence[dict[str, Any]], path: Path) -> Path:
    """JSON lines with a byte-order mark and a blank line, which both readers skip."""
    lines = [json.dumps({k: v for k, v in r.items() if v is not None}, ensure_ascii=False) for r in rows]
    lines.insert(3, "   ")
    path.write_text("\ufeff" + "\n".join(lines) + "\n", encoding="utf-8")
    return path


def write_csv(rows: Sequence[dict[str, Any]], path: Path) -> Path:
    with path.open("w", encoding="utf-8", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=list(rows[0]))
        writer.writeheader()
        for row in rows:
            lists = {k: json.dumps(v, ensure_ascii=False) for k, v in row.items() if isinstance(v, list)}
            text = {**row, **lists}
            writer.writerow({k: "" if v is None else v for k, v in text.items()})
    return path


def write_parquet(rows: Sequence[dict[str, Any]], path: Path) -> Path:
    import pyarrow as pa
    import pyarrow.parquet as pq

    pq.write_table(pa.Table.from_pylist(list(rows)), path)
    return path


def roles_of(source: Any) -> tuple[dict[str, str], int]:
    """What the driver computes before it calls `score_on_ray`: the column roles and the row count."""
    data = load_dataset(source)
    return dict(data.column_roles), len(data)


def specs(server: LoopbackServer, judge: RuleJudgeServer) -> dict[str, Any]:
    """The rule judge and its embedder as endpoint specs: what a user passes, and picklable. Eight requests
    in flight at most: the loopback server accepts only a few connections at once (its listen backlog)."""
    return {
        "judge": ModelSpec(model=judge.url, served_model_name="rules", parallelism=8),
        "embedder": ModelSpec(model=server.url + "/v1/embeddings", served_model_name="ngram"),
    }


def _json(value: Any) -> Any:
    return json.loads(json.dumps(value, ensure_ascii=False, default=str))


def assert_same_as_local(scored: Sequence[ScoredSample], local: ascend_eval.EvaluationResult) -> None:
    """Every sample, in order, with the same index, sample (id and metadata included), language, scores,
    reasons and details (as JSON: the Ray run's details arrive decoded from JSON)."""
    assert [s.index for s in scored] == list(range(len(local.samples)))
    assert [s.sample for s in scored] == list(local.samples)
    assert [s.language for s in scored] == list(local.languages)
    for metric, outcomes in local.results.items():
        for s, expected in zip(scored, outcomes, strict=True):
            got = s.results[metric]
            assert got.score == expected.score or (math.isnan(got.score) and math.isnan(expected.score))
            assert got.reason == expected.reason
            assert got.details == _json(expected.details)


@pytest.fixture(scope="module")
def rule_server() -> Iterator[tuple[LoopbackServer, RuleJudgeServer]]:
    with LoopbackServer() as server:
        yield server, RuleJudgeServer(server)


@pytest.fixture(scope="module")
def local_ray(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    """A local Ray for the module, with 2 CPUs (this machine's), stopped after it."""
    import ray

    home = tmp_path_factory.mktemp("ray-home")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("ASCEND_EVAL_HOME", str(home))  # the actors inherit it: nothing lands in ~/.cache
        ray.init(num_cpus=2, include_dashboard=False)
    try:
        yield ray
    finally:
        ray.shutdown()
