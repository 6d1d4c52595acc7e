"""`generate` on a scripted judge: the rows and their fields, the kinds' shares, one batched call per round
and request kind, determinism for a seed, personas, both languages, running out of candidates, and rows
that `evaluate` reads as they are."""

from __future__ import annotations

import pytest

from ascend_eval import evaluate
from ascend_eval.data import load_dataset
from ascend_eval.testset import QUERY_KINDS, ROW_FIELDS, generate
from ascend_eval.testset.config import TestsetConfig
from ascend_eval.testset.corpus import load_corpus
from ascend_eval.testset.generation import corpus_chunks
from tests.conftest import NgramEmbedder
from tests.testset.conftest import scripted_judge, verdict_rule, write_rule

EN, ZH = "ascend-eval/rag-mini-en", "ascend-eval/rag-mini-zh"


def run(corpus=EN, size=12, **settings):
    judge = settings.pop("judge", None) or scripted_judge()
    settings = {"embedder": NgramEmbedder(dim=512), "cache_dir": False, **settings}
    return generate(corpus, size, judge=judge, **settings), judge


def test_rows_carry_every_field_in_the_asked_shares():
    result, judge = run(size=12)
    assert result.complete and len(result) == 12 and result.rounds == 1
    assert result.kinds() == {"single_hop": 6, "multi_hop": 3, "abstract": 3}
    chunks = {f"{c.doc_id}#{c.index}": c.text for c in corpus_chunks(load_corpus(EN), TestsetConfig(size=1))}
    for row in result.rows:
        assert list(row) == [f for f in ROW_FIELDS if f != "persona"]  # no persona without personas
        assert row["language"] == "en" and row["question"].startswith("What is said about")
        assert row["reference_contexts"] == [chunks[i] for i in row["source_chunks"]]
        hops = len(row["source_chunks"])
        assert {"single_hop": hops == 1, "multi_hop": hops in (2, 3), "abstract": 2 <= hops <= 4}[
            row["query_kind"]
        ]
        assert len(set(row["source_chunks"])) == hops
    # One writing call and one verdict call for the whole round: every request batched.
    assert [kind for kind, _ in judge.calls] == ["generate", "classify"]
    assert judge.calls[1][1] == 2 * judge.calls[0][1]  # two verdicts per written candidate


def test_kinds_follow_the_setting_and_a_kind_left_out_gets_none():
    result, _ = run(size=10, kinds={"multi_hop": 3, "abstract": 1})
    assert result.kinds() == {"multi_hop": 8, "abstract": 2}
    assert set(result.tried) == {"multi_hop", "abstract"}


def test_the_same_seed_gives_the_same_rows_and_another_seed_others():
    first, _ = run(size=8, seed=7)
    again, _ = run(size=8, seed=7)
    other, _ = run(size=8, seed=8)
    assert first.rows == again.rows
    assert [r["question"] for r in first.rows] != [r["question"] for r in other.rows]


def test_personas_ask_the_questions():
    personas = ["a ferry captain", "a first-time visitor"]
    result, _ = run(size=10, personas=personas, seed=3)
    assert {row["persona"] for row in result.rows} == set(personas)  # the seed spreads them
    for row in result.rows:
        assert row["question"].startswith(f"[{row['persona']}] ")
    again, _ = run(size=10, personas=personas, seed=3)
    assert again.rows == result.rows


class Recording:
    """The scripted judge's rules, remembering every prompt they were shown."""

    def __init__(self):
        self.written, self.judged = [], []

    def write(self, request):
        self.written.append(request.messages[-1].content)
        return write_rule(request)

    def verdict(self, request):
        self.judged.append(request.messages[-1].content)
        return verdict_rule(request)


@pytest.mark.parametrize(
    ("corpus", "language", "expected"), [(ZH, "auto", "zh"), (EN, "zh", "zh"), (ZH, "en", "en")]
)
def test_the_language_follows_the_documents_or_the_setting(corpus, language, expected):
    from ascend_eval.models.judge.replay import ReplayJudge

    seen = Recording()
    judge = ReplayJudge(generate_rule=seen.write, classify_rule=seen.verdict, model_id="recording")
    result, _ = run(corpus, size=6, language=language, judge=judge)
    assert result.languages() == {expected: 6}
    marker = "你在为" if expected == "zh" else "You write one item"
    assert seen.written and all(marker in p for p in seen.written)
    if corpus == ZH and expected == "zh":
        assert all(row["question"].startswith("关于") for row in result.rows)
        assert any("一个没有看过出题所用文档的人" in p for p in seen.judged)  # the Chinese verdict template


def test_each_row_takes_its_own_documents_language():
    english = load_corpus(EN)[:4]
    chinese = load_corpus(ZH)[:4]
    result, _ = run(english + chinese, size=8, kinds={"single_hop": 1.0})
    for row in result.rows:
        assert row["language"] == ("zh" if row["source_chunks"][0].startswith("qc-") else "en")
    assert set(result.languages()) == {"en", "zh"}


def test_a_corpus_that_runs_out_says_so_with_the_counts():
    texts = [f"Pier {n} of Kelwick harbour was rebuilt in {1900 + n} after a winter storm." for n in range(4)]
    result, _ = run(texts, size=20, chunk_size=80)
    assert not result.complete and len(result) < 20
    assert result.tried == result.available  # every candidate was tried
    assert result.available["single_hop"] == 4
    assert "ran out at" in result.summary() and "candidates tried" in result.summary()


def test_rows_are_read_by_evaluate_as_they_are(tmp_path):
    result, _ = run(size=4)
    path = result.to_jsonl(tmp_path / "testset.jsonl")
    dataset = load_dataset(path)
    sample = dataset[0]
    assert sample.user_input == result.rows[0]["question"]
    assert sample.reference == result.rows[0]["ground_truth"]
    assert list(sample.reference_contexts) == result.rows[0]["reference_contexts"]
    assert sample.metadata["query_kind"] in QUERY_KINDS and sample.metadata["source_chunks"]
    # With a RAG system's answers added, the rows score as any dataset does.
    rows = [r | {"answer": r["ground_truth"], "contexts": r["reference_contexts"]} for r in result.to_list()]
    scored = evaluate(rows, metrics=["answer_similarity"], embedder=NgramEmbedder(), cache_dir=False)
    assert scored["answer_similarity"] == pytest.approx([1.0] * 4, abs=1e-5)
