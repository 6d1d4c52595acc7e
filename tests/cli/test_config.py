"""`ascend-eval evaluate --config FILE`, `--judge-set`, and the effective configuration each run writes to
its folder as config.yaml. Runs go to a scripted judge server on loopback (faithfulness needs only the
judge), so each takes about a second."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
import yaml

from ascend_eval.cli.config import (
    config_defaults,
    effective_config,
    evaluate_kwargs,
    load_config,
    parse_settings,
)
from ascend_eval.cli.main import build_parser, main
from ascend_eval.config import CALLBACKS, EvaluationConfig, names
from ascend_eval.models.errors import ConfigError
from ascend_eval.models.spec import ModelSpec
from tests.models.loopback_server import CHAT, LoopbackServer
from tests.test_api_endpoints import judge_route


@pytest.fixture
def server():
    with LoopbackServer() as s:
        s.route(CHAT, judge_route)
        yield s


def write(path, data):
    if path.suffix == ".json":
        path.write_text(json.dumps(data), encoding="utf-8")
    else:
        path.write_text(yaml.safe_dump(data), encoding="utf-8")
    return path


def written(folder) -> dict:
    return yaml.safe_load((folder / "config.yaml").read_text(encoding="utf-8"))


def effective(*argv: str) -> dict:
    return effective_config(build_parser().parse_args(["evaluate", *argv]))


@pytest.mark.parametrize("suffix", [".yaml", ".json"])
def test_a_config_file_runs_like_the_flags(tmp_path, server, suffix):
    out = tmp_path / "out"
    config = write(
        tmp_path / f"eval{suffix}",
        {
            "dataset": "bilingual-example",
            "metrics": "faithfulness",
            "judge": {"model": server.url + "/v1", "served_model_name": "served-judge", "parallelism": 4},
            "cache_dir": False,
            "chunk_size": 8,
            "quiet": True,
            "out": str(out),
        },
    )
    assert main(["evaluate", "--config", str(config)]) == 0
    chats = [r for r in server.requests if r.path == CHAT]
    assert chats and {r.body["model"] for r in chats} == {"served-judge"}
    assert server.peak_concurrency <= 4
    assert (out / "results.json").is_file()
    settings = written(out)
    assert settings["judge"] == {
        "model": server.url + "/v1",
        "served_model_name": "served-judge",
        "parallelism": 4,
    }
    assert settings["metrics"] == ["faithfulness"] and settings["chunk_size"] == 8
    assert settings["cache_dir"] is False and settings["dedupe"] is True  # a default, filled in
    assert list(settings) == list(config_defaults())


def test_an_unknown_key_names_the_file_the_closest_key_and_every_valid_one(tmp_path, capsys):
    config = write(tmp_path / "eval.yaml", {"dataset": "bilingual-example", "chunksize": 4})
    assert main(["evaluate", "--config", str(config), "--out", str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ")
    assert "'chunksize' is unknown" in err and str(config) in err and "Did you mean 'chunk_size'?" in err
    assert "Valid: dataset, metrics, judge," in err and "progress_every" in err
    assert not (tmp_path / "o").exists()  # nothing started


def test_an_unknown_model_field_names_the_model_and_the_closest_field(tmp_path, capsys):
    config = write(tmp_path / "eval.json", {"judge": {"model": "http://127.0.0.1:9/v1", "max_token": 64}})
    assert main(["evaluate", "bilingual-example", "--config", str(config), "--out", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert str(config) in err and "judge: ModelSpec field 'max_token' is unknown" in err
    assert "Did you mean 'max_tokens'?" in err and "request_timeout" in err


@pytest.mark.parametrize(
    ("data", "expected"),
    [
        ({"chunk_size": "big"}, "chunk_size='big'; expected an integer"),
        ({"dedupe": "no"}, "dedupe='no'; expected true or false"),
        ({"metrics": [1]}, "metric names"),
        ({"cache_dir": 3}, "a folder, or false"),
        ({"judge": ["x"]}, "a mapping of ModelSpec fields"),
        (["dataset"], "holds a list"),
    ],
)
def test_a_value_of_the_wrong_kind_is_an_error(tmp_path, data, expected):
    with pytest.raises(ConfigError, match=re.escape(expected)):
        load_config(write(tmp_path / "eval.yaml", data))


def test_a_file_that_is_missing_or_neither_yaml_nor_json_is_an_error(tmp_path):
    with pytest.raises(ConfigError, match="cannot be read"):
        load_config(tmp_path / "missing.yaml")
    (tmp_path / "eval.toml").write_text("x = 1")
    with pytest.raises(ConfigError, match=r"\.yaml, \.yml or \.json"):
        load_config(tmp_path / "eval.toml")
    (tmp_path / "bad.json").write_text("{")
    with pytest.raises(ConfigError, match="not valid JSON"):
        load_config(tmp_path / "bad.json")


def test_flags_given_override_the_file_and_others_leave_it(tmp_path):
    config = write(
        tmp_path / "eval.yaml",
        {
            "dataset": "bilingual-example",
            "judge": {"model": "http://127.0.0.1:9/v1", "parallelism": 4, "max_tokens": 64},
            "language": "zh",
            "embedder_backend": "torch",
            "chunk_size": 8,
            "ragas_compat": True,
            "quiet": True,
            "out": str(tmp_path / "a"),
        },
    )
    base = ["--config", str(config)]
    kept = effective(*base)
    assert kept["language"] == "zh" and kept["chunk_size"] == 8 and kept["ragas_compat"] is True
    assert kept["embedder_backend"] == "torch"  # the flag's default ("auto") is no flag given
    changed = effective(
        *base, "--language", "en", "--chunk-size", "2", "--no-ragas-compat", "--no-quiet", "--no-dedupe",
        "--judge-set", "parallelism=2", "max_tokens=null", "--judge-model", "qwen",
        "--embedder-backend", "vllm",
        "--out", str(tmp_path / "b"),
    )  # fmt: skip
    url = "http://127.0.0.1:9/v1"
    assert changed["judge"] == {"model": url, "served_model_name": "qwen", "parallelism": 2}
    assert (changed["language"], changed["chunk_size"], changed["ragas_compat"]) == ("en", 2, False)
    assert (changed["quiet"], changed["dedupe"], changed["out"]) == (False, False, str(tmp_path / "b"))
    assert changed["embedder_backend"] == "vllm"
    # --judge replaces the file's judge, settings and all; the flags' own defaults change nothing
    assert effective(*base, "--judge", "smollm2-135m-instruct")["judge"] == "smollm2-135m-instruct"
    assert effective("bilingual-example", "--out", str(tmp_path)) == {
        **config_defaults(),
        "dataset": "bilingual-example",
        "out": str(tmp_path),
    }


def test_a_backend_flag_overrides_the_backend_in_the_files_model(tmp_path):
    embedder = {"model": "multilingual-e5-small", "backend": "torch", "device": "cpu"}
    config = write(tmp_path / "eval.yaml", {"embedder": embedder})
    base = ["bilingual-example", "--config", str(config), "--out", str(tmp_path)]
    assert evaluate_kwargs(effective(*base))["embedder"].backend == "torch"
    changed = effective(*base, "--embedder-backend", "vllm")
    assert changed["embedder"] == {"model": "multilingual-e5-small", "device": "cpu"}
    assert evaluate_kwargs(changed)["embedder"].backend == "vllm"


def test_the_written_config_repeats_the_run(tmp_path, server, monkeypatch):
    monkeypatch.setenv("LOOPBACK_API_KEY", "sk-never-written")
    first, again = tmp_path / "first", tmp_path / "again"
    argv = ["evaluate", "bilingual-example", "--metrics", "faithfulness", "-q", "--no-cache",
            "--judge", server.url + "/v1", "--judge-model", "served-judge",
            "--api-key-env", "LOOPBACK_API_KEY", "--judge-set", "max_retries=1", "request_timeout=30",
            "--chunk-size", "4", "--language", "en", "--column-map", "user_input=question",
            "--max-backend-errors", "0.5", "--out", str(first)]  # fmt: skip
    assert main(argv) == 0
    text = (first / "config.yaml").read_text(encoding="utf-8")
    assert "sk-never-written" not in text and "api_key_env: LOOPBACK_API_KEY" in text
    assert text.startswith("# The effective configuration")
    assert main(["evaluate", "--config", str(first / "config.yaml"), "--out", str(again)]) == 0
    assert {**written(first), "out": None} == {**written(again), "out": None}
    assert written(again)["out"] == str(again)
    keys = {r.headers["authorization"] for r in server.requests if r.path == CHAT}
    assert keys == {"Bearer sk-never-written"}  # the second run read the key from the same variable
    first_scores = json.loads((first / "results.json").read_text())["aggregate_scores"]
    assert json.loads((again / "results.json").read_text())["aggregate_scores"] == first_scores


def test_every_setting_of_evaluate_is_a_config_key(tmp_path):
    """Read from EvaluationConfig's fields: a setting added there later is a key with no change to the CLI."""
    keywords = ["dataset", "metrics", *(name for name in names() if name not in CALLBACKS)]
    defaults = config_defaults()
    assert set(keywords) <= set(defaults)
    assert {"out", "max_backend_errors", "progress_every", "quiet"} <= set(defaults)
    every = {**defaults, "dataset": "bilingual-example", "out": str(tmp_path)}
    assert load_config(write(tmp_path / "every.yaml", every)) == every
    kwargs = evaluate_kwargs(effective("--config", str(tmp_path / "every.yaml")))
    # `out` is a key too, but the command line checks the folder and passes it itself
    assert set(kwargs) == set(keywords) - {"out"}
    settings = {k: v for k, v in kwargs.items() if k not in ("dataset", "metrics")}
    EvaluationConfig.of(**settings, out=tmp_path, progress=False)  # evaluate() takes exactly these


