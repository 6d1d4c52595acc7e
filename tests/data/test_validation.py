"""validate(): one DataError that lists every missing column, grouped by metric, with a fix."""

from __future__ import annotations

from pathlib import Path

import pytest

from ascend_eval.data import Column, Sample, load_dataset, validate
from ascend_eval.models.errors import DataError

FAITHFULNESS = {"faithfulness": [Column.USER_INPUT, Column.RESPONSE, Column.RETRIEVED_CONTEXTS]}


def _errors(samples, requirements) -> str:  # type: ignore[no-untyped-def]
    with pytest.raises(DataError) as info:
        validate(samples, requirements)
    return str(info.value)


def test_complete_dataset_passes() -> None:
    ds = load_dataset(
        {"question": ["问题"], "answer": [""], "contexts": [["上下文"]], "ground_truth": ["参考"]}
    )
    validate(ds, FAITHFULNESS)  # an empty answer string is present
    validate(ds, {"context_recall": ["question", "contexts", "ground_truth"]})  # legacy names work too
    validate(ds, {})


def test_message_names_metric_column_legacy_name_samples_columns_and_fix() -> None:
    ds = load_dataset({"question": [f"q{i}" for i in range(8)], "answer": [f"a{i}" for i in range(8)]})
    message = _errors(ds[:1], FAITHFULNESS)
    assert (
        "Metric 'faithfulness' needs column 'retrieved_contexts' (legacy name 'contexts'); "
        "sample 0 lacks it. Pass column_map={'retrieved_contexts': '<your column>'} or drop the metric."
        in message
    )
    assert "The dataset has columns ['question', 'answer']." in message
    assert "dict of 8 rows" in message
    assert "all 8 samples lack it" in _errors(ds, FAITHFULNESS)


def test_partially_missing_values_list_indices_and_more() -> None:
    rows = [{"question": "q", "answer": "a", "contexts": ["c"]} for _ in range(12)]
    for index in (0, 3, 7):
        del rows[index]["contexts"]
    rows[9]["contexts"] = None
    rows[10]["answer"] = None
    message = _errors(load_dataset(rows), FAITHFULNESS)
    assert (
        "needs column 'retrieved_contexts' (legacy name 'contexts'); samples 0, 3, 7, 9 lack it." in message
    )
    assert "needs column 'response' (legacy name 'answer'); sample 10 lacks it." in message
    # The column exists, so the fix is to fill the gaps, not to map a column.
    assert "Fill in those samples, drop them, or drop the metric." in message
    assert "column_map" not in message
    assert "(2 problems)" in message

    many = [{"question": "q"} if i % 2 else {"question": "q", "answer": "a"} for i in range(20)]
    message = _errors(load_dataset(many), {"answer_relevancy": ["user_input", "response"]})
    assert "samples 1, 3, 5, 7, 9 and 5 more lack it" in message


def test_every_problem_of_every_metric_is_in_one_error() -> None:
    ds = load_dataset({"question": ["q0", "q1"], "answer": ["a0", "a1"]})
    message = _errors(
        ds,
        {
            "faithfulness": ["user_input", "response", "retrieved_contexts"],
            "answer_correctness": ["user_input", "response", "reference"],
            "context_recall": ["user_input", "retrieved_contexts", "reference"],
        },
    )
    lines = [line for line in message.splitlines() if line.startswith("- ")]
    need = "- Metric '{}' needs column '{}' (legacy name '{}'); all 2 samples lack it. "
    fix = "Pass column_map={{'{}': '<your column>'}} or drop the metric."
    assert lines == [
        need.format("faithfulness", "retrieved_contexts", "contexts") + fix.format("retrieved_contexts"),
        need.format("answer_correctness", "reference", "ground_truth") + fix.format("reference"),
        need.format("context_recall", "retrieved_contexts", "contexts") + fix.format("retrieved_contexts"),
        need.format("context_recall", "reference", "ground_truth") + fix.format("reference"),
    ]
    assert message.splitlines()[-1] == "The dataset has columns ['question', 'answer']."


