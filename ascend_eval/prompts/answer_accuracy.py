"""nv_accuracy's two judges: how well does an answer match a reference answer? Ratings 0, 2, 4.

Judge 1 shows the question, the answer to rate, then the reference. Judge 2 has its own (first-person)
wording and shows the reference before the answer to rate. Which text fills which field of judge 2 is the
metric's choice (see `metrics.nv_accuracy`).
"""

from __future__ import annotations

from pydantic import BaseModel

from ascend_eval.prompts.ratings import rating_prompt


class AccuracyInput(BaseModel):
    question: str
    answer: str
    reference_answer: str


class AccuracyInputReferenceFirst(BaseModel):
    question: str
    reference_answer: str
    answer: str


_EN_EXAMPLES = [
    ("How tall is Mount Fuji?", "Mount Fuji is 3,776 metres tall.", "Mount Fuji rises to 3,776 m.", 4),
    (
        "When and where was the first modern Olympics held?",
        "They were held in Athens.",
        "The first modern Olympic Games were held in Athens in 1896.",
        2,
    ),
    ("Who wrote 'Pride and Prejudice'?", "Charlotte Brontë.", "Jane Austen wrote 'Pride and Prejudice'.", 0),
]
_ZH_EXAMPLES = [
    ("黄河全长多少公里？", "黄河全长约5464公里。", "黄河全长约5464千米。", 4),
    ("秦始皇统一六国是在哪一年？由谁完成？", "由秦始皇完成。", "公元前221年，秦始皇统一六国。", 2),
    ("《红楼梦》的作者是谁？", "罗贯中。", "《红楼梦》的作者是曹雪芹。", 0),
]

ACCURACY_JUDGE_1 = rating_prompt(
    name="nv_accuracy_judge1",
    version=1,
    instruction={
        "en": (
            "You grade an answer to a question against a reference answer, which is fully correct and "
            "complete. Compare what the two say: names, topics, numbers, dates and units.\n"
            "4: the answer says the same as the reference answer, with nothing wrong or missing.\n"
            "2: the answer is partly the same: it is correct but incomplete, or mostly right with a "
            "small error.\n"
            "0: the answer is wrong, contradicts the reference answer, or does not answer the question."
        ),
        "zh": (
            "你要对照参考答案给一个回答打分。参考答案完全正确且完整。请比较两者的内容：名称、主题、数字、日期"
            "和单位。\n"
            "4：回答与参考答案意思相同，没有错误或遗漏。\n"
            "2：回答部分相同：正确但不完整，或大体正确但有小错误。\n"
            "0：回答错误、与参考答案矛盾，或没有回答问题。"
        ),
    },
    input=AccuracyInput,
    scale=(0, 2, 4),
    examples={
        "en": [(AccuracyInput(question=q, answer=a, reference_answer=r), s) for q, a, r, s in _EN_EXAMPLES],
        "zh": [(AccuracyInput(question=q, answer=a, reference_answer=r), s) for q, a, r, s in _ZH_EXAMPLES],
    },
)

ACCURACY_JUDGE_2 = rating_prompt(
    name="nv_accuracy_judge2",
    version=1,
    instruction={
        "en": (
            "I am checking whether an answer agrees with a reference answer to the same question. I take "
            "the reference answer as the truth and look at every fact in it: names, topics, numbers, "
            "dates and units.\n"
            "I give 4 when the answer agrees with the reference answer completely.\n"
            "I give 2 when the answer agrees only in part: something is missing or slightly off.\n"
            "I give 0 when the answer disagrees with the reference answer or misses the question."
        ),
        "zh": (
            "我要检查一个回答是否与同一问题的参考答案一致。我以参考答案为准，逐一核对其中的事实：名称、主题、"
            "数字、日期和单位。\n"
            "回答与参考答案完全一致，我给 4。\n"
            "回答只部分一致（有遗漏或略有偏差），我给 2。\n"
            "回答与参考答案不一致或答非所问，我给 0。"
        ),
    },
    input=AccuracyInputReferenceFirst,
    scale=(0, 2, 4),
    examples={
        "en": [
            (AccuracyInputReferenceFirst(question=q, reference_answer=r, answer=a), s)
            for q, a, r, s in _EN_EXAMPLES
        ],
        "zh": [
            (AccuracyInputReferenceFirst(question=q, reference_answer=r, answer=a), s)
            for q, a, r, s in _ZH_EXAMPLES
        ],
    },
)
