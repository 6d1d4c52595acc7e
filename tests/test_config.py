"""`EvaluationConfig`: one place where every way into a run builds and checks its settings."""

from __future__ import annotations

import dataclasses
import pickle

import pytest

import ascend_eval
from ascend_eval.choices import SETTING_GROUPS
from ascend_eval.cli.config import evaluate_defaults
from ascend_eval.config import (
    CALLBACKS,
    EXECUTOR_NAMES,
    GROUP_VIEWS,
    ROLE_KEYS,
    EngineLimits,
    EvaluationConfig,
    MetricContext,
    ModelChoice,
    described,
    names,
)
from ascend_eval.executors import EXECUTORS
from ascend_eval.models.errors import ConfigError
from ascend_eval.models.spec import ModelSpec


def test_unknown_settings_are_type_errors_with_the_closest_name():
    with pytest.raises(TypeError, match=r"'judge_mod'\. Did you mean 'judge_mode'"):
        EvaluationConfig.of(judge_mod="generate")
    with pytest.raises(TypeError, match="unexpected setting 'context'"):
        EvaluationConfig.of(context=None)  # the resolved view is no setting


def test_bad_values_are_config_errors_that_name_the_setting(rule_judge, ngram_embedder):
    for settings, match in [
        ({"language": "fr"}, "language='fr'"),
        ({"judge_mode": "chat"}, "judge_mode='chat'"),
        ({"executor": "dask"}, "executor='dask'; valid: 'local', 'ray'"),
        ({"prompt_layout": "middle"}, "prompt_layout='middle'"),
        ({"scoring": "expected", "ragas_compat": True}, "scoring='expected'"),
        ({"judge": ngram_embedder}, "judge"),  # a model of another role, before anything loads
        # Each of these was once accepted, and failed mid-run or never.
        ({"chunk_size": 0}, "chunk_size must be an integer >= 1"),
        ({"memory_budget": 7.0}, r"memory_budget=7\.0: .* in \(0, 1\]"),
        ({"num_workers": -3}, "num_workers must be an integer >= 1"),
        ({"ray_address": 5}, "ray_address=5: 'auto', 'host:port'"),
        ({"dedupe": "no"}, "dedupe='no': True or False"),
        ({"cache_dir": 123}, r"cache_dir=123: a folder"),
        ({"progress": "yes"}, "progress='yes'"),
        ({"out": 3}, "out=3"),
        ({"on_round": "print"}, "on_round='print': a function"),
        # Checked from each field's description (`Setting.check`), with the same messages as before.
        ({"ray_address": "  "}, r"ray_address='  ': 'auto', 'host:port' or 'ray://host:port', or None\."),
        ({"progress": None}, r"progress=None: True or False\.$"),
        ({"out": 3}, r"out=3: a results folder \(str or Path\), or None\."),
        ({"on_progress": 1}, r"on_progress=1: a function, or None\."),
        ({"language": None}, r"language=None; valid: 'auto', 'en', 'zh' \('auto': per sample\)\.$"),
        ({"calibration": "platt"}, r"calibration='platt'; valid: 'auto', 'anchored', 'content_free'"),
        ({"embedder": rule_judge}, "embedder"),
        ({"cross_encoder": rule_judge}, "reranker"),
        # Once refused only when the model was built, as ModelSpec.backend.
        ({"judge_backend": "onnx"}, r"judge_backend='onnx'; valid: 'auto', 'torch', 'vllm'\."),
    ]:
        with pytest.raises(ConfigError, match=match):
            EvaluationConfig.of(**settings)


def test_the_values_a_setting_takes_pass(tmp_path):
    for settings in [
        {"cache_dir": False},
        {"cache_dir": tmp_path},
        {"cache_dir": str(tmp_path)},
        {"memory_budget": 1},
        {"memory_budget": 0.5},
        {"ray_address": "ray://head:10001"},
        {"dedupe": False, "progress": False, "ragas_compat": True},
        {"out": tmp_path, "on_round": print, "on_progress": lambda p: None},
    ]:
        config = EvaluationConfig.of(**settings)
        assert all(getattr(config, k) == v for k, v in settings.items())


def test_auto_is_resolved_once_for_every_executor():
    assert EvaluationConfig().context.calibration == "anchored"
    assert EvaluationConfig().context.calibration_method == "anchored"
    compat = EvaluationConfig(ragas_compat=True).context
    assert (compat.calibration, compat.calibration_method, compat.scoring, compat.prompt_layout) == (
        "off",
        None,
        "threshold",
        "task_first",
    )


def test_replace_checks_and_leaves_the_original_alone():
    base = EvaluationConfig.of(judge_mode="generate", chunk_size=8)
    changed = base.replace(judge_mode="classify")
    assert (base.judge_mode, changed.judge_mode, changed.chunk_size) == ("generate", "classify", 8)
    assert changed.context.scoring == "expected" and base.context.scoring == "threshold"
    assert EvaluationConfig.of(base) is base
    with pytest.raises(ConfigError):
        base.replace(language="de")


