"""TorchJudge on a tiny random Llama: batching, padding, order, limits and constrained decoding.

Random weights say nothing about quality; what is checked is that a request's answer does not depend on
the batch it lands in, that limits apply per request, and that constrained output always parses.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

from ascend_eval.models.base import (  # noqa: E402
    ClassifyRequest,
    ClassifyResult,
    GenerateRequest,
    GenerationParams,
    Judge,
    Message,
)
from ascend_eval.models.errors import ConfigError  # noqa: E402
from ascend_eval.models.judge.chat import ChatRenderer, render_plain  # noqa: E402
from ascend_eval.models.judge.torch import TorchJudge, TorchJudgeConfig  # noqa: E402
from ascend_eval.models.weights.paths import local_model_id as checkpoint_id  # noqa: E402

LONG = (
    "Summarise the following context in one sentence. " + "The river floods every spring and the town " * 40
)
PROMPTS = ["Hi", LONG, "Is the sky blue?", "Name three colours of the rainbow, in order, please.", "x"]

VERDICT_SCHEMA = {
    "type": "object",
    "properties": {"verdict": {"enum": [0, 1]}},
    "required": ["verdict"],
    "additionalProperties": False,
}
LIST_SCHEMA = {
    "type": "object",
    "properties": {
        "statements": {"type": "array", "items": {"type": "string", "maxLength": 12}, "maxItems": 3}
    },
    "required": ["statements"],
    "additionalProperties": False,
}


def assert_same_classes(got: list[ClassifyResult], expected: list[ClassifyResult]) -> None:
    """Equal up to float32 rounding, which depends on the batch shape."""
    assert [(r.labels, r.prompt_tokens, r.error) for r in got] == [
        (r.labels, r.prompt_tokens, r.error) for r in expected
    ]
    for g, e in zip(got, expected, strict=True):
        assert g.probs == pytest.approx(e.probs, abs=1e-5)


def chat(text: str, system: str | None = None) -> tuple[Message, ...]:
    head = (Message("system", system),) if system else ()
    return (*head, Message("user", text))


def gen_requests(params: GenerationParams, prompts: list[str] = PROMPTS) -> list[GenerateRequest]:
    return [GenerateRequest(chat(p), params) for p in prompts]


@pytest.fixture(scope="module")
def judge(tiny_llama_dir: Path) -> TorchJudge:
    return TorchJudge(TorchJudgeConfig(model=tiny_llama_dir, device="cpu"))


def test_is_a_judge_with_content_id(judge: TorchJudge, tiny_llama_dir: Path) -> None:
    assert isinstance(judge, Judge)
    assert judge.model_id == checkpoint_id(tiny_llama_dir)
    assert judge.model_id.startswith(tiny_llama_dir.name + "@")
    assert judge.dtype == torch.float32  # "auto" on the CPU
    assert judge.generate([]) == [] and judge.classify([]) == []


@pytest.mark.real_cpu_precision
def test_auto_takes_this_cpus_precision_and_still_gives_probabilities(tiny_llama_dir: Path) -> None:
    from ascend_eval.models.device import cpu_supports_bf16

    judge = TorchJudge(TorchJudgeConfig(model=tiny_llama_dir, device="cpu"))
    assert judge.dtype == (torch.bfloat16 if cpu_supports_bf16() else torch.float32)
    [result] = judge.classify([ClassifyRequest((Message("user", "Is the sky blue?"),), ("0", "1"))])
    assert sum(result.probs) == pytest.approx(1.0, abs=1e-3) and all(0.0 <= p <= 1.0 for p in result.probs)


def test_model_id_follows_config_and_weights(tiny_llama_dir: Path, tmp_path: Path) -> None:
    copy = tmp_path / tiny_llama_dir.name
    shutil.copytree(tiny_llama_dir, copy)
    assert checkpoint_id(copy) == checkpoint_id(tiny_llama_dir)  # the hash is of content, not of location
    config = json.loads((copy / "config.json").read_text())
    config["rms_norm_eps"] = 1e-5
    (copy / "config.json").write_text(json.dumps(config))
    changed_config = checkpoint_id(copy)
    assert changed_config != checkpoint_id(tiny_llama_dir)
    with (copy / "model.safetensors").open("ab") as f:
        f.write(b"\0")
    assert checkpoint_id(copy) != changed_config


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"dtype": "fp8"}, "dtype"),
        ({"token_budget": 0}, "token_budget"),
        ({"max_batch_size": 0}, "max_batch_size"),
        ({"max_model_len": 1}, "max_model_len"),
        ({"min_shared_prefix": -1}, "min_shared_prefix"),
    ],
)
def test_config_rejects_bad_values(tiny_llama_dir: Path, kwargs: dict[str, Any], match: str) -> None:
    with pytest.raises(ConfigError, match=match):
        TorchJudgeConfig(model=tiny_llama_dir, **kwargs)


def test_config_rejects_missing_model(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"neither a \.gguf file nor a checkpoint"):
        TorchJudgeConfig(model=tmp_path / "nowhere")
    with pytest.raises(ConfigError, match="no such GGUF"):
        TorchJudgeConfig(model=tmp_path / "missing.gguf")


def test_max_model_len_beyond_model_is_an_error(tiny_llama_dir: Path) -> None:
    with pytest.raises(ConfigError, match="max_position_embeddings=4096"):
        TorchJudge(TorchJudgeConfig(model=tiny_llama_dir, device="cpu", max_model_len=8192))


def test_batched_greedy_equals_one_at_a_time(judge: TorchJudge) -> None:
    requests = gen_requests(GenerationParams(max_tokens=12))
    before = judge.forward_batches
    batched = judge.generate(requests)
    # All five fit one batch: one pass over the prompts, then a decode step per token of the longest answer
    # after its first.
    assert judge.forward_batches == before + max(r.completion_tokens for r in batched)
    single = [judge.generate([r])[0] for r in requests]
    assert [r.text for r in batched] == [r.text for r in single]
    assert batched == single  # token counts and finish reasons too
    lengths = [r.prompt_tokens for r in batched]
    assert lengths[1] > 10 * lengths[0]  # very different lengths, so the short rows are heavily left-padded
    assert len({r.text for r in batched}) == len(batched)  # distinct answers: order would show if mixed up


def test_finish_reason_length_and_token_counts(judge: TorchJudge) -> None:
    [result] = judge.generate([GenerateRequest(chat("Hi"), GenerationParams(max_tokens=5))])
    assert result.finish_reason == "length"
    assert result.completion_tokens == 5
    rendered = judge.chat.render(chat("Hi"))
    assert result.prompt_tokens == len(judge.tokenizer(rendered, add_special_tokens=False)["input_ids"])


def test_stop_strings_end_and_are_cut(judge: TorchJudge) -> None:
    free = judge.generate(gen_requests(GenerationParams(max_tokens=16)))
    # Stop on a piece of the first answer's free text: a string the model is known to produce.
    text = free[0].text
    stop = text[len(text) // 2 : len(text) // 2 + 3]
    assert stop.strip(), text
    stopped = judge.generate(gen_requests(GenerationParams(max_tokens=16, stop=(stop, "\x00never"))))
    first = stopped[0]
    assert first.finish_reason == "stop"
    assert first.text == text[: text.index(stop)]
    assert first.completion_tokens < free[0].completion_tokens
    for f, s in zip(free[1:], stopped[1:], strict=True):  # rows without the stop string are unaffected
        if stop not in f.text:
            assert s == f


def test_prompt_over_max_model_len_fails_alone(tiny_llama_dir: Path) -> None:
    limited = TorchJudge(TorchJudgeConfig(model=tiny_llama_dir, device="cpu", max_model_len=120))
    results = limited.generate(gen_requests(GenerationParams(max_tokens=8)))
    assert results[1].finish_reason == "error" and results[1].text == ""
    assert "max_model_len=120" in (results[1].error or "")
    assert all(r.error is None and r.completion_tokens == 8 for i, r in enumerate(results) if i != 1)

    labels = ("Yes", "No")
    classified = limited.classify([ClassifyRequest(chat(p), labels) for p in PROMPTS])
    assert classified[1].error is not None and classified[1].probs == ()
    assert all(len(r.probs) == 2 and r.error is None for i, r in enumerate(classified) if i != 1)


def test_generation_stops_at_max_model_len(tiny_llama_dir: Path) -> None:
    limited = TorchJudge(TorchJudgeConfig(model=tiny_llama_dir, device="cpu", max_model_len=40))
    [short, other] = limited.generate(
        gen_requests(GenerationParams(max_tokens=30), ["x", "Is the sky blue?"])
    )
    assert short.finish_reason == "length"
    assert short.prompt_tokens + short.completion_tokens == 40
    assert other.prompt_tokens + other.completion_tokens == 40


def test_token_budget_splits_batches_without_changing_outputs(
    judge: TorchJudge, tiny_llama_dir: Path
) -> None:
    small = TorchJudge(TorchJudgeConfig(model=tiny_llama_dir, device="cpu", token_budget=200))
    params = GenerationParams(max_tokens=6)
    requests = gen_requests(params)
    expected = judge.generate(requests)
    got = small.generate(requests)
    assert got == expected
    # prompt + max_tokens per row: the long prompt alone exceeds 200 tokens; the four short ones (~30 + 6
    # tokens each) fit 5 rows of 36 tokens, so they share one batch. Each batch takes a pass over its
    # prompts, then a decode step per token of its longest answer after the first.
    short = max(r.completion_tokens for i, r in enumerate(got) if i != 1)
    assert small.forward_batches == got[1].completion_tokens + short

    before = small.forward_batches
    classify = [ClassifyRequest(chat(p), ("Yes", "No")) for p in PROMPTS]
    assert_same_classes(small.classify(classify), judge.classify(classify))
    assert small.forward_batches - before == 2


def test_max_batch_size_splits_batches(tiny_llama_dir: Path, judge: TorchJudge) -> None:
    narrow = TorchJudge(TorchJudgeConfig(model=tiny_llama_dir, device="cpu", max_batch_size=2))
    requests = [ClassifyRequest(chat(p), ("0", "1", "2")) for p in PROMPTS]
    assert_same_classes(narrow.classify(requests), judge.classify(requests))
    assert narrow.forward_batches == 3


def manual_label_probs(judge: TorchJudge, request: ClassifyRequest) -> list[float]:
    """The label probabilities computed by hand from a single unpadded forward pass."""
    text = judge.chat.render(request.messages) + request.answer_prefix
    ids = judge.tokenizer(text, add_special_tokens=False, return_tensors="pt")["input_ids"]
    with torch.no_grad():
        logits = judge.model(input_ids=ids).logits[0, -1].double()
    scores = []
    for label in request.labels:
        own = judge.tokenizer(label, add_special_tokens=False)["input_ids"][0]
        spaced = judge.tokenizer(" " + label, add_special_tokens=False)["input_ids"][0]
        token_ids = {own} | ({spaced} if judge.tokenizer.decode([spaced]).strip() else set())
        scores.append(torch.logsumexp(logits[sorted(token_ids)], dim=0))
    return torch.softmax(torch.stack(scores), dim=0).tolist()


def test_classify_batched_equals_single_and_manual(judge: TorchJudge) -> None:
    requests = [
        ClassifyRequest(chat(PROMPTS[0]), ("Yes", "No")),
        ClassifyRequest(
            chat(PROMPTS[1], system="You are a strict grader."), ("0", "1", "2"), answer_prefix="Score: "
        ),
        ClassifyRequest(chat(PROMPTS[2]), ("No", "Yes")),
        ClassifyRequest(chat(PROMPTS[3]), ("1", "2", "3", "4", "5"), answer_prefix='{"rating": '),
    ]
    batched = judge.classify(requests)
    single = [judge.classify([r])[0] for r in requests]
    for b, s, r in zip(batched, single, requests, strict=True):
        assert b.labels == r.labels and b.error is None
        assert sum(b.probs) == pytest.approx(1.0, abs=1e-6)
        assert b.probs == pytest.approx(s.probs, abs=1e-5)
        assert b.probs == pytest.approx(manual_label_probs(judge, r), abs=1e-5)
        assert b.prompt_tokens == s.prompt_tokens > 0
    # "No"/"Yes" in swapped order gives the swapped probabilities for the same kind of question.
    [swapped] = judge.classify([ClassifyRequest(chat(PROMPTS[2]), ("Yes", "No"))])
    assert swapped.probs == pytest.approx(batched[2].probs[::-1], abs=1e-6)


def test_classify_rejects_labels_sharing_a_first_token(judge: TorchJudge) -> None:
    # SmolLM2's tokenizer splits numbers into digits, so "1" and "10" both start with "1".
    with pytest.raises(ConfigError, match=r"'1' and '10'"):
        judge.classify([ClassifyRequest(chat("Rate it"), ("1", "10"))])


def test_label_tokens_include_the_space_variant(judge: TorchJudge) -> None:
    tok = judge.tokenizer
    ids = judge.label_token_ids("assistant\n", "Yes")
    assert ids == (
        tok("Yes", add_special_tokens=False)["input_ids"][0],
        tok(" Yes", add_special_tokens=False)["input_ids"][0],
    )
    # " 1" is two tokens (a space, then "1"); a bare space is no spelling of the label.
    assert judge.label_token_ids("Score:", "1") == (tok("1", add_special_tokens=False)["input_ids"][0],)


# ------------------------------------------------------------------ classify: shared prompt prefixes

# ~200 tokens that every row below shares, then a statement of 1 to ~20 tokens: the shape of our prompts.
SHARED_INSTRUCTION = (
    "Decide whether the statement follows from the context. Answer Yes or No.\n\n"
    + "Context: the river floods every spring, so the town builds its houses on stilts. " * 8
)
STATEMENTS = [
    "x",
    "The river floods.",
    "Houses stand on stilts because the river floods every spring, the town says.",
    "Is the town dry?",
    "x",  # the same prompt as the first row
]


def shared_requests() -> list[ClassifyRequest]:
    """Rows sharing a long prefix: different suffix lengths, a duplicate row, one row whose whole prompt is
    another's prompt less its last token (its suffix is a single token), and mixed label sets."""
    statement = [chat(f"{SHARED_INSTRUCTION}\n\nStatement: {s}") for s in STATEMENTS]
    return [
        *(ClassifyRequest(m, ("Yes", "No")) for m in statement),
        ClassifyRequest(statement[0], ("Yes", "No"), answer_prefix="A"),
        ClassifyRequest(statement[1], ("0", "1", "2"), answer_prefix="Score: "),
    ]


