"""benchmarks/fidelity_gate.py: the gate's verdict, and a gate kept group by group across machines."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from benchmarks.fidelity import LONG_PAIRS, PROJECT_PAIRS
from benchmarks.fidelity_gate import compare, groups, main, pairs_from_records, record, side_pairs

ECHO = "the answer in the sample above"
TWO_GROUPS = [
    "--no-zh",
    "--pairs",
    str(PROJECT_PAIRS[0]),
    "--properties",
    "noise_sensitivity",
    "context_recall",
]
"""A fidelity run's arguments that make two groups: noise_sensitivity/en and context_recall/en."""


def pair(
    pair_id: str,
    prop: str,
    lang: str,
    metric: str,
    scores: tuple[float, float],
    *,
    texts: tuple[list[str], list[str]] = (["a fact"], ["a fact"]),
    variant: str = "auto/auto",
) -> dict:
    return {
        "id": pair_id,
        "property": prop,
        "language": lang,
        "source": f"project-{lang}",
        "variants": {variant: {metric: list(scores)}},
        "outputs_by_variant": {variant: {metric: [{"texts": texts[0]}, {"texts": texts[1]}]}},
    }


def run_file(path: Path, pairs: list[dict]) -> Path:
    path.write_text(
        json.dumps({"command": ["fidelity.py"], "accuracy": [], "pairs": pairs}), encoding="utf-8"
    )
    return path


def test_a_gate_counts_pairs_per_metric_and_flags_echoes(tmp_path: Path) -> None:
    before = [
        pair(f"en-faith-{i}", "faithfulness", "en", "faithfulness", (0.9, 0.2 if i < 8 else 0.95))
        for i in range(10)
    ]
    after = [pair(f"en-faith-{i}", "faithfulness", "en", "faithfulness", (0.9, 0.2)) for i in range(10)]
    verdict = compare(before, after)
    assert (verdict["total"]["before"], verdict["total"]["after"], verdict["total"]["pairs"]) == (8, 10, 10)
    assert all(verdict["rules"].values())
    after[3] = pair("en-faith-3", "faithfulness", "en", "faithfulness", (0.9, 0.2), texts=([ECHO], ["x"]))
    verdict = compare(before, after)
    assert verdict["echoes"] and verdict["echoes"][0].startswith(
        "en-faith-3 / auto/auto / faithfulness / better"
    )
    assert not verdict["rules"]["no output echoes the layout's wording"]


def test_a_recorded_run_compares_as_its_file_did(tmp_path: Path) -> None:
    before = [
        pair(f"zh-corr-{i}", "answer_correctness", "zh", "nv_accuracy", (0.7, 0.6 if i % 3 else 0.8))
        for i in range(6)
    ]
    after = [pair(f"zh-corr-{i}", "answer_correctness", "zh", "nv_accuracy", (0.7, 0.6)) for i in range(6)]
    after[0]["variants"]["auto/auto"]["nv_accuracy"] = [math.nan, 0.6]
    after[5]["outputs_by_variant"]["auto/auto"]["nv_accuracy"][1] = {"texts": [ECHO]}
    files = run_file(tmp_path / "before.json", before), run_file(tmp_path / "after.json", after)
    summary = tmp_path / "report" / "summary.json"
    assert [record(f, summary) for f in files] == ["before.json", "after.json"]
    kept = json.loads(summary.read_text(encoding="utf-8"))["files"]
    assert "texts" not in json.dumps(kept)  # compact: scores and echo findings, not what the judge wrote
    from_files = compare(side_pairs([files[0]]), side_pairs([files[1]]))
    from_report = compare(side_pairs([f"{summary}#before.json"]), side_pairs([f"{summary}#after.json"]))
    assert from_report == from_files
    assert [e.split(":")[0] for e in from_report["echoes"]] == ["zh-corr-5 / auto/auto / nv_accuracy / worse"]
    assert (from_report["total"]["before"], from_report["total"]["after"]) == (4, 5)  # the NaN pair is wrong


def test_records_read_back_with_nan_for_none() -> None:
    entry = {
        "columns": ["id", "property", "language", "metric", "variant", "better", "worse", "right"],
        "rows": [
            ["p", "context_recall", "en", "context_recall", "v", None, 0.5, False],
            ["p", "context_recall", "en", "context_entity_recall", "v", 0.25, 0.5, False],
        ],
    }
    (back,) = pairs_from_records(entry)
    assert math.isnan(back["variants"]["v"]["context_recall"][0])
    assert back["variants"]["v"]["context_entity_recall"] == [0.25, 0.5] and back["echoes"] is None


def test_outputs_nobody_read_fail_the_echo_rule() -> None:
    before = [pair("p", "faithfulness", "en", "faithfulness", (0.9, 0.1))]
    after = [{k: v for k, v in before[0].items() if k != "outputs_by_variant"}]  # as read from a log
    verdict = compare(before, after)
    assert verdict["echo_unchecked"] == 1 and not verdict["rules"]["no output echoes the layout's wording"]


def test_a_side_from_several_groups_rejects_a_pair_scored_twice(tmp_path: Path) -> None:
    a = run_file(tmp_path / "a.json", [pair("p1", "faithfulness", "en", "faithfulness", (0.9, 0.1))])
    b = run_file(tmp_path / "b.json", [pair("p1", "faithfulness", "zh", "faithfulness", (0.9, 0.1))])
    assert len(side_pairs([a, b])) == 2
    with pytest.raises(SystemExit, match="in both"):
        side_pairs(
            [a, run_file(tmp_path / "c.json", [pair("p1", "faithfulness", "en", "faithfulness", (1, 0))])]
        )