def test_models_give_each_role_its_value_and_backend():
    spec = ModelSpec(model="/models/qwen")
    config = EvaluationConfig(judge=spec, embedder="multilingual-e5-small", embedder_backend="vllm")
    assert config.models == {
        "judge": ModelChoice(spec, "auto"),
        "embedder": ModelChoice("multilingual-e5-small", "vllm"),
        "reranker": ModelChoice(None, "auto"),
    }
    assert set(ROLE_KEYS.values()) <= set(names())


def test_actors_get_no_callback_no_output_and_an_absolute_cache(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    config = EvaluationConfig(
        cache_dir="cache", on_round=print, on_progress=print, out=tmp_path / "out", trace=True, chunk_size=4
    )
    actors = config.for_actors()
    assert actors.cache_dir == str(tmp_path / "cache")
    assert (actors.on_round, actors.on_progress, actors.progress, actors.out, actors.trace) == (
        None,
        None,
        False,
        None,
        False,
    )
    assert actors.chunk_size == 4 and actors.context == config.context
    assert pickle.loads(pickle.dumps(actors)) == actors  # what Ray sends to each actor


def test_the_settings_are_the_config_files_keys_in_their_order():
    assert list(evaluate_defaults()) == ["dataset", "metrics", *(n for n in names() if n not in CALLBACKS)]
    assert list(EvaluationConfig().settings()) == names()
    assert set(EXECUTOR_NAMES) == set(EXECUTORS)


def test_evaluate_takes_a_config_and_settings_over_it(rule_judge):
    config = EvaluationConfig(judge=rule_judge, language="en", progress=False, cache_dir=False)
    result = ascend_eval.evaluate("bilingual-example", ["faithfulness"], config, language="zh")
    assert set(result.languages) == {"zh"}  # the keyword is over the config
    assert config.language == "en"
    with pytest.raises(TypeError, match="judge_modes"):
        ascend_eval.evaluate("bilingual-example", ["faithfulness"], config, judge_modes="x")


def test_every_setting_is_described_once_on_its_field():
    """Each field carries its group, kind, value set and flag (`ascend_eval.setting`); the command line and
    the --config file's checks are made from these."""
    from ascend_eval.choices import SETTING_GROUPS
    from ascend_eval.config import described

    settings = described()
    assert list(settings) == names()
    for name, setting in settings.items():
        assert setting.group in SETTING_GROUPS, name
        if setting.choices is not None:
            assert getattr(EvaluationConfig(), name) in setting.choices, name
        # A setting has its own flag, or names the one that sets it, or is a callback.
        assert bool(setting.flag(name)) + bool(setting.by) + (setting.group == "callbacks") == 1, name
    assert {name for name, setting in settings.items() if not setting.saved} == CALLBACKS


def test_each_setting_is_in_exactly_one_group_view_and_the_views_are_frozen():
    config = EvaluationConfig.of(chunk_size=8, judge_mode="generate", on_round=print)
    seen = [f.name for view in GROUP_VIEWS.values() for f in dataclasses.fields(view)]
    assert sorted(seen) == sorted(names()) and len(seen) == len(set(seen))
    assert list(GROUP_VIEWS) == list(SETTING_GROUPS)
    for group, view in GROUP_VIEWS.items():
        part = config.group(group)
        assert type(part) is view and view.__dataclass_params__.frozen
        assert all(described()[f.name].group == group for f in dataclasses.fields(view))
        assert all(getattr(part, f.name) == getattr(config, f.name) for f in dataclasses.fields(view))
        assert pickle.loads(pickle.dumps(part)) == part or group == "callbacks"
    with pytest.raises(dataclasses.FrozenInstanceError):
        config.group("engine").chunk_size = 1  # type: ignore[misc]
    tree = config.tree()
    assert tree.engine.chunk_size == 8 and tree.callbacks.on_round is print
    assert [f.name for f in dataclasses.fields(tree)] == list(SETTING_GROUPS)
    with pytest.raises(dataclasses.FrozenInstanceError):
        tree.engine = None  # type: ignore[misc]


def test_the_derived_views_are_made_from_the_groups():
    config = EvaluationConfig.of(judge_mode="generate", language="zh")
    scoring = [f.name for f in dataclasses.fields(GROUP_VIEWS["scoring"])]
    assert [f.name for f in dataclasses.fields(MetricContext)] == scoring
    assert (config.context.language, config.context.judge_mode) == ("zh", "generate")
    assert {f.name for f in dataclasses.fields(EngineLimits)} <= set(names())


def test_saved_is_what_config_files_hold():
    config = EvaluationConfig.of(on_round=print, on_progress=print, progress=False, chunk_size=8)
    saved = config.saved()
    assert list(saved) == [name for name in names() if name not in CALLBACKS]
    assert saved["chunk_size"] == 8 and not CALLBACKS & set(saved)
    assert list(evaluate_defaults())[2:] == list(saved)