@pytest.fixture(scope="module")
def unshared(tiny_llama_dir: Path) -> TorchJudge:
    """The reference: every batch runs whole prompts in one left-padded forward pass."""
    return TorchJudge(TorchJudgeConfig(model=tiny_llama_dir, device="cpu", min_shared_prefix=0))


def test_shared_requests_cover_the_edge_cases(judge: TorchJudge) -> None:
    requests = shared_requests()
    prompts = judge_prompts(judge, requests)
    assert prompts[5] == [*prompts[0], prompts[5][-1]]  # "A" adds exactly one token after row 0
    assert prompts[4] == prompts[0]
    assert len({len(p) for p in prompts}) >= 4


@pytest.mark.parametrize(
    ("token_budget", "max_batch_size"),
    [(16384, 64), (16384, 1), (16384, 2), (260, 64), (260, 2)],
)
def test_shared_prefix_equals_unshared(
    tiny_llama_dir: Path, unshared: TorchJudge, token_budget: int, max_batch_size: int
) -> None:
    config = TorchJudgeConfig(
        model=tiny_llama_dir, device="cpu", token_budget=token_budget, max_batch_size=max_batch_size
    )
    sharing = TorchJudge(config)
    requests = shared_requests()
    got = sharing.classify(requests)
    # Splitting the prompt into a cached prefix and a suffix pass sums the same float32 terms in another
    # order (and other batch shapes pick other matmul blockings), which moves probabilities by ~1e-6.
    assert_same_classes(got, unshared.classify(requests))
    assert_same_classes(got, [unshared.classify([r])[0] for r in requests])
    if max_batch_size == 1:
        # The prefix tree spans the call, not a batch: the shared prefix runs once, then each one-row batch
        # runs its own tokens after it.
        assert sharing.forward_batches == 1 + len(requests)
        common = common_prefix_len(judge_prompts(sharing, requests))
        assert sharing.prefix_tokens_reused == (len(requests) - 1) * common
    else:
        assert sharing.prefix_tokens_reused > 0
    if token_budget == 16384 and max_batch_size == 64:
        # One batch: the prefix, up to where the statements start, once; then the suffixes.
        assert sharing.forward_batches == 2
        common = common_prefix_len(judge_prompts(sharing, requests))
        assert sharing.prefix_tokens_reused == (len(requests) - 1) * common


