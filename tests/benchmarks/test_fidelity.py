"""benchmarks/fidelity.py: labelled pairs in, pairwise accuracy per metric out (no model: a rule judge)."""

from __future__ import annotations

import json
import math
import os
from pathlib import Path

import pytest

from benchmarks.fidelity import (
    LONG_PAIRS,
    METRICS,
    PROJECT_PAIRS,
    ZH_PAIRS,
    accuracy,
    every_family_sample_first,
    experiment_switches,
    project_pairs,
    right,
    score_pairs,
    table,
    wikieval_pairs,
    zh_pairs,
)


def test_our_chinese_pairs_cover_each_property():
    pairs = zh_pairs(ZH_PAIRS)
    assert len(pairs) == 24 and {p["language"] for p in pairs} == {"zh"}
    for prop in ("faithfulness", "answer_relevance", "context_relevance"):
        assert sum(p["property"] == prop for p in pairs) == 8
    padded = next(p for p in pairs if p["property"] == "context_relevance")
    assert len(padded["worse"]["retrieved_contexts"]) > len(padded["better"]["retrieved_contexts"])


def test_ties_and_nan_count_as_wrong():
    assert right(0.9, 0.1) and not right(0.5, 0.5) and not right(math.nan, 0.1) and not right(0.9, math.nan)


def test_lower_is_better_for_noise_sensitivity():
    assert right(0.0, 0.5, "noise_sensitivity") and not right(0.5, 0.0, "noise_sensitivity")
    assert not right(0.2, 0.2, "noise_sensitivity") and right(0.5, 0.0, "faithfulness")


@pytest.mark.parametrize("path", PROJECT_PAIRS, ids=lambda p: p.name)
def test_the_projects_pairs_cover_every_property_ten_times_and_differ_only_where_they_should(path):
    pairs = project_pairs(path)
    language = path.stem.rsplit("_", 1)[-1]
    assert len(pairs) == 60 and {p["language"] for p in pairs} == {language}
    assert len({p["id"] for p in pairs}) == 60
    for prop in METRICS:
        assert sum(p["property"] == prop for p in pairs) == 10, prop
    same_contexts = {"faithfulness", "answer_relevance", "answer_correctness", "noise_sensitivity"}
    for p in pairs:
        better, worse = p["better"], p["worse"]
        assert better["user_input"] == worse["user_input"] and better["reference"] == worse["reference"]
        if p["property"] in same_contexts:
            assert better["retrieved_contexts"] == worse["retrieved_contexts"], p["id"]
            assert better["response"] != worse["response"], p["id"]
        else:
            assert better["response"] == worse["response"], p["id"]
            assert better["retrieved_contexts"] != worse["retrieved_contexts"], p["id"]


def _size(text: str, language: str) -> int:
    """Words of an English text, CJK characters of a Chinese one."""
    return len(text.split()) if language == "en" else sum("\u4e00" <= ch <= "\u9fff" for ch in text)


@pytest.mark.parametrize("path", LONG_PAIRS, ids=lambda p: p.name)
def test_the_long_pairs_are_long_and_differ_only_where_they_should(path):
    """Six per property and language (context_relevance is WikiEval's), answers of 170+ words or 330+
    Chinese characters, five to eight contexts of 1,250+ words or 2,300+ characters (1,787-2,339 Qwen2.5
    tokens per member, counted when they were written)."""
    pairs = project_pairs(path)
    language = path.stem.rsplit("_", 1)[-1]
    assert len(pairs) == 30 and {p["language"] for p in pairs} == {language}
    assert len({p["id"] for p in pairs} | {p["source"] for p in pairs}) == 31  # ids unique, one source
    assert {p["source"] for p in pairs} == {f"long-{language}"}
    for prop in set(METRICS) - {"context_relevance"}:
        assert sum(p["property"] == prop for p in pairs) == 6, prop
    answer, contexts = (170, 1250) if language == "en" else (330, 2300)
    for p in pairs:
        for member in (p["better"], p["worse"]):
            assert _size(member["response"], language) >= answer, p["id"]
            assert 5 <= len(member["retrieved_contexts"]) <= 8, p["id"]
            assert sum(_size(c, language) for c in member["retrieved_contexts"]) >= contexts, p["id"]
        better, worse = p["better"], p["worse"]
        same_contexts = p["property"] != "context_recall"
        assert (better["retrieved_contexts"] == worse["retrieved_contexts"]) == same_contexts, p["id"]
        assert (better["response"] == worse["response"]) != same_contexts, p["id"]


def test_rule_judge_scores_the_projects_pairs_end_to_end(rule_judge, ngram_embedder):
    pairs = [
        p for p in project_pairs(PROJECT_PAIRS[0]) if p["property"] in ("faithfulness", "noise_sensitivity")
    ]
    pairs = pairs[:2] + pairs[-2:]
    rows = accuracy(score_pairs(pairs, rule_judge, ngram_embedder, False))
    by = {(r["metric"], r["source"]): r for r in rows}
    assert by[("faithfulness", "project-en")]["pairs"] == 2
    assert by[("noise_sensitivity", "project-en")]["pairs"] == 2
    assert "| noise_sensitivity | 2 project-en |" in table(rows)


