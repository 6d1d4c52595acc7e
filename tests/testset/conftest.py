"""A scripted judge for test-set generation: it writes a question and answer from the chunk text in the
prompt, and answers the two verdicts by rule. Markers in a chunk make it fail one filter on purpose:

- `UNREADABLE`: the judge writes text that is no JSON;
- `COPYME`: the question is the chunk's first sentence, word for word;
- `ORPHAN`: the question says "the passage" (not standalone);
- `NOANSWER`: the answerable verdict is No;
- `BADVERDICT`: the verdicts come back over other labels (unreadable);
- `TWIN`: the question is the same for every such chunk (near-duplicates);
- `PASTE`: the answer is the whole chunk, word for word.
"""

from __future__ import annotations

import json
import re

import pytest

from ascend_eval.models.base import ClassifyRequest, ClassifyResult, GenerateRequest
from ascend_eval.models.judge.replay import ReplayJudge
from ascend_eval.prompts.layout import read_input
from tests.conftest import NgramEmbedder


def _first_sentence(text: str) -> str:
    return re.split(r"(?<=[.!?。！？])\s*", text.strip())[0]


def write_rule(request: GenerateRequest) -> str:
    """A question about the first words of each passage, the first sentence of each as the answer."""
    data = read_input(request.messages[-1].content)
    passages = [data["passage"]] if "passage" in data else data["passages"]
    zh = "中文书写" in request.messages[-1].content
    first = passages[0]
    if "UNREADABLE" in first:
        return "I am sorry, I cannot write JSON today."
    if "COPYME" in first:
        question = _first_sentence(first)
    elif "TWIN" in first:
        question = "Which town keeps the twin lighthouse records?"
    elif zh:
        question = "关于" + "和".join(p.strip()[:10] for p in passages) + "，资料说了什么？"
    else:
        topics = " and ".join(" ".join(p.split()[:6]) for p in passages)
        question = f"What is said about {topics}?"
    if "ORPHAN" in first:
        question = "What does the passage say about ORPHAN?"
    if data.get("persona"):
        question = f"[{data['persona']}] {question}"
    answer = first if "PASTE" in first else " ".join(_first_sentence(p) for p in passages)
    return json.dumps({"question": question, "answer": answer}, ensure_ascii=False)


def verdict_rule(request: ClassifyRequest) -> list[float] | ClassifyResult:
    """Yes (0.9) unless a marker says otherwise; `BADVERDICT` answers over labels the prompt did not ask."""
    data = read_input(request.messages[-1].content)
    text = json.dumps(data, ensure_ascii=False)
    if "BADVERDICT" in text:
        return ClassifyResult(("maybe", "perhaps"), (0.5, 0.5))
    yes = 0.9
    if "passages" not in data and "the passage" in data["question"]:
        yes = 0.1
    if "passages" in data and "NOANSWER" in text:
        yes = 0.1
    return [yes if label == "Yes" else 1 - yes for label in request.labels]


def scripted_judge(model_id: str = "scripted-testset") -> ReplayJudge:
    return ReplayJudge(generate_rule=write_rule, classify_rule=verdict_rule, model_id=model_id)


@pytest.fixture
def judge() -> ReplayJudge:
    return scripted_judge()


@pytest.fixture
def embedder() -> NgramEmbedder:
    return NgramEmbedder(dim=512)


def requests_sent(judge: ReplayJudge) -> int:
    """Requests the judge answered (all backend calls together)."""
    return sum(n for _, n in judge.calls)
