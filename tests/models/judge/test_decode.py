"""TorchJudge's own decode loop against transformers' `generate`, and what a finished row costs.

The loop prefills a batch once, then decodes one token per live row per step and drops a row from the KV
cache as soon as it ends. The reference is `model.generate` on one unpadded prompt at a time (with
xgrammar's own Hugging Face logits processor for a schema), with `GenerateResult`'s rules applied by hand:
so a batch must give every request the text, finish reason and token counts it would get alone.
"""

from __future__ import annotations

from pathlib import Path

import pytest

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

from ascend_eval.models.base import (  # noqa: E402
    GenerateRequest,
    GenerateResult,
    GenerationParams,
    Message,
)
from ascend_eval.models.judge.torch import TorchJudge, TorchJudgeConfig  # noqa: E402

RIVER = "The river floods every spring and the town "
LONG = "Summarise the following context in one sentence. " + RIVER * 40
# Prompt lengths from ~25 to ~450 tokens, and a near-duplicate of the longest one.
PROMPTS = ["x", LONG, "Is the sky blue?", "Summarise: " + RIVER * 12, "Hi", LONG + " Be brief."]
LIST_SCHEMA = GenerationParams.schema_text(
    {
        "type": "object",
        "properties": {
            "statements": {"type": "array", "items": {"type": "string", "maxLength": 12}, "maxItems": 3}
        },
        "required": ["statements"],
        "additionalProperties": False,
    }
)
# Two prompt families of ~200 tokens each (an instruction and a context), then a statement: the shape of
# our prompts, in zh and en.
FAMILIES = [
    "Decide whether the statement follows from the context. Answer Yes or No.\n\n"
    + "Context: the river floods every spring, so the town builds its houses on stilts. " * 8,
    "List the claims of the statement that the context does not support.\n\n"
    + "Context: in spring the river rises, and the town's houses stand on tall stilts. " * 8,
]
STATEMENTS = [
    "x",
    "The river floods.",
    "Houses stand on stilts because the river floods, the town says.",
    "?",
]


def chat(text: str) -> tuple[Message, ...]:
    return (Message("user", text),)


@pytest.fixture(scope="module")
def judge(tiny_llama_dir: Path) -> TorchJudge:
    return TorchJudge(TorchJudgeConfig(model=tiny_llama_dir, device="cpu"))


def prompt_ids(judge: TorchJudge, request: GenerateRequest) -> list[int]:
    return judge.encode_prompts([judge.chat.render(request.messages)])[0]


def reference(judge: TorchJudge, request: GenerateRequest) -> GenerateResult:
    """`model.generate` (greedy, batch of one, no padding), then the documented result rules by hand."""
    import xgrammar.contrib.hf

    params, prompt = request.params, prompt_ids(judge, request)
    processors = []
    if params.json_schema is not None:
        processors.append(xgrammar.contrib.hf.LogitsProcessor(judge.compile_schema(params.json_schema)))
    config = transformers.GenerationConfig(
        max_new_tokens=judge.new_token_cap(len(prompt), params.max_tokens),
        do_sample=False,
        num_beams=1,
        eos_token_id=list(judge.eos_ids),
        pad_token_id=judge.pad_id,
    )
    ids = torch.tensor([prompt])
    with torch.no_grad():
        out = judge.model.generate(
            input_ids=ids,
            attention_mask=torch.ones_like(ids),
            generation_config=config,
            logits_processor=transformers.LogitsProcessorList(processors),
        )
    tokens = out[0, len(prompt) :].tolist()  # a lone row stops at its first EOS, which it keeps
    reason = "stop" if tokens[-1] in judge.eos_ids else "length"

    def decode(n: int) -> str:
        return judge.tokenizer.decode(tokens[:n], skip_special_tokens=True)

    stops = [s for s in params.stop if s]
    # Decoding stops at the first token after which the text shows a stop string.
    end = next((n for n in range(1, len(tokens) + 1) if any(s in decode(n) for s in stops)), len(tokens))
    text = decode(end)
    hits = [text.index(s) for s in stops if s in text]
    if hits:
        text, reason = text[: min(hits)], "stop"
    return GenerateResult(text=text, finish_reason=reason, prompt_tokens=len(prompt), completion_tokens=end)


