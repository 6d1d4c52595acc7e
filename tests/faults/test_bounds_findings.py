"""Issue 48, "bounds on everything a caller or a judge controls", items 1, 2, 5 and 6 (item 10, the cache
upgrade, is in test_cache_corruption.py).

1. A count setting had no upper bound: `parallelism: 1e9` in a v2 job, `judge_max_workers: 1e12` in a v1
   one, `ModelSpec(parallelism=...)`, `chunk_size`, batch sizes, Ray's `num_workers` or the server's
   `--concurrency` were accepted, and a run started threads until the host could start no more. Each is
   now bounded (`ascend_eval.models.checks`): over it is a ConfigError naming the setting, the bound and
   the fix, and the service answers 422 before it writes anything.
2. `request_timeout` bounded each read, not the attempt: a judge that sent its answer a byte every half
   second held a request for minutes. It now bounds the whole attempt (connect, headers, body).
5. A judge reply of 200,000 `[` took hours to look for JSON in (quadratic), and 200,000 nested brackets
   raised RecursionError in `json.loads`: a NaN with a full traceback. Both are a NaN with the reason and
   one WARNING now.
6. A YAML alias bomb ("billion laughs") took 70 s and 3.2 GB, then a MemoryError, in `--config`, and hung
   a `job run`. Every user YAML file is read by `ascend_eval.yaml_files.load_yaml`, which refuses aliases
   that stand for more than 100,000 values, or for themselves, before any value is built.
"""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import httpx
import pytest

import ascend_eval
from ascend_eval.cli.main import main
from ascend_eval.config import EvaluationConfig
from ascend_eval.jobs.spec import load_spec
from ascend_eval.models.errors import ConfigError
from ascend_eval.models.http import EndpointConfig
from ascend_eval.models.judge.openai import OpenAIJudge
from ascend_eval.models.spec import ModelSpec
from tests.jobs.conftest import inline_spec_for
from tests.models.loopback_server import CHAT, LoopbackServer, Reply, chat_reply
from tests.serve.conftest import Server

ROOT = Path(__file__).resolve().parents[2]
URL = "http://127.0.0.1:9/v1"  # never called: everything below is refused before a request
ROW = {
    "question": ["What colour is the sky?"],
    "contexts": [["The sky is blue."]],
    "answer": ["The sky is blue."],
}

# --- 1. count settings ---------------------------------------------------------------------------------


def _checkpoint(tmp_path: Path) -> Path:
    folder = tmp_path / "model"
    folder.mkdir(exist_ok=True)
    (folder / "config.json").write_text("{}")
    return folder


def _job(**judge: Any) -> dict[str, Any]:
    spec = inline_spec_for(URL, secret=None)
    spec["metric_params"]["judge_llm"].update(judge)
    return spec


def _build(setting: str, value: int, tmp_path: Path) -> Any:
    """Build what `setting` is a setting of, with `value`."""
    from ascend_eval.models.embedder.openai import OpenAIEmbedder
    from ascend_eval.models.embedder.sentence_transformers import TorchEmbedderConfig
    from ascend_eval.models.judge.torch.config import TorchJudgeConfig
    from ascend_eval.models.reranker.cross_encoder import TorchRerankerConfig
    from ascend_eval.models.vllm_runtime import VllmEngineConfig
    from ascend_eval.ragas import RunConfig
    from ascend_eval.ragas import evaluate as ragas_evaluate
    from ascend_eval.ragas.models import with_run_config

    def served(concurrency: int) -> Any:
        pytest.importorskip("fastapi", reason="ascend-eval serve needs the serve extra")
        from ascend_eval.serve.service import Settings

        return Settings(jobs_dir=tmp_path, token="t", concurrency=concurrency)

    builders = {
        "ModelSpec.parallelism": lambda: ModelSpec(model=URL, parallelism=value),
        "ModelSpec.parallelism as a float": lambda: ModelSpec(model=URL, parallelism=float(value)),
        "ModelSpec.batch_size": lambda: ModelSpec(model="/models/e5", batch_size=value),
        "ModelSpec.tensor_parallel_size": lambda: ModelSpec(
            model="/models/qwen", backend="vllm", tensor_parallel_size=value
        ),
        "EndpointConfig.parallelism": lambda: EndpointConfig(url=URL, model="m", parallelism=value),
        "chunk_size": lambda: EvaluationConfig.of(chunk_size=value),
        "num_workers": lambda: EvaluationConfig.of(num_workers=value),
        "TorchJudgeConfig.max_batch_size": lambda: TorchJudgeConfig(
            model=_checkpoint(tmp_path), max_batch_size=value
        ),
        "TorchEmbedderConfig.batch_size": lambda: TorchEmbedderConfig(model="/models/e5", batch_size=value),
        "TorchRerankerConfig.batch_size": lambda: TorchRerankerConfig(model="/models/ce", batch_size=value),
        "VllmEngineConfig.tensor_parallel_size": lambda: VllmEngineConfig(
            model="/models/qwen", tensor_parallel_size=value
        ),
        "OpenAIEmbedder batch_size": lambda: OpenAIEmbedder(
            EndpointConfig(url=URL, model="m"), batch_size=value
        ).close(),
        "job judge_llm.parallelism": lambda: load_spec(_job(parallelism=value)),
        "job executor.num_workers": lambda: load_spec({**_job(), "executor": {"num_workers": value}}),
        "RAGAS RunConfig.max_workers": lambda: with_run_config(
            ModelSpec(model=URL), RunConfig(max_workers=value)
        ),
        "RAGAS evaluate batch_size": lambda: ragas_evaluate({}, batch_size=value),
        "serve --concurrency": lambda: served(value),
    }
    return builders[setting]()