def test_judge_set_takes_any_spec_field_and_checks_it_against_the_model(tmp_path):
    assert parse_settings("judge", ["max_tokens=64", "send_input_type=true", "dtype=float16"]) == {
        "max_tokens": 64,
        "send_input_type": True,
        "dtype": "float16",
    }
    config = effective(
        "bilingual-example", "--judge-set", "max_tokens=64", "temperature=0.5", "batch_size=4",
        "--judge-engine", "dtype=float32", "--embedder-set", "batch_size=8", "--out", str(tmp_path),
    )  # fmt: skip
    assert config["judge"] == {
        "model": "local:default",
        "max_tokens": 64,
        "temperature": 0.5,
        "dtype": "float32",
        "batch_size": 4,
    }
    kwargs = evaluate_kwargs(config)
    assert kwargs["judge"] == ModelSpec(role="judge", **config["judge"])
    assert kwargs["embedder"].batch_size == 8 and kwargs["cross_encoder"] is None


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        (["--judge-set", "max_token=64"], "'max_token' is unknown. Did you mean 'max_tokens'? Valid: model,"),
        (["--judge-set", "max_tokens"], "--judge-set 'max_tokens': write NAME=VALUE"),
        (["--judge-set", "parallelism=4"], "judge: ModelSpec parallelism: settings of http(s) endpoints"),
        (["--judge-set", "max_tokens=0"], "judge: ModelSpec.max_tokens=0"),
        (["--embedder-set", "max_tokens=8"], "embedder: ModelSpec max_tokens: decoding overrides"),
        (["--judge-set", "gpu_memory_utilization=0.5"], "use backend='vllm'"),
        (["--chunk-size", "x"], "invalid int value"),
        (["--judge", "http://me:pw@127.0.0.1:9/v1"], "judge: the URL must not contain credentials"),
    ],
)
def test_bad_settings_exit_2_before_anything_runs(tmp_path, capsys, argv, expected):
    out = tmp_path / "out"
    try:
        code = main(["evaluate", "bilingual-example", *argv, "--out", str(out)])
    except SystemExit as stop:  # argparse's own errors
        code = stop.code
    assert code == 2
    err = capsys.readouterr().err
    assert "error: " in err and expected in err
    assert not (out / "config.yaml").exists()