@pytest.mark.parametrize(
    ("column_name", "needed", "requirement"),
    [
        ("context", "retrieved_contexts", Column.RETRIEVED_CONTEXTS),
        ("Contexts", "retrieved_contexts", Column.RETRIEVED_CONTEXTS),
        ("ground_truth_answer", "reference", Column.REFERENCE),
        ("Question", "user_input", Column.USER_INPUT),
    ],
)
def test_a_similar_column_name_is_suggested(column_name: str, needed: str, requirement: Column) -> None:
    ds = load_dataset([{column_name: "x", "unrelated": "y"}])
    message = _errors(ds, {"some_metric": [requirement]})
    assert (
        f"Pass column_map={{{needed!r}: {column_name!r}}} (your column {column_name!r} has a similar name)"
        in message
    )


def test_suggestion_from_a_csv_file(tmp_path: Path) -> None:
    path = tmp_path / "d.csv"
    path.write_text('question,answer,retrieved_context\n问题,回答,"[""上下文""]"\n', encoding="utf-8")
    message = _errors(load_dataset(path), FAITHFULNESS)
    assert "column_map={'retrieved_contexts': 'retrieved_context'}" in message
    assert "The dataset has columns ['question', 'answer', 'retrieved_context']." in message
    assert str(path) in message


def test_empty_context_list_counts_as_missing_but_empty_strings_do_not() -> None:
    ds = load_dataset({"question": ["", "q"], "answer": ["", "a"], "contexts": [["c"], []]})
    message = _errors(ds, FAITHFULNESS)
    assert (
        "needs column 'retrieved_contexts' (legacy name 'contexts'); sample 1 has an empty list." in message
    )
    assert "'user_input'" not in message and "'response'" not in message


def test_ids_are_shown_when_they_differ_from_positions() -> None:
    ds = load_dataset([{"id": "q-17", "question": "q"}, {"id": "q-18", "question": "q", "answer": "a"}])
    assert "sample 0 (id 'q-17') lacks it" in _errors(ds, {"answer_relevancy": ["question", "answer"]})


def test_empty_dataset_is_an_error(tmp_path: Path) -> None:
    path = tmp_path / "empty.jsonl"
    path.write_text("\n", encoding="utf-8")
    with pytest.raises(DataError, match=r"The dataset \(file '.*empty.jsonl'\) is empty"):
        validate(load_dataset(path), FAITHFULNESS)
    with pytest.raises(DataError, match="is empty"):
        validate([], {})


def test_plain_list_of_samples_works() -> None:
    samples = [Sample(id="0", user_input="q", metadata={"contxts": ["c"]})]
    message = _errors(samples, FAITHFULNESS)
    assert message.startswith("The dataset (1 sample) cannot be evaluated as given (2 problems):")
    assert "column_map={'retrieved_contexts': 'contxts'}" in message
    assert "The dataset has columns ['user_input', 'contxts']." in message


def test_requirements_with_unknown_columns_or_non_samples() -> None:
    with pytest.raises(DataError, match="Unknown column 'contxt'"):
        validate([Sample(user_input="q")], {"m": ["contxt"]})
    with pytest.raises(DataError, match="got a dict at position 0"):
        validate([{"question": "q"}], FAITHFULNESS)  # type: ignore[list-item]


def test_a_single_column_requirement_is_not_split_into_characters() -> None:
    validate([Sample(user_input="q")], {"m": Column.USER_INPUT})  # type: ignore[dict-item]
    message = _errors([Sample(user_input="q")], {"m": "reference"})  # type: ignore[dict-item]
    assert "needs column 'reference'" in message


def test_problems_follow_column_order_whatever_the_requirement_order() -> None:
    needed = frozenset({Column.RETRIEVED_CONTEXTS, Column.REFERENCE, Column.RESPONSE})
    message = _errors([Sample(user_input="q")], {"noise_sensitivity": needed})
    positions = [
        message.index(f"needs column '{c}'") for c in ("response", "retrieved_contexts", "reference")
    ]
    assert positions == sorted(positions)