BOUNDED = {
    # setting: (its bound, what the message calls it)
    "ModelSpec.parallelism": (1024, "ModelSpec.parallelism"),
    "ModelSpec.parallelism as a float": (1024, "ModelSpec.parallelism"),
    "ModelSpec.batch_size": (4096, "ModelSpec.batch_size"),
    "ModelSpec.tensor_parallel_size": (64, "ModelSpec.tensor_parallel_size"),
    "EndpointConfig.parallelism": (1024, "EndpointConfig.parallelism"),
    "chunk_size": (65536, "chunk_size"),
    "num_workers": (1024, "num_workers"),
    "TorchJudgeConfig.max_batch_size": (4096, "TorchJudgeConfig.max_batch_size"),
    "TorchEmbedderConfig.batch_size": (4096, "batch_size"),
    "TorchRerankerConfig.batch_size": (4096, "batch_size"),
    "VllmEngineConfig.tensor_parallel_size": (64, "VllmEngineConfig.tensor_parallel_size"),
    "OpenAIEmbedder batch_size": (4096, "batch_size"),
    "job judge_llm.parallelism": (1024, "judge_llm.parallelism"),
    "job executor.num_workers": (1024, "executor.num_workers"),
    "RAGAS RunConfig.max_workers": (1024, "ModelSpec.parallelism"),
    "RAGAS evaluate batch_size": (65536, "batch_size"),
    "serve --concurrency": (64, "--concurrency"),
}


@pytest.mark.parametrize("setting", list(BOUNDED))
def test_a_count_setting_over_its_bound_is_a_config_error_naming_it(setting, tmp_path):
    bound, name = BOUNDED[setting]
    for value in (bound + 1, 10**9):
        with pytest.raises(ConfigError) as caught:
            _build(setting, value, tmp_path)
        message = " ".join(str(caught.value).split())
        assert name in message, message  # the setting,
        assert f"{bound:,}" in message, message  # its bound,
        assert f"{value}" in message or f"{value:,}" in message, message  # what was given
        assert f"Lower it to {bound:,} or less" in message, message  # and the fix


@pytest.mark.parametrize("setting", [s for s in BOUNDED if not s.startswith("RAGAS evaluate")])
def test_a_count_setting_at_its_bound_is_accepted(setting, tmp_path):
    _build(setting, BOUNDED[setting][0], tmp_path)


def test_the_command_line_refuses_a_huge_parallelism_before_any_request(tmp_path, capsys):
    with LoopbackServer() as server:
        code = main(
            [
                "evaluate",
                _rows_file(tmp_path),
                "--metrics",
                "faithfulness",
                "--judge",
                server.url + "/v1",
                "--judge-set",
                "parallelism=1000000000",
                "--no-cache",
                "--out",
                str(tmp_path / "out"),
            ]
        )
        assert code == 2 and server.requests == []
    err = capsys.readouterr().err
    assert "parallelism=1000000000 is over its bound of 1,024" in err and "Traceback" not in err
    assert not (tmp_path / "out").exists()


def test_evaluate_refuses_a_huge_chunk_size_before_the_judge_is_asked(tmp_path):
    with LoopbackServer() as server, pytest.raises(ConfigError, match="chunk_size=1000000000000 is over"):
        ascend_eval.evaluate(ROW, ["faithfulness"], judge=server.url + "/v1", chunk_size=10**12)
    assert server.requests == []


