"""benchmarks/prefix_tokens.py's model of a prefix cache and its two bounds: a token-granular cache computes
exactly what follows the longest prefix an earlier prompt shared, a block cache never less, and the floor is
the sample's own texts once."""

from __future__ import annotations

from ascend_eval.models.judge.chat import ChatRenderer
from ascend_eval.prompts import STATEMENT_SUPPORT, SupportInput
from ascend_eval.prompts.layout import SampleBlock
from benchmarks.prefix_tokens import (
    IDEAL_BLOCK,
    PrefixCache,
    floor_tokens,
    part_starts,
    rendered_text,
    where_computed,
)


def test_a_token_granular_cache_computes_what_follows_the_longest_shared_prefix():
    ideal, blocks = PrefixCache(IDEAL_BLOCK), PrefixCache(4)
    first = list(range(10))
    assert ideal.compute(first) == blocks.compute(first) == 10
    second = [*first[:7], 99, 98]  # shares 7 tokens with the first
    assert ideal.compute(second) == 2
    assert blocks.compute(second) == 9 - 4  # only the first full block of 4 is reused
    assert ideal.compute(first) == 1  # a repeat computes its last token, as vLLM does


class CharTokenizer:
    """One token per character: enough to count texts."""

    def __call__(self, text: str, add_special_tokens: bool = False) -> dict[str, list[int]]:
        return {"input_ids": [ord(c) for c in text]}


def test_the_floor_is_each_samples_texts_once():
    data = {
        "question": ["ab", "c"],
        "contexts": [["defg", "hi"], []],
        "answer": ["jk", "l"],
        "ground_truth": ["m", ""],
    }
    assert floor_tokens(data, CharTokenizer()) == ((2 + 4 + 2 + 2 + 1) + (1 + 1)) / 2


class OffsetCharTokenizer(CharTokenizer):
    chat_template = None

    def __call__(self, text: str, add_special_tokens: bool = False, return_offsets_mapping: bool = False):
        out: dict = {"input_ids": [ord(c) for c in text]}
        if return_offsets_mapping:
            out["offset_mapping"] = [(i, i + 1) for i in range(len(text))]
        return out


def test_computed_tokens_are_counted_by_the_part_of_the_prompt_they_lie_in():
    block = SampleBlock(question="Q?", contexts=("a long enough context " * 40,), answer="A.", reference="R.")
    request = STATEMENT_SUPPORT.request(SupportInput(context=block.contexts[0], statement="s."), "en", block)
    renderer = ChatRenderer(OffsetCharTokenizer())
    text = rendered_text(renderer, request)
    whole = where_computed(renderer, request, len(text))
    starts = part_starts(text)
    assert whole == {
        "preamble": starts[0],
        "sample block": starts[1] - starts[0],
        "task": starts[2] - starts[1],
        "input": len(text) - starts[2],
    }
    assert whole["sample block"] > len(block.contexts[0])  # the context is in the block, not the input
    tail = where_computed(renderer, request, 5)
    assert tail == {"preamble": 0, "sample block": 0, "task": 0, "input": 5}