def judge_prompts(judge: TorchJudge, requests: list[ClassifyRequest]) -> list[list[int]]:
    return judge.encode_prompts([judge.chat.render(r.messages) + r.answer_prefix for r in requests])


def common_prefix_len(prompts: list[list[int]]) -> int:
    first = prompts[0]
    return min(
        next((k for k, (a, b) in enumerate(zip(first, p, strict=False)) if a != b), min(len(first), len(p)))
        for p in prompts
    )


def test_token_budget_counts_a_shared_prefix_once(tiny_llama_dir: Path, judge: TorchJudge) -> None:
    requests = shared_requests()[:4]
    prompts = judge_prompts(judge, requests)
    common = common_prefix_len(prompts)
    longest = max(len(p) for p in prompts)
    budget = common + len(requests) * (longest - common)  # exactly the cost of one shared batch
    assert budget < 2 * longest  # whole prompts: no two rows would fit
    sharing = TorchJudge(TorchJudgeConfig(model=tiny_llama_dir, device="cpu", token_budget=budget))
    plain = TorchJudge(
        TorchJudgeConfig(model=tiny_llama_dir, device="cpu", token_budget=budget, min_shared_prefix=0)
    )
    assert_same_classes(sharing.classify(requests), plain.classify(requests))
    assert sharing.forward_batches == 2  # one batch: its prefix, then its suffixes
    assert plain.forward_batches == len(requests)


