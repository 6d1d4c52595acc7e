"""The filters: each reason a candidate is dropped, counted; a judge answer that cannot be read drops its
candidate only; the copy check and the near-duplicate filter on their own; the settings' checks."""

from __future__ import annotations

import numpy as np
import pytest

from ascend_eval.models.base import GenerateResult
from ascend_eval.models.errors import ConfigError
from ascend_eval.models.judge.replay import ReplayJudge
from ascend_eval.testset import DROP_REASONS, DuplicateFilter, allocate, copies_context, generate, parse_kinds
from ascend_eval.testset.config import TestsetConfig
from tests.conftest import NgramEmbedder
from tests.testset.conftest import scripted_judge, verdict_rule, write_rule

GOOD = [
    "Kelwick harbour was dredged in 1931 so that larger trawlers could land there.",
    "The annual regatta on Lake Ormsby draws rowing crews from eleven counties.",
    "Brannock Mill ground barley with a waterwheel until electric motors arrived.",
    "Saint Ives chapel keeps a bell cast by a founder from Bristol in 1702.",
]
MARKED = [
    "UNREADABLE: the tide tables of Fenwick bay are printed every spring.",
    "COPYME Gorse blooms yellow on the moor above Tallow in late April.",
    "ORPHAN notes describe a cottage with a thatched roof near the quarry.",
    "NOANSWER the signal box at Dunmere station closed in nineteen sixty.",
    "BADVERDICT the ferry timetable changes twice a year at Porthleven.",
    "TWIN records of the north light are kept in the town archive of Hale.",
    "TWIN records of the south light were copied by hand by a clerk in 1890.",
    "PASTE notes: the mill at Crane was built of stone. It burned down in 1911.",
]


def run(texts, size=20, judge=None, **settings):
    judge = judge or scripted_judge()
    settings = {"kinds": {"single_hop": 1.0}, "chunk_size": 120, "cache_dir": False, **settings}
    return generate(texts, size, judge=judge, embedder=NgramEmbedder(dim=512), **settings), judge


def test_every_reason_is_counted_and_the_rest_pass():
    result, _ = run(GOOD + MARKED)
    assert result.drops == dict.fromkeys(DROP_REASONS, 1)
    assert sum(result.tried.values()) == len(GOOD + MARKED)  # the corpus ran out: 20 were asked for
    questions = [row["question"] for row in result.rows]
    assert len(questions) == len(GOOD) + 1  # the good ones and one of the twins
    assert questions.count("Which town keeps the twin lighthouse records?") == 1
    assert "not JSON" not in result.examples["unreadable_question"]
    assert result.examples["unreadable_question"].startswith("parse_failure: no JSON object")
    assert result.examples["not_standalone"] == "p(Yes)=0.10"
    assert "the judge answered labels ('maybe', 'perhaps')" in result.examples["unreadable_verdict"]
    summary = result.summary()
    for reason in DROP_REASONS:
        assert f"{reason} 1" in summary


def test_an_unreadable_answer_drops_only_its_candidate():
    def cut_or_write(request):
        if "Brannock" in request.messages[-1].content.split("Input: ")[-1]:
            return GenerateResult('{"question": "What did Brannock Mill gr', "length")  # cut at max_tokens
        return write_rule(request)

    judge = ReplayJudge(generate_rule=cut_or_write, classify_rule=verdict_rule, model_id="cut")
    result, _ = run(GOOD, size=3, judge=judge)
    assert result.complete and len(result) == 3
    assert result.drops == {"unreadable_question": 1}
    assert result.examples["unreadable_question"].startswith("truncated: the judge reached max_tokens")
    assert not any("Brannock" in row["question"] for row in result.rows)


def test_rounds_go_on_until_enough_rows_pass():
    # Three in four candidates fail: the first round takes 1.5 times the rows it needs, later rounds as many
    # as the share that passed so far says, until every good one is found.
    orphans = [f"ORPHAN note number {n} lists the {n * 7} sheep of a farm on the moor." for n in range(12)]
    result, judge = run(GOOD + orphans, size=4)
    assert (
        result.complete
        and len(result) == 4
        and result.drops == {"not_standalone": sum(result.tried.values()) - 4}
    )
    assert result.rounds >= 2 and [c for c, _ in judge.calls].count("generate") == result.rounds