def test_record_refuses_a_run_without_outputs(tmp_path: Path) -> None:
    bare = pair("p", "faithfulness", "en", "faithfulness", (0.9, 0.1))
    del bare["outputs_by_variant"]
    with pytest.raises(SystemExit, match="cannot be checked"):
        record(run_file(tmp_path / "r.json", [bare]), tmp_path / "summary.json")


def test_groups_follow_the_pairs_asked_for() -> None:
    files = [str(p) for p in (*PROJECT_PAIRS, *LONG_PAIRS)]
    assert groups(["--no-zh", "--pairs", *files, "--properties", "context_recall", "faithfulness"]) == [
        ("faithfulness", "en"),
        ("context_recall", "en"),
        ("faithfulness", "zh"),
        ("context_recall", "zh"),
    ]
    assert groups(["--pairs", *files, "--languages", "zh", "--properties", "noise_sensitivity"]) == [
        ("noise_sensitivity", "zh")
    ]


@pytest.mark.parametrize("at_once", [[], ["--both-at-once"]])
def test_a_stopped_gate_by_group_scores_only_the_groups_it_lacks(tmp_path: Path, capsys, at_once) -> None:
    """Every group's run is there, as a file (a gate stopped earlier) or kept in a report (finished on
    another machine): nothing is scored again, no worktree is made, and the verdict covers all groups."""
    args = TWO_GROUPS
    report = tmp_path / "report" / "summary.json"  # the runs a gate finished on another machine
    for prop, metric in (("noise_sensitivity", "noise_sensitivity"), ("context_recall", "context_recall")):
        for side, worse in (("before", 0.5), ("after", 0.05)):
            run = run_file(tmp_path / f"{side}-{prop}-en.json", [pair("p", prop, "en", metric, (0.1, worse))])
            if prop == "context_recall":
                record(run, report)
                run.unlink()
    code = main(
        [
            "run",
            "--by-group",
            *at_once,
            "--before",
            "HEAD~1",
            "--after",
            "HEAD",
            "--judge",
            "http://127.0.0.1:1",
            "--out",
            str(tmp_path),
            "--kept",
            str(report),
            *args,
        ]
    )
    out = capsys.readouterr().out
    assert out.count("is there, not scored again") == 2 and out.count("not scored again") == 4
    assert not list(tmp_path.glob("*-tree"))
    # noise_sensitivity (lower is better): right before, wrong after; context_recall the other way round
    assert "All: 1 -> 1 of 2 pair checks." in out and code == 0  # one pair lost is within max(1, 5%)


def test_a_pair_right_by_less_than_the_rounding_stays_right_when_read_back(tmp_path: Path) -> None:
    """Records round scores to 4 places; the verdict they keep was judged before rounding."""
    hair = [pair("zh-long-relev-02", "answer_relevance", "zh", "answer_relevancy", (1.2e-4, 1.1e-4))]
    summary = tmp_path / "summary.json"
    record(run_file(tmp_path / "after.json", hair), summary)
    (back,) = side_pairs([f"{summary}#after.json"])
    assert back["variants"]["auto/auto"]["answer_relevancy"] == [0.0001, 0.0001]
    assert compare(hair, [back])["total"]["after"] == 1 == compare(hair, hair)["total"]["after"]


def test_a_gate_in_parts_keeps_whole_groups_and_reads_each_part(tmp_path: Path, capsys) -> None:
    """`--parts 2`: a group that is there whole is not split; another group's two parts, each a file of its
    own (one kept in a report), together make that group's side; nothing is scored again."""
    args = TWO_GROUPS
    report = tmp_path / "report" / "summary.json"
    for side, worse in (("before", 0.5), ("after", 0.05)):
        run_file(tmp_path / f"{side}-noise_sensitivity-en.json",
                 [pair("n", "noise_sensitivity", "en", "noise_sensitivity", (0.1, worse))])  # fmt: skip
        for k, pid in ((1, "c1"), (2, "c2")):
            run = run_file(tmp_path / f"{side}-context_recall-en-part{k}of2.json",
                           [pair(pid, "context_recall", "en", "context_recall", (0.1, worse))])  # fmt: skip
            if k == 2:
                record(run, report)
                run.unlink()
    sides = ["--before", "HEAD~1", "--after", "HEAD", "--judge", "http://127.0.0.1:1"]
    code = main(["run", "--by-group", "--both-at-once", "--parts", "2", *sides, "--out", str(tmp_path),
                 "--kept", str(report), *args])  # fmt: skip
    out = capsys.readouterr().out
    assert out.count("not scored again") == 6 and "noise_sensitivity-en-part" not in out
    assert not list(tmp_path.glob("*-tree"))
    # noise_sensitivity (lower is better) loses its one pair, context_recall gains both of its parts' pairs
    assert "All: 1 -> 2 of 3 pair checks." in out and code == 0


def test_a_part_is_its_share_of_the_group_in_order() -> None:
    from benchmarks.fidelity import parser, selected_pairs

    base = ["--no-zh", "--pairs", str(PROJECT_PAIRS[0]), "--properties", "context_recall", "--judge", "j"]
    whole = [p["id"] for p in selected_pairs(parser().parse_args(base))]
    parts = [
        [p["id"] for p in selected_pairs(parser().parse_args([*base, "--part", f"{k}/3"]))] for k in (1, 2, 3)
    ]
    assert [i for p in parts for i in p] == whole and all(parts)
    with pytest.raises(SystemExit):
        parser().parse_args([*base, "--part", "4/3"])