def test_rows_without_a_common_prefix_run_unshared(judge: TorchJudge, unshared: TorchJudge) -> None:
    # PROMPTS share only the chat template's preamble, shorter than min_shared_prefix.
    requests = [ClassifyRequest(chat(p), ("Yes", "No")) for p in PROMPTS]
    before, reused = judge.forward_batches, judge.prefix_tokens_reused
    got = judge.classify(requests)
    assert judge.forward_batches == before + 1 and judge.prefix_tokens_reused == reused
    assert_same_classes(got, unshared.classify(requests))


def test_min_shared_prefix_above_the_common_prefix_runs_unshared(
    tiny_llama_dir: Path, unshared: TorchJudge
) -> None:
    strict = TorchJudge(TorchJudgeConfig(model=tiny_llama_dir, device="cpu", min_shared_prefix=1000))
    requests = shared_requests()
    assert_same_classes(strict.classify(requests), unshared.classify(requests))
    assert strict.forward_batches == 1 and strict.prefix_tokens_reused == 0


def test_shared_and_unrelated_rows_keep_input_order(judge: TorchJudge, unshared: TorchJudge) -> None:
    shared = shared_requests()
    other = [ClassifyRequest(chat(p), ("Yes", "No")) for p in PROMPTS]
    mixed = [r for pair in zip(shared, other, strict=False) for r in pair] + shared[len(other) :]
    reused = judge.prefix_tokens_reused
    got = judge.classify(mixed)
    assert judge.prefix_tokens_reused > reused
    assert_same_classes(got, unshared.classify(mixed))
    assert_same_classes(got, [judge.classify([r])[0] for r in mixed])
    assert len({r.probs for r in got}) >= len(got) - 1  # only the duplicate row may repeat: order shows


