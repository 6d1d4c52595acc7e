"""The engine: batching across plans, deduplication, caching, resume, and failure isolation."""

from __future__ import annotations

import math

import numpy as np
import pytest

from ascend_eval.data import Column, Sample
from ascend_eval.engine import Backends, Engine, PlanError, RequestCache
from ascend_eval.metrics import Faithfulness, MetricResult, PlanContext
from ascend_eval.metrics.base import Metric
from ascend_eval.models.base import ClassifyRequest, ClassifyResult, EmbedRequest, GenerateResult
from ascend_eval.models.judge.replay import ReplayJudge
from ascend_eval.prompts import STATEMENTS, StatementsInput

EN = PlanContext(language="en")


def samples(n: int) -> list[Sample]:
    return [
        Sample(
            user_input=f"Question {i}?",
            response=f"Fact {i} holds. Claim {i} is invented.",
            retrieved_contexts=(f"Fact {i} holds here.", "Unrelated text."),
            reference=f"Fact {i} holds.",
            id=str(i),
        )
        for i in range(n)
    ]


class StatementCount(Metric):
    """A second metric that needs the same statement extraction as faithfulness."""

    name = "statement_count"
    required = frozenset({Column.USER_INPUT, Column.RESPONSE})

    def plan(self, sample, ctx):
        [raw] = yield [
            STATEMENTS.request(
                StatementsInput(question=sample.user_input, answer=sample.response), ctx.language
            )
        ]
        parsed = STATEMENTS.parse(raw)
        return MetricResult(float(len(parsed.statements)))


def run(judge, metrics, data, cache=None, **kw):
    engine = Engine(Backends(judge=judge), cache, **kw)
    plans = {(i, m.name): m.plan(s, EN) for i, s in enumerate(data) for m in metrics}
    return engine, engine.run(plans)


def test_one_batch_per_step_across_all_samples(rule_judge):
    engine, out = run(rule_judge, [Faithfulness()], samples(10))
    # 10 statement extractions in one call, then all 20 statement verdicts in one call
    assert rule_judge.calls == [("generate", 10), ("classify", 20)]
    assert [r.sent for r in engine.rounds] == [10, 20]
    assert all(out[(i, "faithfulness")].score == 0.5 for i in range(10))


def test_identical_requests_across_metrics_run_once(rule_judge):
    engine, out = run(rule_judge, [Faithfulness(), StatementCount()], samples(4))
    first = engine.rounds[0]
    assert first.requests == 8 and first.unique == 4 and first.sent == 4
    assert rule_judge.calls[0] == ("generate", 4)
    assert out[(3, "statement_count")].score == 2.0


def test_dedupe_off_sends_every_occurrence(rule_judge):
    engine, _ = run(rule_judge, [Faithfulness(), StatementCount()], samples(4), dedupe=False)
    assert engine.rounds[0].sent == 8


def test_cache_answers_a_rerun_without_the_judge(rule_judge, tmp_path):
    with RequestCache(tmp_path / "c.sqlite") as cache:
        _, first = run(rule_judge, [Faithfulness()], samples(3), cache)
    again = ReplayJudge(model_id=rule_judge.model_id)  # no rules: any call would raise
    with RequestCache(tmp_path / "c.sqlite") as cache:
        engine, second = run(again, [Faithfulness()], samples(3), cache)
    assert again.calls == []
    assert [r.cache_hits for r in engine.rounds] == [3, 6]
    assert {k: v.score for k, v in first.items()} == {k: v.score for k, v in second.items()}


def test_cache_is_keyed_by_model(rule_judge, tmp_path):
    with RequestCache(tmp_path / "c.sqlite") as cache:
        run(rule_judge, [Faithfulness()], samples(2), cache)
    other = ReplayJudge(rule_judge.generate_rule, rule_judge.classify_rule, model_id="rules-v2")
    with RequestCache(tmp_path / "c.sqlite") as cache:
        engine, _ = run(other, [Faithfulness()], samples(2), cache)
    assert engine.rounds[0].cache_hits == 0 and other.calls[0] == ("generate", 2)


def test_interrupted_run_resumes_from_cache(rule_judge, tmp_path):
    def interrupt(request):
        raise KeyboardInterrupt

    broken = ReplayJudge(rule_judge.generate_rule, interrupt, model_id=rule_judge.model_id)
    with RequestCache(tmp_path / "c.sqlite") as cache, pytest.raises(KeyboardInterrupt):
        run(broken, [Faithfulness()], samples(5), cache)
    with RequestCache(tmp_path / "c.sqlite") as cache:
        engine, out = run(rule_judge, [Faithfulness()], samples(5), cache)
    # the statement extractions answered before the interruption are not asked again
    assert rule_judge.calls == [("classify", 10)]
    assert engine.rounds[0].cache_hits == 5
    assert all(r.score == 0.5 for r in out.values())


def test_chunks_are_committed_as_they_return(rule_judge, tmp_path):
    calls = {"n": 0}

    def fail_on_third_chunk(request):
        calls["n"] += 1
        if calls["n"] > 4:
            raise KeyboardInterrupt
        return rule_judge.generate_rule(request)

    broken = ReplayJudge(fail_on_third_chunk, rule_judge.classify_rule, model_id=rule_judge.model_id)
    with RequestCache(tmp_path / "c.sqlite") as cache, pytest.raises(KeyboardInterrupt):
        run(broken, [Faithfulness()], samples(6), cache, chunk_size=2)
    with RequestCache(tmp_path / "c.sqlite") as cache:
        assert len(cache) == 4  # two chunks of two were committed before the interruption


