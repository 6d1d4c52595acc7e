"""Prompts for the metrics users write themselves: a yes/no criterion and a rubric of scored levels.

Both are built from what the user wrote (a name, a definition or levels, the sample fields to show) in
both judge modes, as the built-in prompts are:

* a criterion: a `Classify` prompt over "No" and "Yes", read from next-token probabilities, and a JSON
  prompt `{"reason": ..., "verdict": 0 or 1}` for the "generate" judge mode;
* a rubric: a `Classify` prompt whose labels are the levels' digits, and a JSON prompt
  `{"reason": ..., "rating": <level>}` with the levels as an enum in the schema.

The template around the user's words follows the sample's language; the definition is shown as written,
so a criterion written in Chinese judges English samples and the other way round. The input holds the
fields the metric reads, under their own names (question, contexts, answer, reference, or the user's
column), so the sample-first layout points to the sample's texts as it does for every other prompt.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Literal

from pydantic import BaseModel, create_model

from ascend_eval.prompts.base import ClassifyPromptSpec, PromptSpec, yes_no_forms
from ascend_eval.prompts.ratings import LenientInts
from ascend_eval.text.language import Language

YES, NO = "Yes", "No"
"""A criterion's labels. Against "1"/"0" (the built-in verdicts' labels) on the project's criteria pairs
with Qwen2.5-Coder-1.5B: 40 of 60 pairs right against 37, level or ahead on every criterion and language
(docs/criteria.md, "Measured")."""

_CRITERION = {
    "en": (
        'Criterion "{name}": {definition}\n'
        "Does the sample below meet this criterion? Answer Yes or No. Judge this criterion only, from the "
        "fields given, whatever else is right or wrong with the sample."
    ),
    "zh": (
        "标准“{name}”：{definition}\n"
        "下面的样本是否符合这条标准？回答 Yes 或 No。只评判这一条标准，只依据给出的字段，"
        "不管样本在其他方面是否有问题。"
    ),
}
_CRITERION_REASON = {
    "en": " First give a short reason, then the verdict: 1 if the sample meets the criterion, 0 if not.",
    "zh": "先给出简短理由，再给出结论：符合标准为 1，不符合为 0。",
}
_RUBRIC = {
    "en": (
        'Rate the sample on one rubric, "{name}".{definition}\nLevels:\n{levels}\n'
        "Answer with the level whose description fits the sample best. Rate this rubric only, from the "
        "fields given."
    ),
    "zh": (
        "按照评分细则“{name}”给样本评分。{definition}\n等级：\n{levels}\n"
        "回答最符合样本情况的那个等级。只按这一细则评分，只依据给出的字段。"
    ),
}
_RUBRIC_REASON = {
    "en": (
        " First, in one or two sentences, say what the sample does well and what it lacks on this rubric;"
        " then the rating: the level whose description fits it best."
    ),
    "zh": "先用一两句话说明样本在这一细则上做到了什么、欠缺什么，再给出评分：描述最符合的那个等级。",
}
"""The generate mode's reason, for a rubric: what the sample does and lacks, then the level. Against "first
give a short reason" (version 1), whose reasons Qwen2.5-Coder-1.5B mostly opened with the lowest level's
words, on the project's four rubrics (40 pairs): 12 right against 8, 5 pairs gained and 1 lost (paired 95%
interval [0, +9]), ahead on the two rubrics written after this wording was chosen (docs/criteria.md)."""


class CriterionVerdict(LenientInts):
    reason: str
    verdict: Literal[0, 1]


def input_model(name: str, fields: Sequence[str]) -> type[BaseModel]:
    """The input of a user's metric: one text field per field it reads, in that order."""
    model: type[BaseModel] = create_model(  # type: ignore[call-overload]
        f"Input_{name}", **{f: (str, ...) for f in fields}
    )
    return model


def _tag(kind: str, name: str) -> str:
    return f"{kind}:{name}"


