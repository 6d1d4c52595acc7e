"""How a run reads classify-mode verdicts: its calibration and its scoring, "auto" resolved in one place.

`EvaluationConfig` resolves them here, once for every executor, so that a run scores and records the same
details wherever it runs. The measured case for the defaults is in docs/metrics.md ("Calibration and
expected scores").

>>> resolve_calibration("auto", judge_mode="classify", ragas_compat=False)
'anchored'
>>> resolve_scoring("auto", judge_mode="classify", ragas_compat=True)
'threshold'
"""

from __future__ import annotations

from ascend_eval.choices import CALIBRATION_SETTINGS, SCORING_SETTINGS, Scoring
from ascend_eval.errors import ConfigError


def resolve_calibration(value: str, *, judge_mode: str, ragas_compat: bool) -> str:
    """The calibration a run uses ("off" or a method): "auto" is "anchored" in classify mode and "off"
    under `ragas_compat` or in generate mode; an explicit method is checked against the judge mode."""
    if value not in CALIBRATION_SETTINGS:
        raise ConfigError(f"calibration={value!r}; valid: {', '.join(map(repr, CALIBRATION_SETTINGS))}.")
    if value == "auto":
        return "off" if ragas_compat or judge_mode == "generate" else "anchored"
    if value != "off" and (ragas_compat or judge_mode == "generate"):
        raise ConfigError(
            f"calibration={value!r} moves the threshold of classify-mode verdict probabilities; "
            f"{'ragas_compat reads verdicts as RAGAS does' if ragas_compat else 'generate mode has none'}. "
            "Use calibration='auto' or 'off'."
        )
    return value


def resolve_scoring(value: str, *, judge_mode: str, ragas_compat: bool) -> Scoring:
    """The scoring a run uses: "auto" is "expected" in classify mode and "threshold" under `ragas_compat`
    or in generate mode; an explicit "expected" is checked against the judge mode."""
    if value not in SCORING_SETTINGS:
        raise ConfigError(f"scoring={value!r}; valid: {', '.join(map(repr, SCORING_SETTINGS))}.")
    hard = ragas_compat or judge_mode == "generate"
    if value == "auto":
        return "threshold" if hard else "expected"
    if value == "expected" and hard:
        raise ConfigError(
            "scoring='expected' reads verdict probabilities, which only judge_mode='classify' has, and "
            "ragas_compat counts hard verdicts as RAGAS does; use scoring='auto' or 'threshold'."
        )
    return "expected" if value == "expected" else "threshold"