def test_answer_prefix_applies_after_a_shared_prefix(judge: TorchJudge) -> None:
    plain = shared_requests()[:4]
    prefixed = [ClassifyRequest(r.messages, r.labels, answer_prefix='{"verdict": "') for r in plain]
    reused = judge.prefix_tokens_reused
    with_prefix = judge.classify(prefixed)
    assert judge.prefix_tokens_reused > reused
    for got, request in zip(with_prefix, prefixed, strict=True):
        assert got.probs == pytest.approx(manual_label_probs(judge, request), abs=1e-5)
    without = judge.classify(plain)
    assert all(a.probs != pytest.approx(b.probs, abs=1e-3) for a, b in zip(with_prefix, without, strict=True))
    assert all(a.prompt_tokens > b.prompt_tokens for a, b in zip(with_prefix, without, strict=True))


def check_verdict(text: str) -> None:
    data = json.loads(text)
    assert set(data) == {"verdict"} and data["verdict"] in (0, 1), text


def check_statements(text: str) -> None:
    data = json.loads(text)
    assert set(data) == {"statements"}, text
    items = data["statements"]
    assert isinstance(items, list) and len(items) <= 3, text
    assert all(isinstance(s, str) and len(s) <= 12 for s in items), text


@pytest.mark.parametrize(
    ("schema", "check"), [(VERDICT_SCHEMA, check_verdict), (LIST_SCHEMA, check_statements)]
)
@pytest.mark.parametrize("temperature", [0.0, 1.0])
def test_schema_constrained_output_always_validates(
    judge: TorchJudge, schema, check, temperature: float
) -> None:
    schema_text = GenerationParams.schema_text(schema)
    requests = [
        GenerateRequest(
            chat(p),
            GenerationParams(max_tokens=200, temperature=temperature, seed=s, json_schema=schema_text),
        )
        for p in PROMPTS
        for s in range(2 if temperature else 1)
    ]
    for result in judge.generate(requests):
        assert result.finish_reason == "stop", result
        check(result.text)
        assert 0 < result.completion_tokens < 200