def test_a_failed_batch_fails_only_its_plans(rule_judge):
    def flaky(request):
        if "Fact 1 " in request.messages[-1].content:
            return GenerateResult.failed("HTTP 500 after 3 retries")
        return rule_judge.generate_rule(request)

    judge = ReplayJudge(flaky, rule_judge.classify_rule)
    engine, out = run(judge, [Faithfulness()], samples(3))
    assert out[(1, "faithfulness")] == PlanError("backend_error: HTTP 500 after 3 retries")
    assert out[(0, "faithfulness")].score == 0.5 and out[(2, "faithfulness")].score == 0.5
    assert engine.rounds[0].failed == 1


def test_a_backend_exception_does_not_end_the_run(rule_judge):
    def boom(request):
        raise RuntimeError("device out of memory")

    judge = ReplayJudge(rule_judge.generate_rule, boom)
    _, out = run(judge, [Faithfulness(), StatementCount()], samples(2))
    assert out[(0, "faithfulness")].reason.startswith("backend_error: RuntimeError: device out of memory")
    assert out[(0, "statement_count")].score == 2.0  # a metric that needed no verdicts is unaffected


def test_a_plan_that_raises_becomes_nan_with_reason(rule_judge):
    class Broken(Metric):
        name = "broken"
        required = frozenset()

        def plan(self, sample, ctx):
            yield []
            raise ValueError("bad math")

    _, out = run(rule_judge, [Broken(), Faithfulness()], samples(1))
    assert out[(0, "broken")] == PlanError("plan_error: ValueError: bad math")
    assert out[(0, "faithfulness")].score == 0.5


def test_garbage_judge_output_is_nan_with_raw_text_kept(rule_judge):
    judge = ReplayJudge(lambda r: "I think the statements are: blah", rule_judge.classify_rule)
    _, out = run(judge, [Faithfulness()], samples(1))
    result = out[(0, "faithfulness")]
    assert math.isnan(result.score)
    assert result.reason.startswith("parse_failure")
    assert result.details["raw"] == "I think the statements are: blah"


def test_truncated_judge_output_is_reported_not_parsed(rule_judge):
    judge = ReplayJudge(lambda r: GenerateResult('{"statements": ["a"]}', "length"), rule_judge.classify_rule)
    _, out = run(judge, [Faithfulness()], samples(1))
    assert out[(0, "faithfulness")].reason.startswith("truncated")


def test_embed_requests_are_batched_per_kind():
    class CountingEmbedder:
        model_id = "count"

        def __init__(self):
            self.calls = []

        def embed(self, texts, *, kind="document"):
            self.calls.append((kind, len(texts)))
            return np.stack([np.full(3, len(t), dtype=np.float32) for t in texts])

    class Lengths(Metric):
        name = "lengths"
        required = frozenset()

        def plan(self, sample, ctx):
            a, b = yield [EmbedRequest(sample.response), EmbedRequest(sample.user_input, kind="query")]
            return MetricResult(float(a[0] + b[0]))

    embedder = CountingEmbedder()
    engine = Engine(Backends(embedder=embedder))
    data = samples(3)
    out = engine.run({i: Lengths().plan(s, EN) for i, s in enumerate(data)})
    assert sorted(embedder.calls) == [("document", 3), ("query", 3)]
    assert out[0].score == len(data[0].response) + len(data[0].user_input)


def test_missing_backend_is_a_clear_error(rule_judge):
    engine = Engine(Backends(judge=None))
    with pytest.raises(Exception, match="no judge is configured"):
        engine.run({0: Faithfulness().plan(samples(1)[0], EN)})


def test_classify_probabilities_are_kept_in_details(rule_judge):
    _, out = run(rule_judge, [Faithfulness()], samples(1))
    assert out[(0, "faithfulness")].details["p_supported"] == [0.9, 0.2]
    assert isinstance(ClassifyResult(("0", "1"), (0.1, 0.9)).label, str)


def _dropping_lanes(monkeypatch, drop):
    """Lanes that lose the jobs `drop(job)` picks, as a bookkeeping bug would: never sent, never answered."""
    from ascend_eval.engine import lanes

    real_put = lanes.Lane.put

    def put(self, jobs):
        real_put(self, [(g, c, job) for g, c, job in jobs if not drop(job)])

    monkeypatch.setattr(lanes.Lane, "put", put)


def test_a_lost_request_is_sent_again_instead_of_waiting_for_ever(rule_judge, monkeypatch, caplog):
    lost = []

    def drop_first_verdict(job):
        if not lost and isinstance(job.request, ClassifyRequest):
            lost.append(job.slot)
            return True
        return False

    _dropping_lanes(monkeypatch, drop_first_verdict)
    _, out = run(rule_judge, [Faithfulness()], samples(3), progress_interval=0.05)
    assert lost  # one verdict was lost once, then sent again
    assert [out[(i, "faithfulness")].score for i in range(3)] == [0.5, 0.5, 0.5]
    expected = "nothing in flight while plans waited: 0 ended with an engine_error, 1 open requests sent"
    assert expected in caplog.text


def test_a_request_lost_every_time_ends_its_score_not_the_run(rule_judge, monkeypatch, caplog):
    def drop_sample_0(job):
        return isinstance(job.request, ClassifyRequest) and "Fact 0" in str(job.request.messages)

    _dropping_lanes(monkeypatch, drop_sample_0)
    _, out = run(rule_judge, [Faithfulness(), StatementCount()], samples(2), progress_interval=0.05)
    assert isinstance(out[(0, "faithfulness")], PlanError)
    assert out[(0, "faithfulness")].reason.startswith("engine_error: the engine lost a request")
    assert out[(1, "faithfulness")].score == 0.5
    assert out[(0, "statement_count")].score == 2.0
    assert caplog.text.count("nothing in flight while plans waited") == 4  # three recoveries, then the end
