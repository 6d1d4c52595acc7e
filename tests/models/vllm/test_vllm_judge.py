"""`VllmJudge` against `TorchJudge` on the same real checkpoint (SmolLM2-135M-Instruct): the same greedy
text, the same label probabilities within `PROB_TOL`, and the same failure semantics."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from ascend_eval.models.base import (
    ClassifyRequest,
    ClassifyResult,
    GenerateRequest,
    GenerationParams,
    Message,
)
from ascend_eval.models.factory import build
from ascend_eval.models.lazy import LazyJudge
from ascend_eval.models.spec import ModelSpec
from ascend_eval.models.weights.paths import local_model_id
from tests.models.vllm.conftest import ENGINE, needs_vllm

needs_vllm()

from ascend_eval.models.judge.torch import TorchJudge, TorchJudgeConfig  # noqa: E402
from ascend_eval.models.judge.vllm import VllmJudge, VllmJudgeConfig  # noqa: E402

pytestmark = pytest.mark.slow

PROB_TOL = 1e-4
"""Largest absolute difference allowed between the two backends' label probabilities (float32 on the CPU;
measured: under 1e-5)."""
MAX_MODEL_LEN = 2048

SYSTEM = "You judge whether a statement is supported by a context. Answer with one digit."


def _chat(user: str) -> tuple[Message, ...]:
    return (Message("system", SYSTEM), Message("user", user))


CLASSIFY = [
    ClassifyRequest(
        _chat("Context: Paris is the capital of France.\nStatement: Paris is in France."), ("0", "1")
    ),
    ClassifyRequest(
        _chat("Context: The Nile flows north.\nStatement: The Nile flows south.\nSupported?"),
        ("Yes", "No"),
        answer_prefix="Answer:",
    ),
    ClassifyRequest(
        _chat("上下文：长江是中国最长的河流。\n陈述：长江在中国。"), ("0", "1"), answer_prefix="判断："
    ),
    ClassifyRequest(
        _chat("Rate the answer from 0 to 4: 'Water boils at 100 C at sea level.'"), ("0", "1", "2", "3", "4")
    ),
]


@pytest.fixture(scope="module")
def vllm_judge(smollm2_checkpoint: Path) -> Iterator[VllmJudge]:
    judge = VllmJudge(VllmJudgeConfig(smollm2_checkpoint, max_model_len=MAX_MODEL_LEN, **ENGINE))
    yield judge
    judge.close()


@pytest.fixture(scope="module")
def torch_judge(smollm2_checkpoint: Path) -> TorchJudge:
    return TorchJudge(TorchJudgeConfig(smollm2_checkpoint, device="cpu", max_model_len=MAX_MODEL_LEN))


def test_model_id_is_the_torch_backends(vllm_judge: VllmJudge, torch_judge: TorchJudge, smollm2_checkpoint):
    """The request cache is keyed on model_id, so both backends must name the checkpoint alike."""
    assert vllm_judge.model_id == torch_judge.model_id == local_model_id(smollm2_checkpoint)
    lazy = build(ModelSpec(model=smollm2_checkpoint, role="judge", backend="vllm", device="cpu"))
    assert isinstance(lazy, LazyJudge) and not lazy.loaded
    assert lazy.model_id == vllm_judge.model_id
    assert vllm_judge.exact_label_logprobs  # vLLM 0.32 returns the label tokens' logprobs directly


def test_classify_matches_torch(vllm_judge: VllmJudge, torch_judge: TorchJudge) -> None:
    ours = vllm_judge.classify(CLASSIFY)
    theirs = torch_judge.classify(CLASSIFY)
    worst = 0.0
    for a, b, request in zip(ours, theirs, CLASSIFY, strict=True):
        assert a.error is None and b.error is None
        assert a.labels == request.labels and a.prompt_tokens == b.prompt_tokens
        assert sum(a.probs) == pytest.approx(1.0, abs=1e-9)
        worst = max(worst, *(abs(x - y) for x, y in zip(a.probs, b.probs, strict=True)))
        assert a.label == b.label
    print(f"\nlargest label-probability difference vLLM vs torch: {worst:.2e}")
    assert worst < PROB_TOL
    # Not a degenerate answer: the model does prefer some labels.
    assert max(max(r.probs) for r in ours) > 0.5


def test_classify_prompt_too_long_fails_alone(vllm_judge: VllmJudge) -> None:
    long = ClassifyRequest(_chat("word " * MAX_MODEL_LEN), ("0", "1"))
    results = vllm_judge.classify([CLASSIFY[0], long, CLASSIFY[1]])
    assert results[0].error is None and results[2].error is None
    assert results[1] == ClassifyResult(("0", "1"), (), error=results[1].error)
    assert "max_model_len=2048" in results[1].error
    assert results[0].probs == pytest.approx(vllm_judge.classify([CLASSIFY[0]])[0].probs, abs=1e-6)


SCHEMA = GenerationParams.schema_text(
    {
        "type": "object",
        "properties": {"reason": {"type": "string", "maxLength": 40}, "verdict": {"type": "integer"}},
        "required": ["reason", "verdict"],
        "additionalProperties": False,
    }
)


def _generate_requests() -> list[GenerateRequest]:
    return [
        GenerateRequest(
            _chat("What is the capital of France? Answer in one sentence."), GenerationParams(max_tokens=40)
        ),
        GenerateRequest(
            _chat("List three colours, one per line."), GenerationParams(max_tokens=40, stop=("\n",))
        ),
        GenerateRequest(_chat("Tell me a long story about a dragon."), GenerationParams(max_tokens=7)),
        GenerateRequest(
            _chat("Is the sky green? Reply as JSON with a reason and a verdict 0 or 1."),
            GenerationParams(max_tokens=60, json_schema=SCHEMA),
        ),
    ]


def test_generate_matches_torch(vllm_judge: VllmJudge, torch_judge: TorchJudge) -> None:
    requests = _generate_requests()
    ours = vllm_judge.generate(requests)
    theirs = torch_judge.generate(requests)
    for a, b in zip(ours, theirs, strict=True):
        assert a.error is None
        assert (a.text, a.finish_reason, a.prompt_tokens) == (b.text, b.finish_reason, b.prompt_tokens)
    assert "\n" not in ours[1].text and ours[1].finish_reason == "stop"
    assert ours[2].finish_reason == "length" and ours[2].completion_tokens == 7
    parsed = json.loads(ours[3].text)
    assert set(parsed) == {"reason", "verdict"} and isinstance(parsed["verdict"], int)


def test_generate_prompt_too_long_fails_alone(vllm_judge: VllmJudge) -> None:
    requests = _generate_requests()[:1]
    long = GenerateRequest(_chat("word " * MAX_MODEL_LEN), GenerationParams(max_tokens=4))
    results = vllm_judge.generate([long, *requests])
    assert results[0].finish_reason == "error" and "max_model_len=2048" in results[0].error
    assert results[1].error is None and results[1].text


def test_seeded_sampling_over_several_steps_of_prefill(vllm_judge: VllmJudge) -> None:
    # Four ~1.5k-token prompts exceed one step's default budget on the CPU (4096 tokens): with chunked
    # prefill a prompt would be split, and rewinding its seeded generator killed the engine.
    params = GenerationParams(max_tokens=4, temperature=0.3, seed=3)
    requests = [GenerateRequest(_chat(f"{i} " + "river bridge tower " * 500), params) for i in range(4)]
    results = vllm_judge.generate(requests)
    assert all(r.error is None and r.prompt_tokens > 1400 and r.completion_tokens for r in results), results
    again = vllm_judge.generate(requests[:1])[0]
    assert (again.text, again.completion_tokens) == (results[0].text, results[0].completion_tokens)


def test_seeded_sampling_repeats(vllm_judge: VllmJudge) -> None:
    params = GenerationParams(max_tokens=16, temperature=1.0, seed=7)
    request = GenerateRequest(_chat("Write a word."), params)
    first, second = vllm_judge.generate([request, request])
    again = vllm_judge.generate([request])[0]
    assert first.text == second.text == again.text


def test_loop_guard_stops_looping_rows_in_vllm_too(smollm2_checkpoint: Path) -> None:
    """vLLM's own repetition detection runs the loop guard: the rows SmolLM2 loops on (greedy) end with
    "repetition" before their cap, their text the start of the unguarded one; the row that does not loop
    is the same as without the guard."""
    prompts = [
        "Write the word cat one hundred times, separated by spaces.",
        "Count from 1 to 5.",
        "List the colours of the rainbow, then repeat the list ten times.",
    ]
    requests = [GenerateRequest((Message("user", p),), GenerationParams(max_tokens=200)) for p in prompts]
    unguarded = VllmJudge(
        VllmJudgeConfig(smollm2_checkpoint, max_model_len=MAX_MODEL_LEN, loop_guard=0, **ENGINE)
    )
    try:
        whole = unguarded.generate(requests)
    finally:
        unguarded.close()
    guarded = VllmJudge(VllmJudgeConfig(smollm2_checkpoint, max_model_len=MAX_MODEL_LEN, **ENGINE))
    try:
        cut = guarded.generate(requests)
    finally:
        guarded.close()
    looping = [i for i, r in enumerate(whole) if r.finish_reason == "length"]
    assert looping, [r.text for r in whole]
    for i, (c, w) in enumerate(zip(cut, whole, strict=True)):
        if i in looping:
            assert c.finish_reason == "repetition" and c.completion_tokens < w.completion_tokens
            assert w.text.startswith(c.text)
        else:
            assert c == w