def free_texts(judge: TorchJudge, prompts: list[str]) -> list[str]:
    return [
        r.text
        for r in judge.generate([GenerateRequest(chat(p), GenerationParams(max_tokens=24)) for p in prompts])
    ]


@pytest.mark.parametrize("schema", [None, LIST_SCHEMA], ids=["free", "schema"])
@pytest.mark.parametrize("with_stop", [False, True], ids=["", "stop"])
def test_greedy_equals_generate_and_one_at_a_time(
    judge: TorchJudge, schema: str | None, with_stop: bool
) -> None:
    stop: tuple[str, ...] = ()
    if with_stop:
        # Pieces of two rows' own free answers (strings the model is known to write), so those rows stop
        # early while the others run on.
        free = free_texts(judge, PROMPTS)
        stop = (free[0][4:7], free[3][8:11], "\x00never")
        assert all(s.strip() for s in stop[:2]), free
    requests = [
        GenerateRequest(chat(p), GenerationParams(max_tokens=n, stop=stop, json_schema=schema))
        for p in PROMPTS
        for n in (5, 40)  # two batches: rows of one batch share their params
    ]
    batched = judge.generate(requests)
    expected = [reference(judge, r) for r in requests]
    for got, want, r in zip(batched, expected, requests, strict=True):
        assert got == want, (r.params.max_tokens, r.messages[0].content[:30])
    assert batched == [judge.generate([r])[0] for r in requests]
    if with_stop:
        assert sum(r.finish_reason == "stop" for r in batched) >= 2
    lengths = [r.prompt_tokens for r in batched]
    assert max(lengths) > 10 * min(lengths)  # the short rows are heavily left-padded


def test_sampled_schema_output_is_independent_of_its_batch(judge: TorchJudge) -> None:
    params = GenerationParams(max_tokens=80, temperature=1.0, top_p=0.95, seed=3, json_schema=LIST_SCHEMA)
    requests = [GenerateRequest(chat(p), params) for p in PROMPTS]
    batched = judge.generate(requests)
    assert batched == [judge.generate([r])[0] for r in requests]
    assert len({r.completion_tokens for r in batched}) > 1  # rows left the batch at different steps


def test_a_finished_row_stops_costing(tiny_llama_dir: Path, judge: TorchJudge) -> None:
    """One long answer and several short ones in one batch: the steps computed follow the real lengths."""
    # max_model_len leaves the long prompts (each ~9 tokens longer than the next) little room and "x" all
    # of max_tokens, so one batch holds answers of very different lengths whatever the random model writes.
    prompts = [RIVER * 40, RIVER * 39, RIVER * 38, "x"]
    longest = len(prompt_ids(judge, GenerateRequest(chat(prompts[0]), GenerationParams(max_tokens=1))))
    # No prefix sharing, so the prompts take exactly one pass.
    config = TorchJudgeConfig(
        model=tiny_llama_dir, device="cpu", max_model_len=longest + 3, min_shared_prefix=0
    )
    limited = TorchJudge(config)
    requests = [GenerateRequest(chat(p), GenerationParams(max_tokens=60)) for p in prompts]
    results = limited.generate(requests)
    lengths = [r.completion_tokens for r in results]
    assert lengths[0] == 3 and lengths[-1] == 60 and all(r.finish_reason == "length" for r in results), (
        results
    )
    assert lengths[1] < lengths[2] < 60
    # A row's first token comes from the prompt pass; each later one costs one row-step, and a finished row
    # none: the sum of the real lengths, not rows x longest (4 x 59 = 236).
    assert limited.decode_row_steps == sum(lengths) - len(lengths)
    assert limited.forward_batches == 1 + 59  # one batch: the prompt pass, then the longest answer's steps
    assert results == [limited.generate([r])[0] for r in requests]