def criterion_prompts(
    name: str,
    definition: str,
    fields: Sequence[str],
    examples: Sequence[tuple[Mapping[str, str], bool, str]] = (),
    anchors: Sequence[tuple[Mapping[str, str], bool, str]] = (),
) -> tuple[ClassifyPromptSpec[Any], PromptSpec[Any, CriterionVerdict]]:
    """A criterion's classify and JSON prompts.

    Args:
        name: the metric's name, shown to the judge and in the prompts' tags.
        definition: the yes/no question, as the user wrote it.
        fields: the input's fields, in order.
        examples: (the fields' texts, whether the criterion holds, a reason or "") per example; they
            teach both forms in both languages. They are not calibration anchors: an anchor the prompt
            also shows with its answer is answered from the example, not judged.
        anchors: (the fields' texts, whether the criterion holds, _) per labelled sample the prompt never
            shows: the classify prompt's calibration anchors in both languages, yes- and no-anchors paired
            in order, the shorter list repeating.

    >>> classify, generate = criterion_prompts("polite", "Is the answer polite?", ["answer"])
    >>> classify.labels, classify.positive, generate.tag
    (('No', 'Yes'), 'Yes', 'criterion:polite_verdict@1')
    >>> print(classify.instruction["en"].splitlines()[0])
    Criterion "polite": Is the answer polite?
    """
    model = input_model(name, fields)
    shown = [(model.model_validate(dict(x)), holds, reason) for x, holds, reason in examples]
    task = {lang: text.format(name=name, definition=definition.strip()) for lang, text in _CRITERION.items()}
    return yes_no_forms(
        _tag("criterion", name),
        task,
        _CRITERION_REASON,
        model,
        CriterionVerdict,
        {
            lang: [(x, CriterionVerdict(reason=r or "-", verdict=int(holds))) for x, holds, r in shown]
            for lang in ("en", "zh")
        },
        anchors=dict.fromkeys(("en", "zh"), paired) if (paired := _paired(model, anchors)) else {},
        labels=(NO, YES),
    )


def _paired(
    model: type[BaseModel], anchors: Sequence[tuple[Mapping[str, str], bool, str]]
) -> list[tuple[BaseModel, BaseModel]]:
    """(yes, no) anchor inputs, in order, the shorter list repeating; none without both kinds.

    >>> m = input_model("c", ["answer"])
    >>> given = [({"answer": "a"}, True, ""), ({"answer": "b"}, False, ""), ({"answer": "c"}, False, "")]
    >>> [(y.answer, n.answer) for y, n in _paired(m, given)]
    [('a', 'b'), ('a', 'c')]
    """
    yes = [model.model_validate(dict(x)) for x, holds, _ in anchors if holds]
    no = [model.model_validate(dict(x)) for x, holds, _ in anchors if not holds]
    if not yes or not no:
        return []
    return [(yes[i % len(yes)], no[i % len(no)]) for i in range(max(len(yes), len(no)))]


def rubric_prompts(
    name: str,
    levels: Mapping[int, str],
    fields: Sequence[str],
    definition: str = "",
    examples: Sequence[tuple[Mapping[str, str], int, str]] = (),
) -> tuple[ClassifyPromptSpec[Any], PromptSpec[Any, Any]]:
    """A rubric's classify and JSON prompts: the levels ascending, each with its description.

    Args:
        name: the metric's name.
        levels: level -> description; single digits (each label is one token).
        fields: the input's fields, in order.
        definition: what is rated, in a sentence (optional).
        examples: (the fields' texts, the level, a reason or "") per example.

    >>> classify, generate = rubric_prompts("clarity", {1: "Confusing.", 3: "Clear."}, ["answer"])
    >>> classify.labels, classify.positive
    (('1', '3'), None)
    >>> print(classify.instruction["en"].splitlines()[2])
    1: Confusing.
    """
    order = sorted(levels)
    model = input_model(name, fields)
    output: type[BaseModel] = create_model(  # type: ignore[call-overload]
        f"Rating_{name}", __base__=LenientInts, reason=(str, ...), rating=(Literal[tuple(order)], ...)
    )
    described = "\n".join(f"{level}: {levels[level].strip()}" for level in order)
    task = {
        lang: text.format(
            name=name, definition=f" {definition.strip()}" if definition.strip() else "", levels=described
        )
        for lang, text in _RUBRIC.items()
    }
    langs: tuple[Language, ...] = ("en", "zh")
    shown = [(model.model_validate(dict(x)), level, reason) for x, level, reason in examples]
    classify = ClassifyPromptSpec(
        name=_tag("rubric", name),
        version=1,
        instruction=task,
        input=model,
        labels=tuple(str(level) for level in order),
        examples={lang: [(x, str(level)) for x, level, _ in shown] for lang in langs},
    )
    generate = PromptSpec(
        name=f"{_tag('rubric', name)}_json",
        version=2,
        instruction={lang: task[lang] + _RUBRIC_REASON[lang] for lang in langs},
        input=model,
        output=output,
        examples={
            lang: [(x, output(reason=r or "-", rating=level)) for x, level, r in shown] for lang in langs
        },
        max_tokens=256,
    )
    return classify, generate
