"""Rating prompts for the NV-style dual-judge metrics, built once in both judge modes.

A rating prompt is an instruction, a fixed integer scale and examples. From one definition `rating_prompt`
builds the `Classify` prompt (labels are the scale's digits, read from next-token probabilities) and the
JSON prompt (`{"rating": int}` with an enum schema), so the two modes always ask the same question. The
instruction describes the scale only; each spec adds its own answer format.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Generic, Literal, TypeVar

from pydantic import BaseModel, field_validator

from ascend_eval.prompts.base import ClassifyPromptSpec, PromptSpec
from ascend_eval.prompts.layout import PARTS, Part
from ascend_eval.text.language import Language

In = TypeVar("In", bound=BaseModel)


def as_int(value: object) -> object:
    """An integral number written as a string or float, as an int; anything else unchanged (validation
    then rejects it). Used before `Literal` checks, which accept only real ints.

    >>> as_int("2"), as_int(" 4 "), as_int(1.0), as_int(True)
    (2, 4, 1, 1)
    >>> as_int("2.5"), as_int(2.5), as_int("yes")
    ('2.5', 2.5, 'yes')
    """
    if isinstance(value, bool):
        return int(value)
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, str) and value.strip().isdigit():
        return int(value.strip())
    return value


class LenientInts(BaseModel):
    """A JSON answer whose `rating` or `verdict` (where it has one) may come as "2" or 2.0: a judge without
    schema-constrained decoding writes them so, and RAGAS's int reads them. `as_int` first, then the
    field's own check."""

    @field_validator("rating", "verdict", mode="before", check_fields=False)
    @classmethod
    def _lenient(cls, value: object) -> object:
        return as_int(value)


# No docstrings on the output models: pydantic would put them in the schema that every prompt shows.
class RatingEven(LenientInts):  # answer accuracy
    rating: Literal[0, 2, 4]


class RatingSmall(LenientInts):  # context relevance, response groundedness
    rating: Literal[0, 1, 2]


_OUTPUTS: dict[tuple[int, ...], type[RatingEven] | type[RatingSmall]] = {
    (0, 2, 4): RatingEven,
    (0, 1, 2): RatingSmall,
}


@dataclass(frozen=True)
class RatingPrompt(Generic[In]):
    """One judge's question in both judge modes."""

    scale: tuple[int, ...]
    classify: ClassifyPromptSpec[In]
    generate: PromptSpec[In, RatingEven] | PromptSpec[In, RatingSmall]

    @property
    def top(self) -> int:
        """The highest rating; ratings are divided by it to land in [0, 1]."""
        return max(self.scale)


def rating_prompt(
    name: str,
    version: int,
    instruction: Mapping[Language, str],
    input: type[In],
    scale: tuple[int, ...],
    examples: Mapping[Language, Sequence[tuple[In, int]]],
    *,
    sample_first: bool = True,
    sample_first_parts: frozenset[Part] = PARTS,
) -> RatingPrompt[In]:
    """Build the classify and the JSON form of one rating prompt.

    Args:
        name: prompt name; the JSON form is tagged `<name>_json@<version>`.
        version: bump when the wording or the examples change (it is part of every cache key).
        instruction: the task and the meaning of each rating, per language, without an answer format.
        input: the pydantic model of the sample's fields, in the order they are shown.
        scale: the allowed ratings, ascending: (0, 2, 4) or (0, 1, 2).
        examples: (input, rating) pairs per language.
        sample_first: whether both forms take the sample-first layout (`PromptSpec.sample_first`).
        sample_first_parts: the sample's parts both forms point to there (`PromptSpec.sample_first_parts`).

    Returns:
        Both forms and the scale.
    """
    output = _OUTPUTS[scale]
    classify = ClassifyPromptSpec(
        name=name,
        version=version,
        instruction=instruction,
        input=input,
        labels=tuple(str(r) for r in scale),
        examples={lang: [(x, str(r)) for x, r in pairs] for lang, pairs in examples.items()},
        sample_first=sample_first,
        sample_first_parts=sample_first_parts,
    )
    generate = PromptSpec(
        name=f"{name}_json",
        version=version,
        instruction=instruction,
        input=input,
        output=output,
        examples={lang: [(x, output(rating=r)) for x, r in pairs] for lang, pairs in examples.items()},
        max_tokens=32,
        sample_first=sample_first,
        sample_first_parts=sample_first_parts,
    )
    return RatingPrompt(scale=scale, classify=classify, generate=generate)  # type: ignore[arg-type]