@pytest.mark.parametrize("families", [1, 2])
@pytest.mark.parametrize("schema", [None, LIST_SCHEMA], ids=["free", "schema"])
def test_shared_prompt_prefixes_run_once(
    tiny_llama_dir: Path, judge: TorchJudge, schema: str | None, families: int
) -> None:
    unshared = TorchJudge(TorchJudgeConfig(model=tiny_llama_dir, device="cpu", min_shared_prefix=0))
    params = GenerationParams(max_tokens=30, json_schema=schema)
    requests = [
        GenerateRequest(chat(f"{family}\n\nStatement: {s}"), params)
        for family in FAMILIES[:families]
        for s in STATEMENTS
    ]
    judge.clear_prefix_cache()  # an earlier case's families would be served from the kept KV
    before, reused = judge.forward_batches, judge.prefix_tokens_reused
    got = judge.generate(requests)
    # One batch: a pass over the distinct prefixes, one over the rest of every prompt, then a decode step
    # per token of the longest answer after its first.
    assert judge.forward_batches - before == 2 + max(r.completion_tokens for r in got) - 1
    # Each family runs its instruction and context once instead of once per statement.
    assert judge.prefix_tokens_reused - reused > families * (len(STATEMENTS) - 1) * 150
    assert got == unshared.generate(requests) == [unshared.generate([r])[0] for r in requests]
    assert unshared.prefix_tokens_reused == 0


def test_prefix_cuts_only_where_two_passes_pay(judge: TorchJudge) -> None:
    a, b = [1] * 70, [5] * 70
    two_families = [[*a, 2, 3], [*a, 4], [*b, 6, 7], [*b, 8]]
    # Each family shares its 70 tokens (the shortest row keeps a token to read the next-token logits at).
    assert judge.prefix_cuts(two_families) == [70, 70, 70, 70]
    # A third family of one row cuts nothing and runs whole in the second pass, which stays narrower than
    # the longest prompt.
    assert judge.prefix_cuts([*two_families, [9] * 2]) == [70, 70, 70, 70, 0]
    # ... unless its whole prompt after a long prefix would make the KV cache wider than one pass.
    assert judge.prefix_cuts([*two_families, [9] * 3]) is None
    assert judge.prefix_cuts([[*a, 2], [7, *a]]) is None  # nothing shared
    assert judge.prefix_cuts([[*a, 2]]) is None  # one row


def test_loop_guard_only_cuts_rows_that_repeat_themselves(smollm2_gguf_file: Path) -> None:
    """The shipped SmolLM2 falls into loops (greedy) on prompts like these: with the guard a looping row
    stops early with "repetition", its text the start of what it writes unguarded, and a row that does
    not loop is untouched."""
    prompts = [
        "Write the word cat one hundred times, separated by spaces.",
        "Count from 1 to 5.",
        "List the colours of the rainbow, then repeat the list ten times.",
    ]
    requests = [GenerateRequest(chat(p), GenerationParams(max_tokens=200)) for p in prompts]
    guarded = TorchJudge(TorchJudgeConfig(model=smollm2_gguf_file, device="cpu", loop_guard=24))
    cut = guarded.generate(requests)
    whole = TorchJudge(TorchJudgeConfig(model=smollm2_gguf_file, device="cpu", loop_guard=0)).generate(
        requests
    )
    assert [r.finish_reason for r in whole] == ["length", "stop", "length"]
    assert [r.finish_reason for r in cut] == ["repetition", "stop", "repetition"]
    assert cut[1] == whole[1]
    for c, w in zip(cut[::2], whole[::2], strict=True):
        assert c.completion_tokens < w.completion_tokens and w.text.startswith(c.text)
        assert c.text.count(c.text[-8:]) >= 3, c.text  # it ends where it keeps saying the same


