"""`ascend-eval evaluate --metrics-file FILE` and a `--config` file's `metrics:` list with the user's own
criteria and rubrics: read, checked before any model loads, run, and written back to config.yaml so that
`--config` repeats the run. Runs go to the scripted judge server on loopback."""

from __future__ import annotations

import json
import math

import pandas as pd
import pytest
import yaml

from ascend_eval.cli.config import effective_config, evaluate_kwargs
from ascend_eval.cli.main import build_parser, main
from ascend_eval.metrics import Criterion, Rubric
from ascend_eval.metrics.files import metric_entries, read_metrics_file
from ascend_eval.models.errors import ConfigError
from tests.conftest import verdict_tokens
from tests.models.loopback_server import CHAT, LoopbackServer, chat_reply
from tests.test_api_endpoints import judge_route

POLITE = {
    "criterion": {"name": "polite", "definition": "Is the answer courteous?", "reads": ["question", "answer"]}
}
CLARITY = {"rubric": {"name": "clarity", "levels": {1: "Confusing.", 5: "Clear."}, "reads": ["answer"]}}


def route(body):
    """A criterion's requests get p("1") = 0.8 in its Chinese template and 0.3 in its English one; the
    rest go to the scripted judge."""
    text = body["messages"][-1]["content"]
    if verdict_tokens(text) != ("Yes", "No"):
        return judge_route(body)
    p1 = 0.8 if "回答 Yes 或 No" in text else 0.3
    top = [("Yes", math.log(p1)), ("No", math.log(1 - p1))]
    return chat_reply("Yes" if p1 > 0.5 else "No", prompt_tokens=50, completion_tokens=1, top_logprobs=top)


@pytest.fixture
def server():
    with LoopbackServer() as s:
        s.route(CHAT, route)
        yield s


def test_a_metrics_file_runs_and_config_yaml_repeats_it(tmp_path, server):
    metrics = tmp_path / "m.yaml"
    metrics.write_text(yaml.safe_dump({"metrics": [POLITE]}), encoding="utf-8")
    out = tmp_path / "out"
    argv = ["evaluate", "bilingual-example", "--metrics", "faithfulness", "--metrics-file", str(metrics)]
    argv += ["--judge", server.url + "/v1", "--judge-model", "j", "--no-cache", "--quiet", "--out", str(out)]
    assert main(argv) == 0
    scores = pd.read_csv(out / "scores.csv")
    assert scores["faithfulness"].notna().any()
    samples = [json.loads(line) for line in (out / "samples.jsonl").read_text(encoding="utf-8").splitlines()]
    expected = [0.8 if s["language"] == "zh" else 0.3 for s in samples]
    assert scores["polite"].tolist() == pytest.approx(expected) and set(expected) == {0.3, 0.8}
    written = yaml.safe_load((out / "config.yaml").read_text(encoding="utf-8"))
    assert written["metrics"] == ["faithfulness", POLITE]
    again = tmp_path / "again"
    assert main(["evaluate", "--config", str(out / "config.yaml"), "--out", str(again)]) == 0
    assert (again / "scores.csv").read_text(encoding="utf-8") == (out / "scores.csv").read_text(
        encoding="utf-8"
    )


def test_metrics_entries_become_metric_objects_for_evaluate(tmp_path):
    config = tmp_path / "run.json"
    config.write_text(json.dumps({"metrics": ["faithfulness", POLITE, CLARITY]}), encoding="utf-8")
    args = build_parser().parse_args(["evaluate", "bilingual-example", "--config", str(config), "--out", "o"])
    kwargs = evaluate_kwargs(effective_config(args))
    faithfulness, polite, clarity = kwargs["metrics"]
    assert faithfulness == "faithfulness"
    assert polite == Criterion("polite", "Is the answer courteous?", reads=["question", "answer"])
    assert clarity == Rubric("clarity", {1: "Confusing.", 5: "Clear."}, reads=["answer"])


@pytest.mark.parametrize(
    "body, message",
    [
        ("metrics: []\n", "holds no `metrics:` list"),
        ("judge: x\n", "holds no `metrics:` list"),
        ("metrics:\n  - criterion: {name: c}\n", "a criterion needs definition"),
        ("metrics:\n  - criterion: {name: c, definition: ok, read: [answer]}\n", "not 'read'"),
        ("metrics:\n  - critic: {name: c}\n", "one key, 'criterion' or 'rubric'"),
        ("metrics:\n  - rubric: {name: r, levels: {1: low}}\n", r"metrics\[0\] \('r'\): r: levels= maps two"),
        ("metrics:\n  - 5\n", "metrics\\[0\\] is 5"),
        ("metrics: [: bad\n", "m.yaml"),
    ],
)
def test_a_bad_metrics_file_is_a_config_error_naming_the_entry(tmp_path, body, message):
    path = tmp_path / "m.yaml"
    path.write_text(body, encoding="utf-8")
    with pytest.raises(ConfigError, match=message):
        read_metrics_file(path)


def test_a_bad_entry_stops_the_command_before_any_model_loads(tmp_path, capsys):
    path = tmp_path / "m.yaml"
    path.write_text("metrics:\n  - rubric: {name: r, levels: {1: low, 12: high}}\n", encoding="utf-8")
    out = tmp_path / "o"
    code = main(
        [
            "evaluate",
            "bilingual-example",
            "--metrics-file",
            str(path),
            "--judge",
            "/nowhere",
            "--out",
            str(out),
        ]
    )
    assert code == 2 and "level 12 is not a whole number from 0 to 9" in capsys.readouterr().err
    assert not out.exists()
    with pytest.raises(ConfigError, match="cannot read it"):
        read_metrics_file(tmp_path / "missing.yaml")


def test_names_in_an_entry_list_may_be_comma_separated():
    assert metric_entries("faithfulness, nv_accuracy", "m") == ["faithfulness", "nv_accuracy"]
