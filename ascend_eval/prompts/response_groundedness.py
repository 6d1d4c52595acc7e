"""nv_response_groundedness's two judges: is the response supported by the retrieved contexts? Ratings 0-2.

Judge 1 shows the context, then the response; judge 2 has its own (first-person) wording and shows the
response first.

Sample first, both point to the sample's contexts and keep the response in their input: pointing to the
answer as well made the ratings all but equal on both members of a pair (about 0.48 each), and a WikiEval
pair was lost; with the response in the input, no pair is lost and the ratings separate the members of a
pair as widely as task first or more (docs/metrics.md, "Prompt layout").
"""

from __future__ import annotations

from pydantic import BaseModel

from ascend_eval.prompts.layout import CONTEXTS_ONLY
from ascend_eval.prompts.ratings import rating_prompt


class GroundednessInput(BaseModel):
    context: str
    response: str


class GroundednessInputResponseFirst(BaseModel):
    response: str
    context: str


_EN_EXAMPLES = [
    (
        (
            "The Great Wall of China stretches over 21,000 km. Most of the existing wall was built during "
            "the Ming dynasty."
        ),
        "Most of the Great Wall that stands today dates from the Ming dynasty.",
        2,
    ),
    (
        "Penicillin was discovered by Alexander Fleming in 1928.",
        "Alexander Fleming discovered penicillin in 1928 and won the Nobel Prize for it in 1945.",
        1,
    ),
    (
        "The Danube flows through ten countries.",
        "The Danube is the longest river in Europe.",
        0,
    ),
]
_ZH_EXAMPLES = [
    ("敦煌莫高窟始建于十六国时期，现存洞窟735个。", "莫高窟现存735个洞窟。", 2),
    ("李白是唐代诗人，被称为“诗仙”。", "李白是唐代诗人，一生写了一万首诗。", 1),
    ("故宫位于北京中轴线的中心。", "故宫每天限流八万人。", 0),
]

GROUNDEDNESS_JUDGE_1 = rating_prompt(
    name="nv_response_groundedness_judge1",
    version=1,
    instruction={
        "en": (
            "Decide how well a response is supported by a context. Check each claim of the response "
            "against the context only, not against what you know.\n"
            "0: the response is not supported by the context, or the context or the response is empty.\n"
            "1: the context supports some of the response's claims but not all.\n"
            "2: the context supports every claim of the response."
        ),
        "zh": (
            "判断一个回答在多大程度上得到上下文的支持。只对照上下文检查回答中的每个论断，不要使用你自己的知识。\n"
            "0：回答得不到上下文支持，或者上下文、回答为空。\n"
            "1：上下文支持回答中的部分论断，但不是全部。\n"
            "2：上下文支持回答中的每一个论断。"
        ),
    },
    input=GroundednessInput,
    scale=(0, 1, 2),
    examples={
        "en": [(GroundednessInput(context=c, response=r), s) for c, r, s in _EN_EXAMPLES],
        "zh": [(GroundednessInput(context=c, response=r), s) for c, r, s in _ZH_EXAMPLES],
    },
    sample_first_parts=CONTEXTS_ONLY,
)

GROUNDEDNESS_JUDGE_2 = rating_prompt(
    name="nv_response_groundedness_judge2",
    version=1,
    instruction={
        "en": (
            "I take a response and the context it should be based on, and I check whether the context "
            "backs up what the response says, using nothing but the context.\n"
            "I answer 2 if the context backs up all of it, 1 if it backs up only part of it, and 0 if it "
            "backs up none of it or if either text is empty."
        ),
        "zh": (
            "我拿到一个回答和它应当依据的上下文，只根据上下文检查回答的内容是否有依据。\n"
            "回答的内容全部有依据，我回答 2；只有部分有依据，我回答 1；完全没有依据，或者任一文本为空，"
            "我回答 0。"
        ),
    },
    input=GroundednessInputResponseFirst,
    scale=(0, 1, 2),
    examples={
        "en": [(GroundednessInputResponseFirst(response=r, context=c), s) for c, r, s in _EN_EXAMPLES],
        "zh": [(GroundednessInputResponseFirst(response=r, context=c), s) for c, r, s in _ZH_EXAMPLES],
    },
    sample_first_parts=CONTEXTS_ONLY,
)
