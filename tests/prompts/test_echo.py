"""Prompts that write from a text carry it in every layout, and an answer that reads the prompt back is NaN.

On long answers, with the sample-first layout pointing the statements prompt to "the answer in the sample
above", a real judge (Qwen2.5-Coder-1.5B) wrote the pointers back as its statements:
`["上方样本中的问题", "上方样本中的回答"]` in 16 of 16 Chinese samples, and a good answer and its flawed twin
scored alike. The outputs below are those recorded ones; the samples are the project's long fidelity pairs.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

import ascend_eval
from ascend_eval.data import Sample
from ascend_eval.engine import Backends, Engine
from ascend_eval.metrics import PlanContext, metric_names, resolve_metrics
from ascend_eval.models.base import GenerateRequest
from ascend_eval.models.judge.replay import ReplayJudge
from ascend_eval.prompts import PROMPTS, PromptSpec
from ascend_eval.prompts.layout import SampleBlock, echoed
from tests.conftest import split_sentences
from tests.prompts.test_layout import Recorder

LONG_PAIRS = Path(__file__).parents[2] / "benchmarks" / "data"
RECORDED = Path(__file__).parent / "data" / "recorded_statements.jsonl"
"""Every distinct answer Qwen2.5-Coder-1.5B gave to the statements prompt of the long faithfulness pairs'
24 samples laid out sample first with pointers (the library before the fix, behind one vLLM CPU server,
2026-12-06): its text, the pair's question, whether a person reads it as the prompt read back ("echo"), and
how many of the 24 samples got it ("times"). 21 of 24 did: all 12 Chinese ones and 9 of the 12 English, one
of them as a real list of statements with "The answer in the sample above" at its end."""

RECORDED_ECHOES = {
    "zh": ["上方样本中的问题", "上方样本中的回答"],
    "en": ["the question in the sample above", "the answer in the sample above"],
}
"""What the judge wrote as the statements of long answers pointed to sample first (the issue's record)."""
RECORDED_REFERENCE_ECHO = ["The reference answer in the sample above states the facts of the question."]


def long_sample(language: str, prop: str = "faithfulness") -> dict:
    """The better member of the first long pair of `prop` in `language`, as evaluate's columns."""
    for line in (LONG_PAIRS / f"fidelity_long_{language}.jsonl").read_text(encoding="utf-8").splitlines():
        pair = json.loads(line)
        if pair["property"] == prop:
            return {
                "user_input": pair["question"],
                "retrieved_contexts": pair["better"]["retrieved_contexts"],
                "response": pair["better"]["response"],
                "reference": pair["reference"],
            }
    raise LookupError(f"no {prop} pair in {language}")


WRITERS = [spec for spec in PROMPTS.values() if isinstance(spec, PromptSpec) and spec.writes_from]


def test_the_guard_reads_every_recorded_echo_of_a_long_answer_as_one_and_no_real_statements():
    from ascend_eval.models.base import GenerateResult
    from ascend_eval.prompts.statements import read_statements

    recorded = [json.loads(line) for line in RECORDED.read_text(encoding="utf-8").splitlines()]
    assert sum(r["times"] for r in recorded) == 24 and sum(r["times"] for r in recorded if r["echo"]) == 21
    for r in recorded:
        read = read_statements(GenerateResult(r["text"], "stop"), question=r["question"], ragas_compat=False)
        if r["echo"]:
            assert getattr(read, "reason", "").startswith("echo: "), r["text"]
        else:
            assert isinstance(read, list) and len(read) >= 10, r["text"]


def test_the_writers_are_the_prompts_that_copy_or_rewrite_a_text():
    assert {spec.name for spec in WRITERS} == {"statements", "entities", "response_question",
                                               "context_attribution"}  # fmt: skip


def _inputs(spec: PromptSpec, row: dict) -> object:
    """The spec's input filled from a sample: each field from the sample text that metrics give it."""
    sample = Sample(**row)
    by_field = {"question": sample.user_input, "answer": sample.response, "response": sample.response,
                "text": sample.reference, "context": sample.joined_contexts}  # fmt: skip
    return spec.input(**{name: by_field[name] for name in spec.input.model_fields})


@pytest.mark.parametrize("language", ["en", "zh"])
@pytest.mark.parametrize("spec", WRITERS, ids=lambda s: s.name)
def test_a_prompt_that_writes_from_a_text_carries_it_in_every_layout(spec, language):
    row = long_sample(language)
    block = SampleBlock.of(Sample(**row))
    assert block.pays_off  # long enough that the run lays its other prompts out sample first
    inputs = _inputs(spec, row)
    for shown in (None, block):
        [message] = spec.render(inputs, language, shown)
        assert message.content.startswith(spec.instruction[language])
        assert echoed([message.content]) is None  # no pointer, no block heading anywhere in the request
        for name in spec.writes_from:
            text = getattr(inputs, name)
            assert json.dumps(text, ensure_ascii=False)[1:-1] in message.content


@pytest.mark.parametrize("language", ["en", "zh"])
def test_every_writing_request_of_the_twelve_metrics_holds_its_text_on_a_long_sample(
    language, ngram_embedder
):
    row = long_sample(language)
    recorder = Recorder()
    judge = recorder.judge()
    sample = Sample(**row)
    ctx = PlanContext(language, block=SampleBlock.of(sample))  # type: ignore[arg-type]
    Engine(Backends(judge=judge, embedder=ngram_embedder)).run(
        {m.name: m.plan(sample, ctx) for m in resolve_metrics(metric_names())}
    )
    written = [r for r in recorder.sent if r.tag.split("@")[0] in {s.name for s in WRITERS}]
    assert {r.tag.split("@")[0] for r in written} == {"statements", "entities", "response_question"}
    for request in written:
        content = request.messages[-1].content
        assert echoed([content]) is None, request.tag
    statements = [r.messages[-1].content for r in written if r.tag.startswith("statements")]
    for text in (row["response"], row["reference"]):  # faithfulness's answer, context_recall's reference
        assert any(json.dumps(text, ensure_ascii=False)[1:-1] in c for c in statements)


def _echo_judge(statements: list[str], entities: list[str] | None = None) -> ReplayJudge:
    def generate(request: GenerateRequest) -> str:
        if request.tag.startswith("entities"):
            return json.dumps({"entities": entities or ["Lake Varn"]}, ensure_ascii=False)
        if request.tag.startswith("response_question"):
            return json.dumps({"question": "What happened?", "noncommittal": 0})
        return json.dumps({"statements": statements}, ensure_ascii=False)

    return ReplayJudge(generate, lambda request: [0.1, 0.9], model_id=f"echo:{statements}:{entities}")


def _score(row: dict, metrics: list[str], judge: ReplayJudge, language: str, embedder, cache, **settings):
    """`evaluate` of one long sample with a recorded-answer judge."""
    return ascend_eval.evaluate(
        [row], metrics, judge=judge, embedder=embedder, language=language, cache_dir=cache, progress=False,
        **settings,
    )  # fmt: skip


STATEMENT_METRICS = ["faithfulness", "answer_correctness", "context_recall", "noise_sensitivity"]


@pytest.mark.parametrize("language", ["en", "zh"])
def test_statements_that_read_the_layout_back_are_nan_with_the_reason(language, ngram_embedder, tmp_path):
    row = long_sample(language)
    result = _score(row, STATEMENT_METRICS, _echo_judge(RECORDED_ECHOES[language]), language, ngram_embedder,
                    tmp_path)  # fmt: skip
    for column in result.metrics:
        assert math.isnan(result[column][0]), column
        [reason] = result.nan_reasons(column)
        assert reason.startswith("echo: the judge wrote the prompt's own wording"), (column, reason)
        assert RECORDED_ECHOES[language][0] in reason


def test_a_pointer_to_the_reference_written_as_a_statement_is_an_echo(ngram_embedder, tmp_path):
    row, judge = long_sample("en", "context_recall"), _echo_judge(RECORDED_REFERENCE_ECHO)
    result = _score(row, ["context_recall"], judge, "en", ngram_embedder, tmp_path)
    assert math.isnan(result["context_recall"][0])
    assert next(iter(result.nan_reasons("context_recall"))).startswith("echo:")


def test_the_question_written_back_as_the_statements_is_an_echo(ngram_embedder, tmp_path):
    row = long_sample("zh")
    result = _score(row, ["faithfulness"], _echo_judge([row["user_input"]]), "zh", ngram_embedder, tmp_path)
    [reason] = result.nan_reasons("faithfulness")
    assert reason.startswith("echo: the judge wrote the sample's question")


def test_entities_that_read_the_layout_back_are_nan(ngram_embedder, tmp_path):
    judge = _echo_judge(["x"], entities=["context 2 in the sample above", "Lake Varn"])
    row = long_sample("en", "context_recall")
    result = _score(row, ["context_entity_recall"], judge, "en", ngram_embedder, tmp_path)
    assert math.isnan(result["context_entity_recall"][0])
    assert next(iter(result.nan_reasons("context_entity_recall"))).startswith("echo:")


def test_real_statements_of_a_long_answer_are_scored(ngram_embedder, tmp_path):
    """The guard reads only the layout's own wording: sentences of a real answer pass it."""
    row = long_sample("en")
    statements = split_sentences(row["response"])
    assert echoed(statements, row["user_input"]) is None
    result = _score(row, ["faithfulness"], _echo_judge(statements), "en", ngram_embedder, tmp_path,
                    calibration="off")  # fmt: skip
    assert result["faithfulness"][0] == pytest.approx(0.9)
