"""Experiments: run a job once per point of a parameter grid (chunk size, top_k, ...) with a shared
request cache, and compare the points in a self-contained HTML report and a markdown summary."""

from ascend_eval.experiments.results import ExperimentResult, PointResult
from ascend_eval.experiments.spec import SHORT_NAMES, ExperimentSpec, load_experiment
from ascend_eval.experiments.sweep import RunPoint, point_label, run_experiment

__all__ = [
    "SHORT_NAMES",
    "ExperimentResult",
    "ExperimentSpec",
    "PointResult",
    "RunPoint",
    "load_experiment",
    "point_label",
    "run_experiment",
]
