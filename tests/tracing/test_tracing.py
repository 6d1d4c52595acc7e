"""OpenTelemetry spans of a run: the tree, the counts they carry, content only when asked, failures."""

from __future__ import annotations

import json
import math

import pytest

import ascend_eval
from ascend_eval.engine import tracing as t
from ascend_eval.models.base import ClassifyResult, GenerateResult
from ascend_eval.models.errors import ConfigError
from ascend_eval.models.judge.replay import ReplayJudge
from tests.conftest import NgramEmbedder, statements_rule, support_rule
from tests.models.loopback_server import CHAT, LoopbackServer
from tests.test_api_endpoints import judge_route
from tests.tracing.spans import call_spans, kind, parent_of, run_span, stage_spans, tree

pytest.importorskip("opentelemetry.sdk", reason="pip install 'ascend-eval[tracing]'")

METRICS = ["faithfulness", "answer_similarity"]


class CountingJudge(ReplayJudge):
    """The rule judge with token counts (a quarter of the characters), on three threads, four per call."""

    max_concurrency = 3
    max_batch = 4

    def generate(self, requests):
        out = []
        for request, result in zip(requests, super().generate(requests), strict=True):
            prompt = sum(len(m.content) for m in request.messages) // 4
            out.append(GenerateResult(result.text, "stop", prompt, len(result.text) // 4))
        return out

    def classify(self, requests):
        out = []
        for request, result in zip(requests, super().classify(requests), strict=True):
            prompt = sum(len(m.content) for m in request.messages) // 4
            out.append(ClassifyResult(result.labels, result.probs, prompt))
        return out


@pytest.fixture
def judge():
    return CountingJudge(generate_rule=statements_rule, classify_rule=support_rule, model_id="counting-v1")


def run(judge, **kwargs):
    settings = {"judge": judge, "embedder": NgramEmbedder(), "cache_dir": False, "progress": False}
    return ascend_eval.evaluate("bilingual-example", METRICS, **(settings | kwargs))


def test_a_run_is_a_tree_of_run_stage_and_call_spans(exporter, judge):
    result = run(judge, trace=True)
    spans = exporter.get_finished_spans()
    print(tree(spans))
    root = run_span(spans)
    assert root.parent is None
    assert root.attributes[t.OI_SPAN_KIND] == "CHAIN"
    assert root.attributes[t.SAMPLES] == 16 and root.attributes[t.METRICS] == tuple(METRICS)
    assert root.attributes[f"{t.MODEL}.judge"] == "counting-v1"
    assert root.attributes[f"{t.MODEL}.embedder"] == "ngram-64"
    assert root.attributes[t.JUDGE_MODE] == "classify"

    stages = stage_spans(spans)
    assert set(stages) == set(result.stages)
    for label, span in stages.items():
        stats = result.stages[label]
        assert parent_of(span, spans) is root
        assert span.attributes[t.REQUESTS] == stats.requests and span.attributes[t.SENT] == stats.sent
        assert span.attributes[t.UNIQUE] == stats.unique and span.attributes[t.CACHE_HITS] == 0
        assert span.attributes[t.TOKENS_PROMPT] == stats.tokens_in
        assert span.attributes[t.ROLE] == label.split(".")[0]
        assert root.start_time <= span.start_time <= span.end_time <= root.end_time
    assert stages["judge.generate[statements@1]"].attributes[t.PROMPT] == "statements@1"

    calls = call_spans(spans)
    assert {c.attributes[t.OI_SPAN_KIND] for c in calls} == {"LLM", "EMBEDDING"}
    for label, stats in result.stages.items():
        mine = [c for c in calls if c.attributes[t.STAGE] == label]
        # Nested under their own stage even though three lane threads made them, four requests a call.
        assert mine and all(parent_of(c, spans) is stages[label] for c in mine)
        assert sum(c.attributes[t.REQUESTS] for c in mine) == stats.sent
        assert sum(c.attributes[t.LLM_TOKEN_COUNT_PROMPT] for c in mine) == stats.tokens_in
        assert sum(c.attributes[t.GEN_AI_USAGE_OUTPUT_TOKENS] for c in mine) == stats.tokens_out
    judge_calls = kind(spans, "LLM")
    assert len(judge_calls) == len(judge.calls)
    assert max(c.attributes[t.REQUESTS] for c in judge_calls) == 4
    assert sum(result.stages[label].tokens_in for label in result.stages) > 0
    first = judge_calls[0]
    assert first.name == "chat counting-v1"
    assert first.attributes[t.LLM_MODEL_NAME] == first.attributes[t.GEN_AI_REQUEST_MODEL] == "counting-v1"
    assert first.attributes[t.GEN_AI_OPERATION_NAME] == "chat"
    generate = [c for c in judge_calls if c.attributes[t.KIND] == "generate"]
    assert all(c.attributes[f"{t.FINISH_REASON}.stop"] == c.attributes[t.REQUESTS] for c in generate)
    embed = kind(spans, "EMBEDDING")[0]
    assert embed.attributes[t.EMBEDDING_MODEL_NAME] == "ngram-64"
    assert embed.attributes[t.GEN_AI_OPERATION_NAME] == "embeddings"

    assert root.attributes[t.REQUESTS] == sum(s.requests for s in result.stages.values())
    assert root.attributes[t.TOKENS_PROMPT] == sum(s.tokens_in for s in result.stages.values())
    assert root.attributes[t.NAN_COUNT] == 0 and root.attributes[t.SCORES] == 32
    mean = sum(result["answer_similarity"]) / 16
    assert root.attributes[f"{t.SCORE}.answer_similarity"] == pytest.approx(mean)
    # No prompt or output text without trace="content".
    texts = [s.response for s in result.samples]
    assert not any(t.INPUT_VALUE in c.attributes or t.OUTPUT_VALUE in c.attributes for c in calls)
    for span in spans:
        assert not any(isinstance(v, str) and any(q in v for q in texts) for v in span.attributes.values())


def test_a_warm_cache_gives_stage_spans_of_cache_hits_and_no_calls(exporter, judge, tmp_path):
    run(judge, cache_dir=tmp_path, trace=True)
    exporter.clear()
    again = run(judge, cache_dir=tmp_path, trace=True)
    spans = exporter.get_finished_spans()
    assert not call_spans(spans)
    stages = stage_spans(spans)
    assert set(stages) == set(again.stages)
    for label, span in stages.items():
        stats = again.stages[label]
        assert stats.cache_hits == stats.unique > 0 and stats.sent == 0
        assert span.attributes[t.CACHE_HITS] == stats.cache_hits and span.attributes[t.SENT] == 0
    assert run_span(spans).attributes[t.CACHE_HITS] == sum(s.cache_hits for s in again.stages.values())


def test_content_records_prompts_and_outputs(exporter, judge):
    run(judge, trace="content")
    calls = kind(exporter.get_finished_spans(), "LLM")
    generate = next(c for c in calls if c.attributes[t.KIND] == "generate")
    prompts = json.loads(generate.attributes[t.INPUT_VALUE])
    outputs = json.loads(generate.attributes[t.OUTPUT_VALUE])
    assert len(prompts) == len(outputs) == generate.attributes[t.REQUESTS]
    assert all(p.startswith("user: ") and "Input: {" in p for p in prompts)
    assert all(len(p) <= t.CONTENT_CHARS + 1 for p in prompts)
    assert all("statements" in json.loads(o) for o in outputs)
    classify = next(c for c in calls if c.attributes[t.KIND] == "classify")
    assert set(json.loads(json.loads(classify.attributes[t.OUTPUT_VALUE])[0])) == {"0", "1"}


def test_content_is_cut_and_a_single_request_call_gets_chat_messages(exporter):
    long = "x" * (t.CONTENT_CHARS + 500)

    class OneAtATime(CountingJudge):
        max_batch = 1

    judge = OneAtATime(generate_rule=lambda r: long, classify_rule=support_rule, model_id="long-v1")
    ascend_eval.evaluate(
        "bilingual-example", ["faithfulness"], judge=judge, cache_dir=False, progress=False, trace="content"
    )
    call = next(c for c in kind(exporter.get_finished_spans(), "LLM") if c.attributes[t.KIND] == "generate")
    assert call.attributes[f"{t.LLM_INPUT_MESSAGES}.0.message.role"] == "user"
    content = call.attributes[f"{t.LLM_OUTPUT_MESSAGES}.0.message.content"]
    assert content == "x" * t.CONTENT_CHARS + "…"


def test_a_failing_backend_gives_error_spans_and_the_run_finishes_with_nan(exporter):
    def broken(request):
        raise RuntimeError("judge fell over")

    judge = ReplayJudge(generate_rule=statements_rule, classify_rule=broken, model_id="broken-v1")
    result = ascend_eval.evaluate(
        "bilingual-example", ["faithfulness"], judge=judge, cache_dir=False, progress=False, trace=True
    )
    assert all(math.isnan(s) for s in result["faithfulness"])
    assert all(r.startswith("backend_error") for r in result.nan_reasons("faithfulness"))
    spans = exporter.get_finished_spans()
    failed = [c for c in kind(spans, "LLM") if c.attributes[t.KIND] == "classify"]
    assert failed and all(c.status.status_code.name == "ERROR" for c in failed)
    assert "judge fell over" in failed[0].status.description
    assert [e.name for e in failed[0].events] == ["exception"]
    assert failed[0].attributes[t.FAILED] == failed[0].attributes[t.REQUESTS]
    stage = stage_spans(spans)["judge.classify[statement_support@1]"]
    assert stage.status.status_code.name == "ERROR"
    assert stage.attributes[t.FAILED] == result.stages["judge.classify[statement_support@1]"].failed > 0
    ok = [c for c in kind(spans, "LLM") if c.attributes[t.KIND] == "generate"]
    assert ok and all(c.status.is_ok for c in ok)
    root = run_span(spans)
    assert root.status.is_ok and root.attributes[t.NAN_COUNT] == 16


def test_tracing_off_records_nothing_and_the_variable_turns_it_on(exporter, judge, monkeypatch):
    monkeypatch.delenv(t.TRACE_ENV, raising=False)
    run(judge)
    run(judge, trace=False)
    assert exporter.get_finished_spans() == ()
    monkeypatch.setenv(t.TRACE_ENV, "content")
    run(judge)
    spans = exporter.get_finished_spans()
    assert run_span(spans) and all(t.INPUT_VALUE in c.attributes for c in call_spans(spans))
    exporter.clear()
    run(judge, trace=False)  # the argument wins over the variable
    assert exporter.get_finished_spans() == ()


def test_a_bad_setting_is_a_config_error(monkeypatch, judge):
    with pytest.raises(ConfigError, match="trace="):
        run(judge, trace="everything")
    monkeypatch.setenv(t.TRACE_ENV, "2")
    with pytest.raises(ConfigError, match=t.TRACE_ENV):
        run(judge)


def test_a_loopback_server_judge_nests_its_http_calls_under_their_stages(exporter):
    with LoopbackServer() as server:
        server.route(CHAT, judge_route)
        server.enqueue("/v1/models", {"data": [{"id": "loopback-judge"}]})
        result = ascend_eval.evaluate(
            "bilingual-example", ["faithfulness"], judge=server.url + "/v1", cache_dir=False, progress=False,
            trace=True,
        )  # fmt: skip
    spans = exporter.get_finished_spans()
    stages = stage_spans(spans)
    calls = kind(spans, "LLM")
    assert len(calls) == sum(s.sent for s in result.stages.values())  # an HTTP judge: one request a call
    for label, stats in result.stages.items():
        mine = [c for c in calls if c.attributes[t.STAGE] == label]
        assert all(parent_of(c, spans) is stages[label] for c in mine)
        assert sum(c.attributes[t.LLM_TOKEN_COUNT_PROMPT] for c in mine) == stats.tokens_in > 0
        assert sum(c.attributes[t.LLM_TOKEN_COUNT_COMPLETION] for c in mine) == stats.tokens_out
    assert {c.attributes[t.GEN_AI_SYSTEM] for c in calls} == {"openai"}


def test_a_batch_of_two_stages_sits_under_the_first_and_links_the_other(exporter):
    from opentelemetry import trace

    from ascend_eval.engine.codecs import codec_for
    from ascend_eval.engine.stats import StageStats
    from ascend_eval.models.base import ClassifyRequest, Message

    hooks = t.OtelTrace(trace.get_tracer("test"))
    # Equal labels, so one batch group: two prompts' verdicts can go out in one call.
    a, b = (ClassifyRequest((Message("user", "q"),), ("0", "1"), tag=tag) for tag in ("a@1", "b@1"))
    codec = codec_for(a)
    for request in (a, b):
        hooks.stage_started(codec.group(request)[1], request)
    judge = type("Stub", (), {"model_id": "stub-judge"})()
    with hooks.call(judge, codec, [a, b]) as span:
        span.answered([ClassifyResult(("0", "1"), (0.5, 0.5), 7), "ValueError: no"])
    hooks.end_stages({"judge.classify[a@1]": StageStats(requests=1, sent=1)})
    spans = exporter.get_finished_spans()
    stages = stage_spans(spans)
    (call,) = call_spans(spans)
    assert parent_of(call, spans) is stages["judge.classify[a@1]"]
    assert [link.context.span_id for link in call.links] == [stages["judge.classify[b@1]"].context.span_id]
    assert call.attributes[t.STAGES] == ("judge.classify[a@1]", "judge.classify[b@1]")
    assert call.attributes[t.PROMPT] == ("a@1", "b@1")
    assert call.attributes[t.LLM_TOKEN_COUNT_PROMPT] == 7 and call.attributes[t.FAILED] == 1
    assert call.status.status_code.name == "ERROR" and "ValueError: no" in call.status.description
    assert call.attributes[t.LLM_MODEL_NAME] == "stub-judge" and call.attributes[t.BACKEND] == "Stub"