def test_a_missing_dataset_or_folder_is_an_error(tmp_path, capsys):
    assert main(["evaluate", "--out", str(tmp_path)]) == 2
    assert "No dataset" in capsys.readouterr().err
    assert main(["evaluate", "bilingual-example"]) == 2
    assert "No output folder: give --out" in capsys.readouterr().err


def test_relative_paths_are_written_absolute_so_the_config_repeats_from_anywhere(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "data.json").write_text("{}")
    config = effective("data.json", "--out", "out", "--cache-dir", "cache")
    assert config["dataset"] == str(tmp_path / "data.json")
    assert (config["out"], config["cache_dir"]) == (str(tmp_path / "out"), str(tmp_path / "cache"))
    (tmp_path / "bilingual-example").write_text("{}")  # a built-in name stays a name, whatever is here
    assert effective("bilingual-example", "--out", "out")["dataset"] == "bilingual-example"


def test_the_example_config_is_valid(tmp_path):
    """examples/eval.yaml, which the help names, loads and makes a judge spec for a server."""
    example = Path(__file__).resolve().parents[2] / "examples" / "eval.yaml"
    kwargs = evaluate_kwargs(effective("--config", str(example), "--out", str(tmp_path)))
    assert kwargs["judge"].is_endpoint and kwargs["judge"].api_key_env == "JUDGE_API_KEY"
    assert kwargs["embedder"] == ModelSpec(model="multilingual-e5-small", role="embedder")
    assert load_config(example)["out"] == "out/example-server"