def _rows_file(tmp_path: Path) -> str:
    path = tmp_path / "rows.json"
    path.write_text(json.dumps(ROW))
    return str(path)


@pytest.fixture(scope="module")
def rest(tmp_path_factory: pytest.TempPathFactory):
    pytest.importorskip("fastapi", reason="ascend-eval serve needs the serve extra")
    pytest.importorskip("uvicorn", reason="ascend-eval serve needs the serve extra")
    server = Server(tmp_path_factory.mktemp("bounds")).start()
    try:
        yield server
    finally:
        server.stop()


def _v1(**params: Any) -> dict[str, Any]:
    config = {
        "type": "rag",
        "tasks": {
            "t": {
                "type": "ragas",
                "metrics": {"f": {"type": "faithfulness"}},
                "params": {"judge_llm": {"api_endpoint": {"url": URL, "model_id": "judge"}}, **params},
            }
        },
    }
    rows = [{"question": "q?", "contexts": ["c."], "answer": "a."}]
    return {"config": config, "target": {"type": "rows", "rows": rows}}


PARAMS = ["config", "tasks", "t", "params"]
# (route, body as JSON text, so that 1e9 stays a JSON number with an exponent, where the 422 must be)
HUGE_BODIES = {
    "v1 judge_max_workers": (
        "/v1/evaluation/jobs",
        json.dumps(_v1(judge_max_workers=0)).replace('"judge_max_workers": 0', '"judge_max_workers": 1e12'),
        [*PARAMS, "judge_max_workers"],
    ),
    "v2 judge_max_workers": (
        "/v2/evaluation/jobs",
        json.dumps({"spec": _v1(judge_max_workers=0)}).replace(
            '"judge_max_workers": 0', '"judge_max_workers": 1e12'
        ),
        ["spec", *PARAMS, "judge_max_workers"],
    ),
    "v2 spec parallelism": (
        "/v2/evaluation/jobs",
        json.dumps({"spec": _job(parallelism=0)}).replace('"parallelism": 0', '"parallelism": 1e9'),
        ["spec", "metric_params", "judge_llm", "parallelism"],
    ),
    "v1 spec executor.num_workers": (
        "/v1/evaluation/jobs",
        json.dumps({**_job(), "executor": {"num_workers": 0}}).replace(
            '"num_workers": 0', '"num_workers": 1e9'
        ),
        ["executor", "num_workers"],
    ),
}


@pytest.mark.parametrize("case", list(HUGE_BODIES))
def test_the_service_refuses_a_huge_count_with_a_422_before_writing_anything(rest, case):
    route, body, where = HUGE_BODIES[case]
    before = sorted(p.name for p in rest.jobs_dir.iterdir()) if rest.jobs_dir.is_dir() else []
    headers = {**rest.headers(), "Content-Type": "application/json"}
    reply = httpx.post(rest.url + route, content=body.encode(), headers=headers, timeout=30)
    assert reply.status_code == 422, reply.text
    [error] = reply.json()["detail"]
    assert error["loc"] == ["body", *where], error
    name = where[-1]
    assert f"{name}=" in error["msg"] and "over its bound of 1,024" in error["msg"], error["msg"]
    after = sorted(p.name for p in rest.jobs_dir.iterdir()) if rest.jobs_dir.is_dir() else []
    assert after == before  # no job folder
    assert not rest.secrets_dir.is_dir() or not any(rest.secrets_dir.iterdir())  # no stored key


# --- 2. a judge that trickles --------------------------------------------------------------------------

TIMEOUT = 1.0
TRICKLE = 0.5  # seconds per byte: a chat reply of ~300 bytes takes minutes, each read returns in 0.5 s
ENDS_BEFORE = 20.0  # seconds; an attempt is bounded by TIMEOUT, so two attempts take about 2


