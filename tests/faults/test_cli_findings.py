"""Issue 12's findings about the command line and a run's outcome, one test each: the output folder is
checked before the run, a run that scored nothing (or lost too much to backend errors) exits non-zero
with its results saved, and data and device are checked before any server is asked or model converted."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import ascend_eval
from ascend_eval.cli.main import main
from ascend_eval.models.base import GenerateResult
from ascend_eval.models.errors import ConfigError, MissingDependencyError
from tests.models.loopback_server import CHAT, LoopbackServer, Reply
from tests.test_api_endpoints import judge_route

ROWS = [
    {
        "user_input": "Where is the Eiffel Tower?",
        "response": "The Eiffel Tower is in Paris.",
        "retrieved_contexts": ["The Eiffel Tower is in Paris."],
    },
    {
        "user_input": "What is the capital of Japan?",
        "response": "Tokyo is the capital of Japan.",
        "retrieved_contexts": ["Tokyo is the capital of Japan."],
    },
]


def _argv(server: LoopbackServer, data: str | Path, out: str | Path, *extra: str) -> list[str]:
    return [
        "evaluate", str(data), "--metrics", "faithfulness", "--no-cache", "-q",
        "--judge", server.url, "--judge-model", "served-judge", "--out", str(out), *extra,
    ]  # fmt: skip


@pytest.fixture
def dataset(tmp_path: Path) -> Path:
    path = tmp_path / "data.json"
    path.write_text(json.dumps(ROWS), encoding="utf-8")
    return path


def test_out_naming_an_existing_file_is_refused_before_the_run(tmp_path, dataset, capsys):
    taken = tmp_path / "taken.txt"
    taken.write_text("keep me")
    with LoopbackServer() as server:
        server.route(CHAT, judge_route)
        assert main(_argv(server, dataset, taken)) == 2
        assert server.requests == []  # refused before any judge call, not after the whole run
    assert "is an existing file, not a folder" in capsys.readouterr().err
    assert taken.read_text() == "keep me"


def test_an_empty_out_is_refused(dataset, capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    with LoopbackServer() as server:
        assert main(_argv(server, dataset, "")) == 2
        assert server.requests == []
    assert "--out is empty" in capsys.readouterr().err
    assert not (tmp_path / "results.json").exists()  # nothing written into the current folder


@pytest.mark.parametrize("name", ["results.json", "scores.csv", "summary.json"])
def test_a_dataset_the_run_would_overwrite_is_refused(tmp_path, name, capsys):
    out = tmp_path / "out"
    out.mkdir()
    data = out / name
    text = json.dumps(ROWS) if name.endswith(".json") else "user_input,response\nq,a\n"
    data.write_text(text, encoding="utf-8")
    with LoopbackServer() as server:
        assert main(_argv(server, data, out)) == 2
        assert server.requests == []
    assert "would overwrite the input" in capsys.readouterr().err
    assert data.read_text(encoding="utf-8") == text


def test_a_run_that_scored_nothing_exits_3_with_its_results_saved(tmp_path, dataset, capsys):
    out = tmp_path / "out"
    with LoopbackServer() as server:
        server.route(CHAT, lambda body: Reply({"error": {"message": "model not loaded"}}, status=400))
        assert main(_argv(server, dataset, out)) == 3
    err = capsys.readouterr().err
    assert "faithfulness: no sample was scored" in err and "failed in a backend" in err
    saved = json.loads((out / "results.json").read_text(encoding="utf-8"))
    assert all(r.startswith("backend_error") for r in saved["nan_reasons"]["faithfulness"])


def test_a_clean_run_exits_0(tmp_path, dataset):
    with LoopbackServer() as server:
        server.route(CHAT, judge_route)
        assert main(_argv(server, dataset, tmp_path / "out")) == 0


class FlakyJudge:
    """The rule judge, except that every request about Tokyo fails in the backend."""

    def __init__(self, inner):
        self.inner = inner
        self.model_id = "flaky-" + inner.model_id

    def _failing(self, request) -> bool:
        return any("Tokyo" in m.content for m in request.messages)

    def generate(self, requests):
        answers = self.inner.generate(requests)
        pairs = zip(requests, answers, strict=True)
        return [GenerateResult.failed("HTTP 503") if self._failing(r) else a for r, a in pairs]

    def classify(self, requests):
        return self.inner.classify(requests)


def test_backend_errors_over_the_threshold_are_a_failure(rule_judge):
    result = ascend_eval.evaluate(
        ROWS, ["faithfulness"], judge=FlakyJudge(rule_judge), cache_dir=False, progress=False
    )
    assert result.nan_reasons("faithfulness") == {"backend_error: HTTP 503": 1}
    assert result.failures(max_backend_errors=0.5) == []  # 1 of 2 is not over one half
    [failure] = result.failures(max_backend_errors=0.25)
    assert "1 of 2 scores failed in a backend" in failure
    with pytest.raises(ConfigError, match="fraction"):
        result.failures(max_backend_errors=2)


def test_bad_data_is_reported_before_the_server_is_asked_anything(tmp_path, capsys):
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps([{"user_input": "q", "response": "a"}]), encoding="utf-8")
    with LoopbackServer() as server:
        argv = ["evaluate", str(bad), "--metrics", "faithfulness", "--no-cache", "-q",
                "--judge", server.url, "--out", str(tmp_path / "out")]  # fmt: skip
        assert main(argv) == 2  # no --judge-model: the judge's name would come from GET /v1/models
        assert server.requests == []
    assert "retrieved_contexts" in capsys.readouterr().err


def test_a_device_that_cannot_be_had_is_found_before_a_gguf_is_converted(tmp_path, monkeypatch):
    monkeypatch.setenv("ASCEND_EVAL_HOME", str(tmp_path / "home"))
    gguf = tmp_path / "judge.gguf"
    gguf.write_bytes(b"not really a gguf file")  # converting it would fail with another error
    with pytest.raises(MissingDependencyError, match="torch_npu"):
        ascend_eval.evaluate(
            ROWS, ["faithfulness"], judge=str(gguf), device="npu:0", cache_dir=False, progress=False
        )
    assert not (tmp_path / "home" / "checkpoints").exists()


def test_a_tei_embed_url_scores_through_teis_api_and_a_url_that_is_not_tei_exits_2(tmp_path, capsys):
    from tests.models.tei_standin import EMBED, INFO, TeiStandIn

    rows = [{**r, "reference": r["response"]} for r in ROWS]
    data = tmp_path / "data.json"
    data.write_text(json.dumps(rows), encoding="utf-8")
    argv = ["evaluate", str(data), "--metrics", "answer_similarity", "--no-cache", "-q", "--embedder"]
    with LoopbackServer() as server:
        tei = TeiStandIn(server).install()
        assert main([*argv, tei.url + EMBED, "--out", str(tmp_path / "ok")]) == 0
        assert {r.path for r in server.requests} == {INFO, EMBED}  # not /embed/v1/embeddings
    summary = json.loads((tmp_path / "ok" / "summary.json").read_text(encoding="utf-8"))
    assert summary["aggregate_scores"][0]["count"] == 2
    with LoopbackServer() as other:  # 404 to everything: no TEI here
        assert main([*argv, other.url + EMBED, "--out", str(tmp_path / "bad")]) == 2
    assert "Could not read the TEI server's GET" in capsys.readouterr().err
