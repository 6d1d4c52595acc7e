"""Calibration of yes/no verdicts: put each prompt's verdict threshold where its judge actually turns.

A yes/no verdict holds when p(yes) is above 0.5 (`VERDICT_THRESHOLD`). A small judge reading labels from
next-token probabilities leans toward one label whatever the input says, and by how much depends on the
prompt and the language. Qwen2.5-Coder-1.5B, for instance, gave every context of the Chinese fidelity pairs
p(useful) above 0.5, good rows and flawed rows alike, so context_precision tied at 1.0 on all of them.

The calibration measures the lean on the judge itself, once per (judge, prompt, language), and moves the
threshold to where it sits:

* "anchored" (what `calibration="auto"` picks): the prompt is asked about inputs whose answer is known.
  A prompt may carry its own (yes, no) anchor inputs per language, written like its real inputs
  (`ClassifyPromptSpec.anchors`); the others are built from fixed sentence pairs (`ANCHORS`): yes-anchors
  put one sentence in every field (a statement judged against itself), no-anchors put a sentence in the
  context and an unrelated one in every other field. The threshold is the midpoint of the mean yes-anchor
  and the mean no-anchor log-odds. A degenerate yes-anchor is the easiest yes there is, so it sets the
  threshold high; that suits statement support (a claim must be stated to count), but for context
  usefulness it put Qwen2.5-Coder-1.5B's threshold above the p(useful) of plainly useful Chinese contexts,
  which is why that prompt brings anchors of its own: a context that holds the answer's fact among other
  details, and one on the same subject that lacks it.
* "content_free": contextual calibration (Zhao et al., 2021, "Calibrate Before Use"): the lean is the
  judge's p(yes) on inputs with no content ("N/A", "" and "[MASK]" in every field), which it treats as a
  50/50 case. For these prompts a content-free input is not neutral: "N/A" supports no statement and helps
  no answer, so the judge rightly leans to "no" there (Qwen: p(supported) 0.22-0.42) and dividing that out
  lowers the threshold below what the judge gives an unrelated context. Kept to measure against.

Either way the verdict probability becomes `sigmoid(scale * (logit(p) - logit(threshold)))`: p equal to the
threshold reads 0.5, and the order of probabilities never changes. "anchored" also sets the scale, so that
the mean yes-anchor reads `TARGET` (0.9) and the mean no-anchor 0.1: a small judge's p(yes) spans a narrow
band (Qwen2.5-Coder-1.5B: useful Chinese contexts 0.51-0.67 after the shift, off-topic ones 0.24-0.46),
and expected scores need probabilities on the judge's own scale of sure. Without it, the expected average
precision of three contexts at (0.34, 0.51, 0.33) came out above that of the one useful context alone
(0.51): three half-likely contexts make "some context useful at rank 1" likely, so a flawed row outscored
its good twin on 5 of the 8 first Chinese pairs. The calibration requests are ordinary
`Classify` requests, rendered task first: every sample of a run asks the same few, so the engine answers
each once and caches them like any other answer. Rating scales are not calibrated: they are read as
expected ratings, with no threshold to move. `ragas_compat` turns calibration off, as RAGAS reads verdicts
as they come.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from pydantic import BaseModel

from ascend_eval.choices import Method
from ascend_eval.text.language import Language

CONTENT_FREE = ("N/A", "", "[MASK]")
"""The content-free texts, each put in every input field (Zhao et al.'s three)."""

ANCHORS: dict[Language, tuple[tuple[str, str], ...]] = {
    "en": (
        ("The museum opens at nine in the morning and closes at six in the evening.",
         "Penguins live mostly in the Southern Hemisphere."),
        ("The bridge was completed in 1932 after six years of construction.",
         "Green tea contains less caffeine than coffee."),
        ("The company moved its headquarters from Oslo to Bergen in 2019.",
         "A violin has four strings tuned in fifths."),
    ),
    "zh": (
        ("博物馆每天上午九点开门，晚上六点闭馆。", "企鹅主要生活在南半球。"),
        ("这座大桥历时六年建成，于1932年通车。", "绿茶的咖啡因含量比咖啡低。"),
        ("该公司于2019年把总部从上海迁到了杭州。", "小提琴有四根弦。"),
    ),
}  # fmt: skip
"""(sentence, unrelated sentence) pairs per language: a yes-anchor and a no-anchor each."""

TARGET = 0.9
"""The p(yes) an "anchored" calibration gives its mean yes-anchor, and 1 - TARGET its mean no-anchor."""

_EDGE = 1e-6
"""Probabilities are clipped to [_EDGE, 1 - _EDGE] before taking log-odds."""


def calibration_inputs(
    input_model: type[BaseModel],
    method: Method,
    language: Language,
    own: Sequence[tuple[BaseModel, BaseModel]] = (),
) -> list[BaseModel]:
    """The inputs a prompt is calibrated on. "anchored": the yes-anchors, then the no-anchors: the prompt's
    `own` (yes, no) pairs where it has them for `language`, else the generic `ANCHORS` sentence pairs (the
    input must have a `context` field, which holds the anchor sentence); "content_free": one input per text.

    >>> from ascend_eval.prompts.nli import SupportInput
    >>> [(x.context[:12], x.statement[:12]) for x in calibration_inputs(SupportInput, "anchored", "en")][::3]
    [('The museum o', 'The museum o'), ('The museum o', 'Penguins liv')]
    >>> [x.statement for x in calibration_inputs(SupportInput, "content_free", "en")]
    ['N/A', '', '[MASK]']
    """
    fields = list(input_model.model_fields)
    if method == "content_free":
        return [input_model.model_validate(dict.fromkeys(fields, text)) for text in CONTENT_FREE]
    if own:
        return [yes for yes, _ in own] + [no for _, no in own]
    if "context" not in fields:
        raise ValueError(f"{input_model.__name__} has no context field to anchor a calibration on")
    pairs = ANCHORS[language]
    yes = [input_model.model_validate(dict.fromkeys(fields, s)) for s, _ in pairs]
    no = [input_model.model_validate({f: s if f == "context" else t for f in fields}) for s, t in pairs]
    return yes + no


def logit(p: float) -> float:
    p = min(max(p, _EDGE), 1 - _EDGE)
    return math.log(p / (1 - p))


@dataclass(frozen=True)
class Calibration:
    """Where one prompt's verdicts turn on one judge and language, and how a verdict is moved."""

    method: Method
    threshold: float
    """The judge's p(yes) that the calibration reads as a 50/50 verdict."""
    scale: float = 1.0
    """What a verdict's log-odds about the threshold are multiplied by. "anchored" sets it so that the mean
    yes-anchor reads `TARGET` and the mean no-anchor 1 - `TARGET` (two-point Platt scaling): a judge whose
    clear cases sit at 0.58 and 0.42 is as sure as one whose clear cases sit at 0.9 and 0.1. It is 1 where
    the anchors do not come apart (the judge's spread on them says nothing) and for "content_free", which
    has no no-case."""

    @classmethod
    def measured(cls, method: Method, p_yes: Sequence[float]) -> Calibration:
        """The calibration from the judge's p(yes) on `calibration_inputs` (same order).

        >>> c = Calibration.measured("anchored", [0.8, 0.7, 0.75, 0.6, 0.5, 0.55])  # zh-like lean
        >>> c.threshold, round(c.scale, 6)
        (0.658449, 4.836029)
        >>> Calibration.measured("anchored", [0.4, 0.4, 0.4, 0.6, 0.6, 0.6]).scale  # anchors the wrong way
        1.0
        >>> Calibration.measured("content_free", [0.3, 0.4, 0.35])
        Calibration(method='content_free', threshold=0.35, scale=1.0)
        """
        if method == "content_free":  # Zhao et al. average the probabilities
            return cls(method, round(sum(p_yes) / len(p_yes), 6))
        logits = [logit(p) for p in p_yes]
        half = len(logits) // 2
        yes, no = sum(logits[:half]) / half, sum(logits[half:]) / (len(logits) - half)
        scale = 2 * logit(TARGET) / (yes - no) if yes > no else 1.0
        return cls(method, round(1 / (1 + math.exp(-(yes + no) / 2)), 6), scale)

    def apply(self, p_yes: float) -> float:
        """`p_yes` with the threshold moved to 0.5 and the spread scaled:
        `sigmoid(scale * (logit(p) - logit(threshold)))`. The order of probabilities never changes.

        >>> c = Calibration("anchored", 0.7)
        >>> round(c.apply(0.7), 6), c.apply(0.6) < 0.5 < c.apply(0.8)
        (0.5, True)
        >>> Calibration("anchored", 0.5).apply(0.62)
        0.62
        >>> round(Calibration.measured("anchored", [0.9, 0.2]).apply(0.9), 6)  # the yes-anchor reads TARGET
        0.9
        """
        if self.threshold == 0.5 and self.scale == 1.0:
            return p_yes
        # rounded so that a verdict the calibration reads as even is 0.5 exactly, not 0.5 +- 1 ulp
        return round(1 / (1 + math.exp(-self.scale * (logit(p_yes) - logit(self.threshold)))), 12)


def level_target(level: int, low: int, high: int) -> float:
    """Where an anchor of `level` should read on the [0, 1] scale of a rubric from `low` to `high`: the
    middle of its level's band, the range cut into `high - low + 1` equal bands.

    >>> [level_target(level, 1, 5) for level in (1, 3, 5)]
    [0.1, 0.5, 0.9]
    """
    return round((level - low + 0.5) / (high - low + 1), 12)


@dataclass(frozen=True)
class LevelCalibration:
    """A rubric's levels on one judge and language, measured on the rubric's labelled anchors.

    A small judge's level distribution barely moves between a weak and a strong sample: Qwen2.5-Coder-1.5B's
    most probable level was the same for both members of 31 of the project's 40 rubric pairs, where the
    probability-weighted level told them apart in 34. The calibration puts the judge's expected level on
    the anchors' scale: with x the expected level normalised to [0, 1], the calibrated position is
    `sigmoid(slope * logit(x) + intercept)`, each anchor's target the middle of its level's band
    (`level_target`). The line through the anchors (log-odds of their readings against log-odds of their
    targets) is the reduced major axis: it passes through both means, and its slope is the ratio of the
    targets' spread to the readings' spread, signed by their covariance. Both sides are noisy here (a
    judge's readings of anchors of one level scatter as much as the levels differ), and the two
    least-squares lines are biased in opposite ways: regressing the targets on the readings shrinks the
    slope toward 0 as the readings get noisier (Chinese clarity then put every sample in the middle band),
    regressing the readings on the targets and inverting swells it (Chinese clarity: a slope of
    135,000). With anchors at two levels only, one of each, it is two-point Platt scaling onto their
    targets, as `Calibration` does for yes/no verdicts. On the project's four rubrics it was chosen on (40
    pairs) the labels were right for 22 pairs with this line, 18 and 17 with the two regressions; on two
    rubrics written after, 4 of 20 (docs/criteria.md, "Rubric anchors"). The order of expected levels
    never changes, so neither do pairwise comparisons of scores; the rubric's label becomes the level whose
    band holds the calibrated position.
    """

    slope: float
    intercept: float

    @classmethod
    def measured(cls, positions: Sequence[float], targets: Sequence[float]) -> LevelCalibration | None:
        """The calibration from the judge's normalised expected levels on the anchors and their targets, or
        None where the anchors do not come apart in their levels' order (the judge's spread on them says
        nothing).

        >>> c = LevelCalibration.measured([0.45, 0.5, 0.55], [0.1, 0.5, 0.9])
        >>> round(c.apply(0.45), 3), round(c.apply(0.5), 3), round(c.apply(0.55), 3)
        (0.1, 0.5, 0.9)
        >>> c = LevelCalibration.measured([0.45, 0.47, 0.5, 0.52, 0.55], [0.1, 0.1, 0.5, 0.9, 0.9])
        >>> round(c.apply(0.3), 3), round(c.apply(0.8), 3)  # far past the anchors: at the ends
        (0.0, 1.0)
        >>> LevelCalibration.measured([0.6, 0.5], [0.1, 0.9]) is None  # the anchors the wrong way round
        True
        """
        xs, ys = [logit(p) for p in positions], [logit(t) for t in targets]
        mx, my = sum(xs) / len(xs), sum(ys) / len(ys)
        spread_x = sum((x - mx) ** 2 for x in xs)
        spread_y = sum((y - my) ** 2 for y in ys)
        together = sum((x - mx) * (y - my) for x, y in zip(xs, ys, strict=True))
        if spread_x <= 0 or together <= 0:
            return None
        slope = math.sqrt(spread_y / spread_x)
        return cls(round(slope, 6), round(my - slope * mx, 6))

    def apply(self, position: float) -> float:
        """The calibrated position of a normalised expected level, in [0, 1] (a log-odds past +-700 reads
        as 0 or 1, where the exponential would overflow)."""
        z = self.slope * logit(position) + self.intercept
        return round(1 / (1 + math.exp(-min(max(z, -700.0), 700.0))), 12)
