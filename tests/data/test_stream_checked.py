"""A stream is checked once: a check that passed is remembered for the same metrics, so that `evaluate`
does not read the source again; columns a job's pipeline fills may be missing (`may_lack`), and are then
reported in `lacking` rather than as an error, with the long-context warning left to the filled samples."""

from __future__ import annotations

import logging

import pytest

from ascend_eval.data import Column
from ascend_eval.data.stream import open_samples
from ascend_eval.data.validation import LONG_CONTEXT_CHARS
from ascend_eval.models.errors import DataError

NEEDS = {"faithfulness": frozenset({Column.USER_INPUT, Column.RESPONSE, Column.RETRIEVED_CONTEXTS})}
PIPELINE = {Column.RETRIEVED_CONTEXTS, Column.RESPONSE}


def test_a_passed_check_answers_for_the_same_metrics_without_reading_again():
    reads = []
    rows = [
        {"question": "q", "answer": "a", "contexts": ["c"]},
        {"question": "q2", "answer": "b", "contexts": ["d"]},
    ]
    stream = open_samples(rows)
    assert stream.checked_count(NEEDS) is None
    assert stream.check(NEEDS) == 2
    stream._rows = lambda: reads.append(1) or iter(())  # noqa: SLF001  any further read would show
    assert stream.checked_count(NEEDS) == 2
    assert stream.checked_count({"faithfulness": [Column.USER_INPUT]}) == 2
    assert stream.checked_count({"answer_correctness": [Column.REFERENCE]}) is None
    assert open_samples(stream) is stream and not reads
    with pytest.raises(DataError, match="column_map"):
        open_samples(stream, column_map={"user_input": "q"})


def test_columns_a_pipeline_fills_may_lack_and_are_reported(caplog):
    long = "x" * (LONG_CONTEXT_CHARS + 1)
    stream = open_samples(
        [{"question": "q", "contexts": [long]}, {"question": "q2", "answer": "", "contexts": []}]
    )
    with caplog.at_level(logging.WARNING, logger="ascend_eval.data"):
        assert stream.check(NEEDS, may_lack=PIPELINE) == 2
    assert stream.lacking == PIPELINE  # an empty answer is one to generate, as an empty context list
    assert not caplog.records  # warned once the pipeline has filled the samples
    assert stream.checked_count(NEEDS) is None
    with pytest.raises(DataError, match="needs column 'user_input'"):
        open_samples([{"answer": "a"}]).check(NEEDS, may_lack=PIPELINE)