def test_schema_output_batched_equals_single(judge: TorchJudge) -> None:
    params = GenerationParams(max_tokens=200, json_schema=GenerationParams.schema_text(LIST_SCHEMA))
    requests = gen_requests(params)
    assert judge.generate(requests) == [judge.generate([r])[0] for r in requests]


def test_invalid_schema_is_a_config_error(judge: TorchJudge) -> None:
    params = GenerationParams(max_tokens=8, json_schema='{"type": "no-such-type"}')
    with pytest.raises(ConfigError, match="json_schema"):
        judge.generate([GenerateRequest(chat("Hi"), params)])


def test_sampling_is_reproducible_per_request(judge: TorchJudge) -> None:
    params = GenerationParams(max_tokens=12, temperature=1.0, top_p=0.9, seed=7)
    requests = gen_requests(params)
    first = judge.generate(requests)
    assert judge.generate(requests) == first
    # Each request samples from its own generator, so it does not matter what else is in the batch.
    assert [judge.generate([r])[0] for r in requests] == first
    greedy = judge.generate(gen_requests(GenerationParams(max_tokens=12)))
    other_seed = judge.generate(
        gen_requests(GenerationParams(max_tokens=12, temperature=1.0, top_p=0.9, seed=8))
    )
    assert [r.text for r in first] != [r.text for r in greedy]
    assert [r.text for r in first] != [r.text for r in other_seed]


def test_groups_by_params_and_returns_input_order(judge: TorchJudge) -> None:
    a, b = GenerationParams(max_tokens=4), GenerationParams(max_tokens=7)
    mixed = [GenerateRequest(chat(p), a if i % 2 else b) for i, p in enumerate(PROMPTS)]
    results = judge.generate(mixed)
    assert [r.completion_tokens for r in results] == [7, 4, 7, 4, 7]
    assert results == [judge.generate([r])[0] for r in mixed]


def test_chat_fallback_without_template(smollm2_tokenizer_dir: Path) -> None:
    import transformers

    tokenizer = transformers.AutoTokenizer.from_pretrained(smollm2_tokenizer_dir)
    templated = ChatRenderer(tokenizer)
    assert templated.uses_template and not templated.add_special_tokens
    assert templated.render(chat("Hi", system="S")).endswith("<|im_start|>assistant\n")
    tokenizer.chat_template = None
    plain = ChatRenderer(tokenizer)
    assert not plain.uses_template and plain.add_special_tokens
    assert (
        plain.render(chat("Hi", system="S"))
        == render_plain(chat("Hi", system="S"))
        == "System: S\nUser: Hi\nAssistant:"
    )


def test_module_import_does_not_import_torch() -> None:
    code = "import sys, ascend_eval.models.judge.torch; print('torch' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False", out.stderr
