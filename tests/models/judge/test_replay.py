"""ReplayJudge: a `Judge` answering from a table of recorded answers, then from rules."""

from __future__ import annotations

from dataclasses import replace

import pytest

from ascend_eval.models.base import ClassifyResult, GenerateResult, Judge
from ascend_eval.models.judge.replay import ReplayJudge
from ascend_eval.prompts import STATEMENT_SUPPORT, STATEMENTS, StatementsInput, SupportInput

ASK = STATEMENTS.request(StatementsInput(question="长江有多长？", answer="长江全长约6300公里。"), "zh")
CHECK = STATEMENT_SUPPORT.request(SupportInput(context="长江全长约6300公里。", statement="长江很长。"), "zh")


def test_recorded_answers_are_looked_up_by_the_request():
    judge = ReplayJudge(recorded={ASK: '{"statements": ["长江全长约6300公里。"]}', CHECK: [0.2, 0.8]})
    assert isinstance(judge, Judge)
    assert judge.generate([ASK]) == [GenerateResult('{"statements": ["长江全长约6300公里。"]}', "stop")]
    assert judge.classify([CHECK, CHECK]) == [ClassifyResult(("0", "1"), (0.2, 0.8))] * 2
    assert judge.calls == [("generate", 1), ("classify", 2)]


def test_a_request_with_other_inputs_language_or_params_is_another_request():
    judge = ReplayJudge(recorded={ASK: '{"statements": []}'})
    other = [
        STATEMENTS.request(StatementsInput(question="长江有多长？", answer="长江很长。"), "zh"),
        STATEMENTS.request(StatementsInput(question="长江有多长？", answer="长江全长约6300公里。"), "en"),
        replace(ASK, params=replace(ASK.params, temperature=0.3, seed=1)),
    ]
    for request in other:
        with pytest.raises(LookupError, match="no recorded answer for this statements@1 request"):
            judge.generate([request])


def test_rules_answer_what_is_not_recorded():
    judge = ReplayJudge(
        classify_rule=lambda r: "0", recorded={CHECK: ClassifyResult(("no", "yes"), (0.1, 0.9))}
    )
    other = replace(CHECK, messages=ASK.messages)
    recorded, ruled = judge.classify([CHECK, other])
    assert recorded.labels == ("no", "yes")  # a full result is returned as it is, even over other labels
    assert (ruled.labels, ruled.probs) == (("0", "1"), (1.0, 0.0))


def test_answers_that_do_not_fit_the_labels_are_refused():
    with pytest.raises(ValueError, match="not one of"):
        ReplayJudge(recorded={CHECK: "yes"}).classify([CHECK])
    with pytest.raises(ValueError, match="3 probabilities"):
        ReplayJudge(recorded={CHECK: [0.1, 0.2, 0.7]}).classify([CHECK])