@pytest.mark.parametrize("headers", [False, True], ids=["body", "headers"])
def test_a_judge_that_trickles_its_answer_is_cut_off_at_request_timeout(headers):
    """Before, each read waited at most request_timeout, and each got a byte in 0.5 s: one request took
    `len(reply) * 0.5` s per attempt (minutes). The run is watched from a thread, so that a client that
    is not cut off fails this test in ENDS_BEFORE seconds instead of hanging it."""
    with LoopbackServer() as server:
        reply = Reply(
            chat_reply('{"statements": ["The sky is blue."]}'), trickle=TRICKLE, trickle_headers=headers
        )
        server.route(CHAT, lambda body: reply)
        assert len(json.dumps(reply.body)) * TRICKLE > 60  # the whole answer would take minutes
        config = EndpointConfig(
            url=server.url, model="judge", request_timeout=TIMEOUT, max_retries=1, backoff_base=0.01
        )
        done: dict[str, Any] = {}

        def score() -> None:
            with OpenAIJudge(config) as judge:
                done["result"] = ascend_eval.evaluate(
                    ROW, ["faithfulness"], judge=judge, cache_dir=False, progress=False
                )

        started = time.monotonic()
        worker = threading.Thread(target=score, daemon=True)
        worker.start()
        worker.join(ENDS_BEFORE)
        took = time.monotonic() - started
        assert not worker.is_alive(), f"the run still waits on a trickling judge after {took:.0f} s"
    [row] = done["result"].rows()
    assert row["faithfulness"] is None
    reason = row["faithfulness_reason"]
    assert reason.startswith("backend_error") and "failed after 2 attempt(s): timed out" in reason, reason
    assert f"no whole answer in {TIMEOUT}s" in reason
    assert 1 <= len([r for r in server.requests if r.path == CHAT]) <= 2


# --- 5. a judge reply nested 200,000 deep --------------------------------------------------------------

DEEP_REPLIES = {
    "200,000 [": ("[" * 200_000, "nests brackets more than 64 deep"),
    "200,000 [ then 200,000 ]": ("[" * 200_000 + "]" * 200_000, "nests brackets more than 64 deep"),
    "an object, then 200,000 [": ('{"statements": ' + "[" * 200_000, "nests brackets more than 64 deep"),
    "an integer of 5,000 digits": ('{"statements": [' + "1" * 5000 + "]}", "parse_failure"),
}


@pytest.mark.parametrize("case", list(DEEP_REPLIES))
def test_a_judge_reply_nested_too_deep_is_a_nan_with_one_log_line(case, caplog, capfd):
    text, reason = DEEP_REPLIES[case]
    with LoopbackServer() as server:
        server.route(CHAT, lambda body: chat_reply(text))
        server.route("/v1/models", lambda body: {"object": "list", "data": [{"id": "judge"}]})
        done: dict[str, Any] = {}

        def score() -> None:
            with caplog.at_level(logging.INFO):
                done["result"] = ascend_eval.evaluate(
                    ROW, ["faithfulness"], judge=server.url + "/v1", cache_dir=False, progress=False
                )

        worker = threading.Thread(target=score, daemon=True)  # so that a quadratic search fails, not hangs
        worker.start()
        worker.join(120)
        assert not worker.is_alive(), "looking for JSON in the reply still goes on after 120 s"
    [row] = done["result"].rows()
    assert row["faithfulness"] is None and reason in row["faithfulness_reason"], row
    assert row["faithfulness_reason"].startswith("parse_failure")
    out, err = capfd.readouterr()
    assert "Traceback" not in out + err + caplog.text
    assert not [r for r in caplog.records if r.exc_info]
    if "nests" in reason:
        [line] = [r for r in caplog.records if "nests brackets" in r.getMessage()]
        assert line.levelno == logging.WARNING and "statements@" in line.getMessage()


# --- 6. YAML alias bombs -------------------------------------------------------------------------------


def billion_laughs(key: str = "metrics") -> str:
    """Nine lines that stand for 10^9 strings, under `key`."""
    lines = [f"{key}:", '  - &a0 ["lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol"]']
    lines += [f"  - &a{i} [{', '.join([f'*a{i - 1}'] * 10)}]" for i in range(1, 9)]
    return "\n".join(lines) + "\n"


JOB_HEAD = (
    f"metric: faithfulness\ndataset: rows.jsonl\nmetric_params:\n  judge_llm:\n    model: {{url: '{URL}'}}\n"
)


def _in_child(code: str, timeout: float = 120) -> tuple[int, str, str]:
    """Run `code` in a Python child held to 2 GiB of address space: (exit code, stdout, stderr). A bomb
    that gets through fails there (a MemoryError, or the timeout), not in pytest's process."""
    limit = "import resource, sys; resource.setrlimit(resource.RLIMIT_AS, (2 << 30, 2 << 30))\n"
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
    try:
        done = subprocess.run(
            [sys.executable, "-c", limit + code],
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=timeout,
            env=env,
        )
    except subprocess.TimeoutExpired:
        raise AssertionError(f"still running after {timeout} s") from None
    return done.returncode, done.stdout, done.stderr