def test_the_copy_check():
    contexts = ["Kelwick harbour was dredged in 1931. Larger trawlers could then land there."]
    assert copies_context("Kelwick harbour was dredged in 1931?", contexts)
    assert copies_context("kelwick HARBOUR was dredged, in 1931", contexts)  # case, punctuation
    assert not copies_context("When was Kelwick harbour dredged?", contexts)
    assert not copies_context("Why was Kelwick harbour dredged in 1931, and by whom?", contexts)
    assert copies_context("青川镇的迎仙桥建于1612年？", ["青川镇的迎仙桥建于1612年。全长四十二米。"])
    assert not copies_context("迎仙桥是哪一年建的？", ["青川镇的迎仙桥建于1612年。全长四十二米。"])


def test_the_near_duplicate_filter_compares_with_what_was_accepted():
    seen = DuplicateFilter(0.9)
    vectors = np.array([[1, 0, 0], [0.99, 0.1, 0], [0, 1, 0], [0, 0.2, 1], [0, 0, 0]], dtype=np.float32)
    assert [seen.admit(v) for v in vectors] == [
        True,
        False,
        True,
        True,
        True,
    ]  # a zero vector is nobody's twin
    assert len(seen.rows) == 4


def test_kinds_personas_and_numbers_are_checked():
    assert parse_kinds("single_hop=0.5,multi_hop=0.25,abstract=0.25") == {
        "single_hop": 0.5,
        "multi_hop": 0.25,
        "abstract": 0.25,
    }
    with pytest.raises(ConfigError, match="is not KIND=WEIGHT"):
        parse_kinds("single_hop")
    with pytest.raises(ConfigError, match="every kind weight 0"):
        TestsetConfig(size=1, kinds={"single_hop": 0})
    with pytest.raises(ConfigError, match="a weight must be a number >= 0"):
        TestsetConfig(size=1, kinds={"abstract": -1})
    with pytest.raises(ConfigError, match="duplicate_threshold"):
        TestsetConfig(size=1, duplicate_threshold=1.5)
    with pytest.raises(ConfigError, match="chunk_overlap"):
        TestsetConfig(size=1, chunk_size=10, chunk_overlap=10)
    with pytest.raises(ConfigError, match="list of short descriptions"):
        TestsetConfig(size=1, personas="a sailor")
    config = TestsetConfig(size=4, kinds={"multi_hop": 2, "abstract": 2}, personas=["  a   sailor "])
    assert config.kinds == {"single_hop": 0.0, "multi_hop": 0.5, "abstract": 0.5}
    assert config.personas == ("a sailor",) and config.active_kinds == ("multi_hop", "abstract")
    assert allocate(7, config.kinds) == {"single_hop": 0, "multi_hop": 4, "abstract": 3}


def test_each_chunk_seeds_two_multi_hop_groups_each_set_once():
    from ascend_eval.pipeline.chunking import Chunk
    from ascend_eval.testset import build_candidates
    from ascend_eval.testset.candidates import MULTI_HOP_GROUPS

    texts = [f"Passage {i} about harbour number {i}." for i in range(6)]
    chunks = [Chunk(doc_id=f"d{i}", index=0, text=t, start=0, end=len(t)) for i, t in enumerate(texts)]
    vectors = np.random.default_rng(0).normal(size=(6, 16)).astype(np.float32)
    found = build_candidates(
        chunks, vectors, {f"d{i}": "en" for i in range(6)}, TestsetConfig(size=4, kinds={"multi_hop": 1})
    )["multi_hop"]
    sets = [frozenset(c.chunks) for c in found]
    assert len(sets) == len(set(sets))  # a set of chunks is asked once, whichever chunk seeded it
    assert all(2 <= len(s) <= 3 for s in sets)
    assert len(sets) > len(chunks)  # more than one group per seed chunk
    assert len(sets) <= MULTI_HOP_GROUPS * len(chunks)
