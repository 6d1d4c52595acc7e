"""One model-building path: a judge given as command-line flags, as `evaluate()`'s keywords, in a
`--config` file, in a job spec or on its way to a Ray actor becomes one and the same `ModelSpec`
(`ascend_eval.models.factory.model_spec`, where its backend setting is merged in once), and the registry's
builder is asked for exactly that spec. The builder is a recorder here: no model loads."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from ascend_eval import evaluate
from ascend_eval.cli.main import main
from ascend_eval.config import EvaluationConfig
from ascend_eval.executors.ray_data import for_actor, placement_of
from ascend_eval.jobs.runtimes import JobModels
from ascend_eval.jobs.secrets import SecretStore
from ascend_eval.jobs.spec import JudgeLLM, ModelRef
from ascend_eval.models import backends
from ascend_eval.models.errors import ConfigError
from ascend_eval.models.factory import build_models, model_spec
from ascend_eval.models.spec import ModelSpec

RUN = ["bilingual-example", "--metrics", "faithfulness", "-q", "--no-cache"]


class Asked(ConfigError):
    """What the recording builder raises, so that the run ends where the model would be built."""


@pytest.fixture
def asked(monkeypatch: pytest.MonkeyPatch) -> list[ModelSpec]:
    """The specs the registry's judge builders are asked to build, in order."""
    specs: list[ModelSpec] = []

    def record(spec: ModelSpec) -> None:
        specs.append(spec)
        raise Asked(f"asked to build {spec.model}")

    table = {**backends.BUILDERS, ("judge", "torch"): record, ("judge", "vllm"): record}
    monkeypatch.setattr(backends, "BUILDERS", table)
    return specs


@pytest.fixture
def judge(tmp_path: Path) -> str:
    folder = tmp_path / "judge"
    folder.mkdir()
    return str(folder)


def _cli(judge: str, backend: str, out: Path) -> list[str]:
    return [
        "evaluate",
        *RUN,
        "--judge",
        judge,
        "--judge-backend",
        backend,
        "--device",
        "cpu",
        "--out",
        str(out),
    ]


def _config_file(judge: str, backend: str, folder: Path) -> list[str]:
    file = folder / "eval.yaml"
    settings = {"dataset": "bilingual-example", "metrics": ["faithfulness"], "cache_dir": False}
    settings.update(judge=judge, judge_backend=backend, device="cpu")
    file.write_text(yaml.safe_dump(settings), encoding="utf-8")
    return ["evaluate", "--config", str(file), "-q", "--out", str(folder / "out")]


def _ray_actor(judge: str, backend: str) -> None:
    """What the Ray executor does with the judge: the driver's specs, placed on each actor, which builds
    them (`ray_data.evaluate_on_ray`, `BatchScorer.__init__`)."""
    config = EvaluationConfig.of(judge=judge, judge_backend=backend, device="cpu")
    models = config.model_specs(["judge"])
    placement = placement_of(models, config.device or "auto", {"CPU": 4.0})
    actors = {role: for_actor(spec, placement, 2) for role, spec in models.items()}
    build_models(actors, memory_budget=config.for_actors().memory_budget)


@pytest.mark.parametrize("backend", ["auto", "vllm"])
def test_every_entry_point_builds_the_same_spec_through_the_registry(
    backend: str, judge: str, asked: list[ModelSpec], tmp_path: Path
) -> None:
    expected = ModelSpec(model=judge, role="judge", backend=backend, device="cpu")
    assert main(_cli(judge, backend, tmp_path / "flags")) == 2
    assert main(_config_file(judge, backend, tmp_path)) == 2
    with pytest.raises(Asked):
        evaluate("bilingual-example", ["faithfulness"], judge=judge, judge_backend=backend, device="cpu")
    with pytest.raises(Asked):
        _ray_actor(judge, backend)
    ways = 4
    if backend == "auto":  # a job spec names no backend: its local models run on the default one
        spec = JobModels(SecretStore(tmp_path / "secrets"), device="cpu").judge_spec(
            JudgeLLM(model=ModelRef(url=judge))
        )
        with pytest.raises(Asked):
            evaluate("bilingual-example", ["faithfulness"], judge=spec, cache_dir=False)
        ways += 1
    assert asked == [expected] * ways


def test_a_spec_goes_to_the_registry_as_it_was_made(judge: str, asked: list[ModelSpec]) -> None:
    """The backend is merged where the setting is read, once: the spec the command line made reaches the
    builder as the same object (on the CPU: no memory budget's share is set), and `model_spec` leaves a
    merged spec as it is."""
    spec = model_spec({"model": judge, "max_model_len": 4096, "device": "cpu"}, "judge", backend="vllm")
    assert (spec.backend, spec.max_model_len) == ("vllm", 4096)  # checked against the vllm backend
    assert model_spec(spec, "judge", backend="vllm") is spec
    config = EvaluationConfig.of(judge=spec, judge_backend="vllm")
    assert config.model_specs(["judge"])["judge"] is spec
    with pytest.raises(Asked):
        build_models(config.model_specs(["judge"]))
    assert asked[0] is spec


def test_a_spec_whose_backend_contradicts_the_setting_is_refused_before_any_model_loads(
    judge: str, asked: list[ModelSpec], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    named = r"judge_backend='vllm' but the judge's ModelSpec says backend='torch'; set it in one place"
    with pytest.raises(ConfigError, match=named):
        evaluate(
            "bilingual-example",
            ["faithfulness"],
            judge=ModelSpec(model=judge, backend="torch"),
            judge_backend="vllm",
            cache_dir=False,
        )
    file = tmp_path / "eval.yaml"
    file.write_text(
        yaml.safe_dump({"judge": {"model": judge, "backend": "torch"}, "judge_backend": "vllm"}),
        encoding="utf-8",
    )
    assert main(["evaluate", *RUN, "--config", str(file), "--out", str(tmp_path / "out")]) == 2
    assert (
        "judge: judge_backend='vllm' but the judge's ModelSpec says backend='torch'"
        in capsys.readouterr().err
    )
    assert asked == []