def test_speculative_drafts_leave_every_greedy_answer_as_it_was(smollm2_gguf_file: Path) -> None:
    """Prompt-lookup drafts on the shipped SmolLM2, on prompts whose answers copy their prompt (where
    drafts are taken): the same results as plain greedy decoding, with a schema, a stop string inside a
    copied span, a loop and a free answer, in fewer forward passes."""
    from ascend_eval.prompts.statements import STATEMENTS as STATEMENTS_PROMPT

    text = (
        "The Eiffel Tower was completed in 1889 for the World's Fair in Paris. It is 330 metres tall and "
        "was the tallest man-made structure until 1930."
    )
    copy, split = f"Repeat this text exactly: {text}", f"Split into short statements: {text}"
    schema = STATEMENTS_PROMPT.json_schema()
    requests = [
        GenerateRequest(chat(copy), GenerationParams(max_tokens=150)),
        GenerateRequest(chat(split), GenerationParams(max_tokens=150, json_schema=schema)),
        GenerateRequest(chat(copy), GenerationParams(max_tokens=150, json_schema=schema)),
        GenerateRequest(chat(copy), GenerationParams(max_tokens=150, stop=("1889",))),
        GenerateRequest(
            chat("Write the word cat one hundred times, separated by spaces."),
            GenerationParams(max_tokens=150),
        ),
        GenerateRequest(chat("Count from 1 to 5."), GenerationParams(max_tokens=150)),
    ]
    results, forwards = {}, {}
    for budget in (0, 64):
        judge = TorchJudge(TorchJudgeConfig(model=smollm2_gguf_file, device="cpu", speculative_tokens=budget))
        results[budget] = judge.generate(requests)
        forwards[budget] = judge.runner.forward_batches
    assert results[64] == results[0]
    assert [r.finish_reason for r in results[0]][3:5] == ["stop", "repetition"]
    assert forwards[64] < forwards[0] * 0.8, forwards


def test_compacting_a_sparse_batch_keeps_what_attention_reads(judge: TorchJudge) -> None:
    """Dropping masked columns (draft tokens not kept, join padding) changes no next-token logits."""
    from ascend_eval.models.judge.torch.runner import Batch

    short = [PROMPTS[0], PROMPTS[2], PROMPTS[4]]
    rows = [prompt_ids(judge, GenerateRequest(chat(p), GenerationParams())) for p in short]
    runner = judge.runner
    with torch.inference_mode():
        logits, batch = runner.prefill(rows, [None] * len(rows), "test", keep_cache=True)
        assert isinstance(batch, Batch)
        last = logits.argmax(dim=-1)
        # A verify step whose drafts are all thrown away: three masked columns per row, many times over.
        for _ in range(60):
            drafts = torch.stack([last, last, last, last], dim=1)
            valid = torch.ones_like(drafts)
            runner.verify_step("test", drafts, valid, batch)
            runner.keep_verified(batch, torch.ones(len(rows), dtype=torch.long), drafts.shape[1])
        width = batch.mask.shape[1]
        before = runner.decode_step("test", last, _copy(batch))
        batch.compact_if_sparse()
        assert batch.mask.shape[1] < width
        after = runner.decode_step("test", last, batch)
    torch.testing.assert_close(after, before, rtol=1e-4, atol=1e-4)


def _copy(batch):  # type: ignore[no-untyped-def]
    import copy

    return copy.deepcopy(batch)


def test_sampled_rows_with_other_seeds_and_caps_decode_together_as_alone(smollm2_gguf_file: Path) -> None:
    """Requests that differ only in seed and max_tokens share one decode loop, with drafts: each gets
    what it gets alone without drafts (its own seeded numbers, one per token, its own cap)."""
    text = "The Eiffel Tower was completed in 1889 for the World's Fair in Paris."
    requests = [
        GenerateRequest(
            chat(f"Write a question that this answers: {text}"),
            GenerationParams(max_tokens=n, temperature=0.7, seed=seed),
        )
        for seed, n in ((0, 60), (1, 60), (2, 25), (3, 60))
    ]
    drafting = TorchJudge(TorchJudgeConfig(model=smollm2_gguf_file, device="cpu"))
    together = drafting.generate(requests)
    plain = TorchJudge(TorchJudgeConfig(model=smollm2_gguf_file, device="cpu", speculative_tokens=0))
    alone = [plain.generate([r])[0] for r in requests]
    assert together == alone
    assert len({r.text for r in together}) > 1  # the seeds do differ
    assert together[2].completion_tokens <= 25
