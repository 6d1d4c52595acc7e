"""The command line: models listing, errors, and argument handling."""

from __future__ import annotations

import json
import subprocess
import sys

from ascend_eval.cli.main import main, parse_column_map, split_values
from tests.models.loopback_server import CHAT, LoopbackServer
from tests.test_api_endpoints import judge_route


def cli(*args):
    return subprocess.run([sys.executable, "-m", "ascend_eval", *args], capture_output=True, text=True)


def test_models_lists_defaults_and_device():
    out = cli("models", "--json")
    assert out.returncode == 0, out.stderr
    data = json.loads(out.stdout)
    roles = {m["name"]: m["role"] for m in data["models"]}
    assert roles["smollm2-135m-instruct"] == "judge (default)"
    assert roles["multilingual-e5-small"] == "embedder (default)"
    assert data["device"] == "cpu"


def test_bad_dataset_exits_2_with_the_fix(tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"question": ["q"], "answer": ["a"]}))
    out = cli("evaluate", str(bad), "--metrics", "faithfulness", "--out", str(tmp_path / "o"), "-q")
    assert out.returncode == 2
    assert "retrieved_contexts" in out.stderr and "column_map" in out.stderr


def test_unknown_metric_exits_2(tmp_path, capsys):
    assert main(["evaluate", "bilingual-example", "--metrics", "faithfulnes", "--out", str(tmp_path)]) == 2
    assert "Did you mean 'faithfulness'" in capsys.readouterr().err


def test_argument_helpers():
    assert split_values(["faithfulness,answer_similarity", "x"]) == ["faithfulness", "answer_similarity", "x"]
    assert parse_column_map(["user_input=query"]) == {"user_input": "query"}


def test_endpoint_flags_reach_the_server(tmp_path, monkeypatch):
    monkeypatch.setenv("LOOPBACK_API_KEY", "sk-loopback")
    with LoopbackServer() as server:
        server.route(CHAT, judge_route)
        argv = ["evaluate", "bilingual-example", "--metrics", "faithfulness", "--no-cache", "-q",
                "--judge", server.url + "/v1/chat/completions", "--judge-model", "served-judge",
                "--api-key-env", "LOOPBACK_API_KEY", "--out", str(tmp_path)]  # fmt: skip
        assert main(argv) == 0
        chats = [r for r in server.requests if r.path == CHAT]
    assert chats and {r.body["model"] for r in chats} == {"served-judge"}  # no /v1/models lookup needed
    assert {r.headers["authorization"] for r in chats} == {"Bearer sk-loopback"}
    summary = json.loads((tmp_path / "results.json").read_text())["provenance"]["models"]
    assert summary == {"judge": f"openai:served-judge@{server.url}/v1"}


def test_a_server_model_name_for_a_local_model_exits_2(tmp_path, capsys):
    argv = ["evaluate", "bilingual-example", "--judge", "smollm2-135m-instruct", "--judge-model", "x"]
    assert main([*argv, "--out", str(tmp_path)]) == 2
    assert "--judge-model names the model a server serves" in capsys.readouterr().err