def test_the_layout_experiment_switches_the_opted_out_families_and_puts_them_back():
    from ascend_eval.prompts.context_usefulness import CONTEXT_USEFUL, UsefulnessInput
    from ascend_eval.prompts.entities import ENTITIES
    from ascend_eval.prompts.layout import PARTS, SampleBlock

    contexts = ("The tower was designed by Gustave Eiffel's company and opened in 1889. " * 20, "Other.")
    block = SampleBlock("Who built the tower?", contexts, "Eiffel's company.", "")
    x = UsefulnessInput(question=block.question, context=contexts[1], answer=block.answer)
    task_first = CONTEXT_USEFUL.render(x, "en", block)[0].content
    with every_family_sample_first(experiment_switches("sample_first_all+contexts")) as tags:
        assert "context_useful@1" in tags
        switched = CONTEXT_USEFUL.render(x, "en", block)[0].content
        assert CONTEXT_USEFUL.sample_first and CONTEXT_USEFUL.sample_first_parts == {"contexts"}
        # a prompt that writes from its text is task first whatever the experiment switches
        assert not ENTITIES.lays_out_sample_first and "entities@1" not in tags
    assert switched.startswith(block.render("en", frozenset({"contexts"})))
    assert '"context": "context 2 in the sample above"' in switched and '"answer": "Eiffel' in switched
    assert not task_first.startswith(block.render("en", frozenset({"contexts"})))
    assert CONTEXT_USEFUL.render(x, "en", block)[0].content == task_first
    assert not CONTEXT_USEFUL.sample_first and CONTEXT_USEFUL.sample_first_parts == PARTS
    with pytest.raises(SystemExit, match="unknown option"):
        experiment_switches("sample_first_all+everything")


def test_rule_judge_scores_faithfulness_pairs_end_to_end(rule_judge, ngram_embedder):
    pairs = [p for p in zh_pairs(ZH_PAIRS) if p["property"] == "faithfulness"][:3]
    rows = accuracy(score_pairs(pairs, rule_judge, ngram_embedder, False))
    faithfulness = next(r for r in rows if r["metric"] == "faithfulness" and r["source"] == "zh")
    assert faithfulness["pairs"] == 3 and faithfulness["nan"] == 0
    assert "| faithfulness | 3 zh |" in table(rows)


@pytest.mark.skipif(
    "ASCEND_EVAL_WIKIEVAL" not in os.environ, reason="set ASCEND_EVAL_WIKIEVAL=path/WikiEval.csv"
)
def test_wikieval_pairs_are_read_from_the_given_path():
    pairs = wikieval_pairs(Path(os.environ["ASCEND_EVAL_WIKIEVAL"]), rows=2)
    assert len(pairs) == 6
    first = pairs[0]["better"]
    assert not first["user_input"].startswith("Question:") and not first["response"].startswith("Answer:")
    assert pairs[0]["better"]["response"] != pairs[0]["worse"]["response"]  # faithful vs ungrounded


def test_the_table_puts_two_runs_side_by_side_per_language(tmp_path, capsys):
    from benchmarks.fidelity_table import main as table_main

    def pair(i, language, variant, scores):
        return {"id": f"p{i}", "source": "project-" + language, "language": language,
                "property": "faithfulness", "better": {"response": f"r{i}"}, "worse": {"response": f"w{i}"},
                "variants": {variant: {"faithfulness": scores}}}  # fmt: skip

    ours = [
        pair(0, "en", "ours", [0.9, 0.1]),
        pair(1, "zh", "ours", [0.6, 0.4]),
        pair(2, "zh", "ours", [1, 0]),
    ]
    ragas = [pair(0, "en", "ragas", [1, 1]), pair(1, "zh", "ragas", [1, 0]), pair(2, "zh", "ragas", [0, 1])]
    files = [str(tmp_path / "ours.json"), str(tmp_path / "ragas.json")]
    Path(files[0]).write_text(json.dumps({"pairs": ours}))
    Path(files[1]).write_text(json.dumps({"pairs": ragas}))
    assert table_main([*files, "--variants", "ours", "ragas"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert "| faithfulness | en | 1 | **1** | 0 |" in lines  # a tie counts as wrong
    assert "| faithfulness | zh | 2 | **2** | 1 |" in lines
    assert "| faithfulness | all | 3 | **3** | 1 |" in lines

    ragas[1]["worse"] = {"response": "another answer"}
    Path(files[1]).write_text(json.dumps({"pairs": ragas}))
    with pytest.raises(SystemExit, match="differs between the files"):
        table_main(files)


def test_the_table_reads_the_groups_a_stopped_run_logged(tmp_path, capsys):
    from benchmarks.fidelity_table import main as table_main

    log = tmp_path / "log.txt"
    log.write_text(
        "some warning from a library\n"
        "ragas faithfulness / en: 2 pairs, faithfulness in 9 s\n"
        'scores {"tool": "ragas", "scores": {"a": {"faithfulness": [1, 0.5]},'
        ' "b": {"faithfulness": [1, 1]}}}\n'
        "ragas context_relevance / en: 2 pairs, context_precision in 9 s\n",  # stopped before its scores
        encoding="utf-8",
    )
    assert table_main([str(log)]) == 0
    assert "| faithfulness | en | 2 | 1 |" in capsys.readouterr().out.splitlines()
