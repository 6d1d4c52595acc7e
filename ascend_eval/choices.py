"""The value sets of a run's settings, each defined once, as a `Literal` type whose values are read from it:
`EvaluationConfig`'s checks, the command line's `choices` and the metrics' own types all take them from
here (the judge backends are `ascend_eval.models.spec`'s, the languages `ascend_eval.text.language`'s).

>>> JUDGE_MODES, LAYOUT_SETTINGS
(('classify', 'generate'), ('auto', 'sample_first', 'task_first'))
>>> CALIBRATION_SETTINGS, EXECUTOR_NAMES
(('auto', 'anchored', 'content_free', 'off'), ('local', 'ray'))
"""

from __future__ import annotations

from typing import Literal, get_args

from ascend_eval.models.spec import BACKENDS, Backend
from ascend_eval.text.language import Language

AUTO = "auto"
"""The setting that lets the run choose: by the sample, the judge mode or `ragas_compat`."""

LANGUAGE_SETTINGS: tuple[str, ...] = (AUTO, *get_args(Language))
"""`language`: "auto" (per sample, by its share of Chinese characters) or a `Language`."""

JudgeMode = Literal["classify", "generate"]
JUDGE_MODES: tuple[JudgeMode, ...] = get_args(JudgeMode)
"""`judge_mode`: verdicts read from next-token probabilities, or generated as JSON with reasons."""

Scoring = Literal["threshold", "expected"]
SCORINGS: tuple[Scoring, ...] = get_args(Scoring)
SCORING_SETTINGS: tuple[str, ...] = (AUTO, *SCORINGS)
"""`scoring`: each verdict counted as yes or no, or a score's expected value under the verdict
probabilities."""

Method = Literal["anchored", "content_free"]
METHODS: tuple[Method, ...] = get_args(Method)
OFF = "off"
CALIBRATION_SETTINGS: tuple[str, ...] = (AUTO, *METHODS, OFF)
"""`calibration`: a method (`ascend_eval.prompts.calibration`), "off", or "auto"."""

Layout = Literal["sample_first", "task_first"]
LAYOUTS: tuple[Layout, ...] = get_args(Layout)
LAYOUT_SETTINGS: tuple[str, ...] = (AUTO, *LAYOUTS)
"""`prompt_layout` (`ascend_eval.prompts.layout`)."""

ExecutorName = Literal["local", "ray"]
EXECUTOR_NAMES: tuple[ExecutorName, ...] = get_args(ExecutorName)
"""`executor`: this process's streaming engine, or a Ray Data pipeline (`ascend_eval.executors.EXECUTORS`
holds one function for each)."""

SettingGroup = Literal["data", "models", "scoring", "engine", "executor", "output", "callbacks"]
SETTING_GROUPS: tuple[SettingGroup, ...] = get_args(SettingGroup)
"""The groups of `EvaluationConfig`'s settings (`ascend_eval.setting`), in the order `ascend-eval evaluate
--help` lists them: the callbacks, which only a caller in this process can give, have no flag."""

__all__ = [
    "AUTO",
    "BACKENDS",
    "CALIBRATION_SETTINGS",
    "EXECUTOR_NAMES",
    "JUDGE_MODES",
    "LANGUAGE_SETTINGS",
    "LAYOUTS",
    "LAYOUT_SETTINGS",
    "METHODS",
    "OFF",
    "SCORINGS",
    "SCORING_SETTINGS",
    "SETTING_GROUPS",
    "Backend",
    "ExecutorName",
    "JudgeMode",
    "Layout",
    "Method",
    "Scoring",
    "SettingGroup",
]