READERS = {
    "--config": ("config.yaml", billion_laughs(), "from ascend_eval.cli.config import load_config as read"),
    "job spec": (
        "job.yaml",
        JOB_HEAD + billion_laughs("x"),
        "from ascend_eval.jobs.spec import load_spec as read",
    ),
    "experiment file": (
        "sweep.yaml",
        JOB_HEAD + "sweep: {top_k: [1, 2]}\n" + billion_laughs("x"),
        "from ascend_eval.experiments.spec import load_experiment as read",
    ),
}


@pytest.mark.parametrize("reader", list(READERS))
def test_a_billion_laughs_file_is_refused_fast_naming_the_file(reader, tmp_path):
    name, text, load = READERS[reader]
    path = tmp_path / name
    path.write_text(text)
    code, out, err = _in_child(
        f"{load}\nimport json, time\nfrom ascend_eval.models.errors import ConfigError\n"
        "before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss\n"
        "started = time.monotonic()\n"
        f"try:\n    read({str(path)!r})\nexcept ConfigError as e:\n    message = str(e)\n"
        "else:\n    sys.exit(5)\n"
        "seconds = time.monotonic() - started\n"
        "grew = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before\n"
        "print(json.dumps({'seconds': seconds, 'grew_kib': grew, 'message': message}))\n"
    )
    assert code == 0, err[-2000:]
    found = json.loads(out.strip().splitlines()[-1])
    message = found["message"]
    assert found["seconds"] < 5, found  # about 0.01 s; before, minutes (a walk over 10^9 values)
    assert found["grew_kib"] < 100_000, found  # the bomb is never built out (before: gigabytes)
    assert str(path) in message and "aliases" in message and "1,234,567,880 values" in message, message
    assert "100,000" in message


@pytest.mark.parametrize("command", ["evaluate", "job run"])
def test_the_command_line_refuses_a_billion_laughs_file_with_exit_2(command, tmp_path):
    if command == "evaluate":
        path = tmp_path / "bomb.yaml"
        path.write_text(billion_laughs())
        argv = ["evaluate", "--config", str(path), "--out", str(tmp_path / "out")]
    else:
        path = tmp_path / "job.yaml"
        path.write_text(JOB_HEAD + billion_laughs("x"))
        argv = ["job", "--jobs-dir", str(tmp_path / "jobs"), "run", str(path)]
    code, _, err = _in_child(f"from ascend_eval.cli.main import main\nsys.exit(main({argv!r}))\n")
    assert code == 2, err[-2000:]
    assert "Traceback" not in err and "MemoryError" not in err
    assert str(path) in err and "aliases" in err and "alias bomb" in err


YAML_CASES = {
    "an alias inside its own value": ("metrics: &m [faithfulness, *m]\n", "holds an alias of itself"),
    "merge keys that double at each step": (
        "m0: &m0 {a: 1, b: 2}\n"
        + "".join(f"m{i}: &m{i} {{<<: [*m{i - 1}, *m{i - 1}], k{i}: 1}}\n" for i in range(1, 40)),
        "more than the 100,000",
    ),
    "lists nested 5,000 deep": ("metrics: " + "[" * 5000 + "]" * 5000 + "\n", "nests lists or mappings"),
}


@pytest.mark.parametrize("case", list(YAML_CASES))
def test_other_yaml_that_never_ends_is_a_config_error(case, tmp_path):
    from ascend_eval.cli.config import load_config

    text, expected = YAML_CASES[case]
    path = tmp_path / "config.yaml"
    path.write_text(text)
    with pytest.raises(ConfigError, match=expected) as caught:
        load_config(path)
    assert str(path) in str(caught.value)


def test_anchors_within_the_bound_still_read_as_before(tmp_path):
    from ascend_eval.cli.config import load_config

    path = tmp_path / "config.yaml"
    path.write_text(
        "judge: &j {model: 'http://127.0.0.1:9/v1', parallelism: 8}\n"
        "cross_encoder: {<<: *j, model: 'http://127.0.0.1:9/v1/ranking'}\n"
        "metrics: &m [faithfulness, context_recall]\n"
    )
    config = load_config(path)
    assert config["judge"] == {"model": "http://127.0.0.1:9/v1", "parallelism": 8}
    assert config["cross_encoder"]["parallelism"] == 8
    job = tmp_path / "job.yaml"
    job.write_text(
        "metric: faithfulness\ndataset: {rows: [{question: q, contexts: [c], answer: a}]}\n"
        f"model: &m {{url: '{URL}', name: judge}}\nmetric_params: {{judge_llm: {{model: *m}}}}\n"
    )
    spec = load_spec(job)
    assert spec.model is not None and spec.metric_params.judge_llm is not None
    assert spec.metric_params.judge_llm.model.url == spec.model.url == URL
