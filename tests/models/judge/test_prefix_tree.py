"""TorchJudge's prefix tree, KV kept across calls, continuous batching and bfloat16, on a tiny random Llama.

The layout is our prompts' (DESIGN.md, Prompts): one preamble that every request shares, then a sample's
block that the requests of that sample share, then a short task line. The tree computes the preamble
once, each sample's block once after it, then each request's own tokens: a two-level tree. Results must
equal the path that shares nothing (float32: probabilities within 1e-5, greedy text identical), and the
prompt tokens computed must drop by exactly what the tree shares.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

from ascend_eval.models.base import (  # noqa: E402
    ClassifyRequest,
    GenerateRequest,
    GenerationParams,
    Message,
)
from ascend_eval.models.device import DeviceInfo, cpu_supports_bf16  # noqa: E402
from ascend_eval.models.judge.torch import TorchJudge, TorchJudgeConfig  # noqa: E402
from ascend_eval.models.judge.torch.plan import KvOps, PrefixTree  # noqa: E402
from ascend_eval.models.platforms import cpu as cpu_platform  # noqa: E402
from ascend_eval.models.platforms import interface as platform_interface  # noqa: E402

PREAMBLE = (
    "You grade answers against their context. Read the question, the context and the answer, then do "
    "the task below. Answer with the verdict only.\n\n"
)
SAMPLES = [
    (
        "Question: why does the town build on stilts?\nContext: the river floods every spring, so the town "
        "builds its houses on stilts, and the school stands on the hill.\nAnswer: because of the floods.\n\n"
    ),
    (
        "Question: what grows on the hill?\nContext: vines and olive trees cover the southern slope of the "
        "hill; the northern slope is forest, with oaks and a few chestnuts.\nAnswer: olives and grapes.\n\n"
    ),
    (
        "Question: when does the ferry run?\nContext: the ferry leaves the harbour at seven and at noon, "
        "except on Sundays, when a single boat leaves at ten.\nAnswer: twice a day.\n\n"
    ),
]
TASKS = [
    "Task: is the answer supported? Yes or No.",
    "Task: is the answer relevant to the question? Yes or No.",
    "Task: does the answer use the context at all? Yes or No.",
]


def chat(text: str) -> tuple[Message, ...]:
    return (Message("user", text),)


def classify_requests(samples: list[str]) -> list[ClassifyRequest]:
    return [ClassifyRequest(chat(PREAMBLE + s + t), ("Yes", "No")) for s in samples for t in TASKS]


def generate_requests(samples: list[str], params: GenerationParams) -> list[GenerateRequest]:
    return [GenerateRequest(chat(PREAMBLE + s + t), params) for s in samples for t in TASKS]


def common(prompts: list[list[int]]) -> int:
    """How many leading tokens every prompt (less its last token) shares."""
    rows = [p[:-1] for p in prompts]
    n = 0
    while all(len(r) > n and r[n] == rows[0][n] for r in rows):
        n += 1
    return n


def expected_computed(judge: TorchJudge, requests: list[Any], preamble_kept: bool) -> int:
    """The prompt tokens a two-level tree computes for `requests` (whole samples of `TASKS`): the preamble
    once (none if kept from an earlier call), each sample's block once, each request's own tokens."""
    every = judge.encode_prompts([judge.chat.render(r.messages) for r in classify_requests(SAMPLES)])
    top = common(every)  # where the samples part: the preamble's end
    prompts = judge.encode_prompts([judge.chat.render(r.messages) for r in requests])
    per = len(TASKS)
    blocks = [common(prompts[k : k + per]) for k in range(0, len(prompts), per)]
    tails = sum(len(p) - blocks[j // per] for j, p in enumerate(prompts))
    return (0 if preamble_kept else top) + sum(b - top for b in blocks) + tails


@pytest.fixture(scope="module")
def unshared(tiny_llama_dir: Path) -> TorchJudge:
    return TorchJudge(TorchJudgeConfig(model=tiny_llama_dir, device="cpu", min_shared_prefix=0))


def fresh(tiny_llama_dir: Path, **kwargs: Any) -> TorchJudge:
    return TorchJudge(TorchJudgeConfig(model=tiny_llama_dir, device="cpu", **kwargs))


def test_layout_is_a_two_level_tree(unshared: TorchJudge) -> None:
    prompts = unshared.encode_prompts([unshared.chat.render(r.messages) for r in classify_requests(SAMPLES)])
    top = common(prompts)
    assert top >= 32  # the preamble is a node of its own
    assert all(common(prompts[k * 3 : k * 3 + 3]) - top >= 32 for k in range(3))  # so is each sample


def test_classify_two_level_tree_equals_unshared(tiny_llama_dir: Path, unshared: TorchJudge) -> None:
    judge = fresh(tiny_llama_dir)
    requests = classify_requests(SAMPLES)
    got = judge.classify(requests)
    want = unshared.classify(requests)
    for g, w in zip(got, want, strict=True):
        assert g.prompt_tokens == w.prompt_tokens
        assert g.probs == pytest.approx(w.probs, abs=1e-5)
    # Three passes: the preamble, the three sample blocks after it, the nine requests' own tokens.
    assert judge.forward_batches == 3
    assert judge.computed_prompt_tokens == expected_computed(judge, requests, preamble_kept=False)
    total = sum(r.prompt_tokens for r in got)
    assert unshared.computed_prompt_tokens >= total  # the unshared judge computes every prompt token
    assert judge.computed_prompt_tokens < total / 2
    assert judge.prefix_tokens_reused == total - judge.computed_prompt_tokens


@pytest.mark.parametrize("max_batch_size", [64, 2])
def test_generate_two_level_tree_equals_unshared_and_one_at_a_time(
    tiny_llama_dir: Path, unshared: TorchJudge, max_batch_size: int
) -> None:
    judge = fresh(tiny_llama_dir, max_batch_size=max_batch_size)
    requests = generate_requests(SAMPLES, GenerationParams(max_tokens=10))
    got = judge.generate(requests)
    assert got == unshared.generate(requests)
    assert got == [unshared.generate([r])[0] for r in requests]
    assert judge.computed_prompt_tokens == expected_computed(judge, requests, preamble_kept=False)


def test_a_second_call_reuses_the_kept_preamble(tiny_llama_dir: Path, unshared: TorchJudge) -> None:
    judge = fresh(tiny_llama_dir)
    first = classify_requests(SAMPLES[:2])
    judge.classify(first)
    assert judge.kv_cache_tokens > 0
    before = judge.computed_prompt_tokens
    second = classify_requests(SAMPLES[2:])  # a new sample: only the preamble is shared with the first call
    got = judge.classify(second)
    assert judge.computed_prompt_tokens - before == expected_computed(judge, second, preamble_kept=True)
    for g, w in zip(got, unshared.classify(second), strict=True):
        assert g.probs == pytest.approx(w.probs, abs=1e-5)
    # A call repeating the first one's prompts computes only each request's last tokens.
    before = judge.computed_prompt_tokens
    judge.classify(first)
    assert judge.computed_prompt_tokens - before < 20 * len(first)

    # Without a budget nothing is kept: the second call computes the preamble again.
    forgetful = fresh(tiny_llama_dir, kv_cache_bytes=0)
    forgetful.classify(first)
    assert forgetful.kv_cache_tokens == 0
    before = forgetful.computed_prompt_tokens
    forgetful.classify(second)
    again = expected_computed(judge, second, preamble_kept=False)
    assert forgetful.computed_prompt_tokens - before == again


def test_kept_prefixes_serve_generate_too(tiny_llama_dir: Path, unshared: TorchJudge) -> None:
    judge = fresh(tiny_llama_dir)
    judge.classify(classify_requests(SAMPLES[:1]))
    params = GenerationParams(max_tokens=8)
    requests = generate_requests(SAMPLES[:1], params)
    before = judge.computed_prompt_tokens
    got = judge.generate(requests)  # same prompts as the classify call (no answer_prefix): all kept
    assert judge.computed_prompt_tokens - before < 20 * len(requests)
    assert got == unshared.generate(requests)


def test_lru_eviction_keeps_the_budget() -> None:
    """The tree alone, with a fake KV of 1 byte per token: the least recently used leaf goes first, and a
    node never loses its KV before the nodes below it."""
    ops = KvOps(split=lambda kv, n: (kv[:n], kv[n:]), nbytes=len)
    tree = PrefixTree(min_shared=2, budget=10, ops=ops)
    preamble, a, b = [1, 2, 3, 4], [5, 6, 7], [8, 9, 9]
    for row in ([*preamble, *a, 0], [*preamble, *a, 1], [*preamble, *b, 0], [*preamble, *b, 1]):
        tree.insert(row)
    nodes = {}
    for row in ([*preamble, *a, 0], [*preamble, *b, 0]):
        node = tree.serving(row)
        assert node is not None
        for unit in tree.missing(node):
            for n in unit.nodes:
                tree.store(n, list(n.tokens))
        nodes[row[4]] = node
    assert tree.nbytes == 4 + 3 + 3
    tree.end_call()
    assert tree.nbytes == 10 and tree.kv_tokens == 10  # within budget: all kept
    tree.budget = 7
    tree.touch(nodes[5])  # sample a used last: sample b goes
    tree.evict()
    assert tree.nbytes == 7 and nodes[5].kv is not None and nodes[8].kv is None
    tree.budget = 3
    tree.evict()  # the preamble goes only after every node below it
    assert tree.nbytes == 0


def test_continuous_batching_refills_freed_rows(tiny_llama_dir: Path) -> None:
    """Two rows decode at a time. A long prompt leaves room for 3 tokens, two short ones take 30: when the
    long one ends, the third row joins at once instead of waiting for the second to finish."""
    probe = fresh(tiny_llama_dir)
    long = "The river floods every spring and the town " * 20
    room = len(probe.encode_prompts([probe.chat.render(chat(long))])[0]) + 3
    judge = fresh(tiny_llama_dir, max_batch_size=2, min_shared_prefix=0, max_model_len=room)
    requests = [GenerateRequest(chat(p), GenerationParams(max_tokens=30)) for p in (long, "x", "Hi")]
    got = judge.generate(requests)
    assert [r.completion_tokens for r in got] == [3, 30, 30]
    # Static batches ([long, x], then [Hi]) would take 1 + 29 and 1 + 29 passes. Refilled: the prompt
    # pass of the first two and two steps (the long row ends), then the third row's prompt pass in the
    # same round as x's next step, and 30 steps until it ends (x ends 3 steps before it).
    assert judge.forward_batches == 1 + 2 + 1 + 30 < 60
    assert judge.decode_row_steps == sum(r.completion_tokens - 1 for r in got)
    assert got == [judge.generate([r])[0] for r in requests]


def test_sampled_rows_are_independent_of_who_joins(tiny_llama_dir: Path) -> None:
    narrow = fresh(tiny_llama_dir, max_batch_size=2)
    params = GenerationParams(max_tokens=12, temperature=1.0, top_p=0.9, seed=5)
    requests = generate_requests(SAMPLES[:2], params)
    assert narrow.generate(requests) == [narrow.generate([r])[0] for r in requests]


# ------------------------------------------------------------------ bfloat16


def test_cpu_bf16_detection_reads_the_flags() -> None:
    assert cpu_supports_bf16("processor\t: 0\nflags\t\t: fpu sse avx2 avx512f avx512_bf16\n")
    assert cpu_supports_bf16("flags : amx_bf16 amx_tile amx_int8")
    assert not cpu_supports_bf16("flags : fpu sse avx2 avx512f")
    assert not cpu_supports_bf16("")


def test_auto_dtype_follows_the_device(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(cpu_platform, "cpu_supports_bf16", lambda: True)
    assert DeviceInfo("cpu").default_dtype == "bfloat16"
    monkeypatch.setattr(cpu_platform, "cpu_supports_bf16", lambda: False)
    assert DeviceInfo("cpu").default_dtype == "float32"


def test_accelerators_are_asked(monkeypatch: pytest.MonkeyPatch) -> None:
    """torch_npu answers `is_bf16_supported()`, a CUDA GPU its compute capability; an accelerator without
    bfloat16, or whose driver fails to answer, gets float16 (every NPU and GPU computes it), never float32.
    The stand-ins per chip are in tests/models/test_device_process.py."""
    from types import SimpleNamespace

    def fails() -> bool:
        raise RuntimeError("driver")

    fake = SimpleNamespace(
        cuda=SimpleNamespace(get_device_capability=lambda index=0: (7, 0)),
        npu=SimpleNamespace(is_bf16_supported=lambda: True, get_device_name=lambda index=0: "Ascend910B3"),
    )
    monkeypatch.setattr(platform_interface, "torch_module", lambda: fake)
    assert DeviceInfo("cuda", 0).default_dtype == "float16"  # a V100: no native bfloat16
    assert DeviceInfo("npu", 0).default_dtype == "bfloat16"
    fake.npu.is_bf16_supported = fails
    assert DeviceInfo("npu", 0).default_dtype == "float16"
    del fake.npu
    assert DeviceInfo("npu", 0).default_dtype == "float16"


BF16_TOLERANCE = 0.05
"""Absolute difference allowed between bfloat16 and float32 label probabilities (bfloat16 keeps 8 bits of
mantissa: logits move by ~1e-2, label probabilities by well under this)."""


def test_bf16_label_probs_match_float32(tiny_llama_dir: Path, unshared: TorchJudge) -> None:
    bf16 = fresh(tiny_llama_dir, dtype="bfloat16")
    assert bf16.dtype == torch.bfloat16
    requests = classify_requests(SAMPLES)
    got, want = bf16.classify(requests), unshared.classify(requests)
    for g, w in zip(got, want, strict=True):
        assert g.probs == pytest.approx(w.probs, abs=BF16_TOLERANCE)
    # The shared and unshared bfloat16 paths agree as closely.
    plain = fresh(tiny_llama_dir, dtype="bfloat16", min_shared_prefix=0).classify(requests)
    for g, p in zip(got, plain, strict=True):
        assert g.probs == pytest.approx(p.probs, abs=BF16_TOLERANCE)
    [result] = bf16.generate(generate_requests(SAMPLES[:1], GenerationParams(max_tokens=6))[:1])
    assert result.completion_tokens == 6 or result.finish_reason == "stop"
