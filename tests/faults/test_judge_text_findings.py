"""What a judge (or an embedder, a reranker) sends back is stored and shown only within bounds, issue 48:
a 50 MB reply was kept whole in results.json and samples.jsonl (52 MB each for one sample), and escape
codes in a server's error body reached the terminal and the REST job log as they came."""

from __future__ import annotations

import json
import logging
from pathlib import Path

import pytest

import ascend_eval
from ascend_eval.metrics.base import RAW_HEAD, RAW_TAIL, MetricResult
from ascend_eval.models.judge.replay import ReplayJudge
from ascend_eval.models.spec import ModelSpec
from tests.models.loopback_server import CHAT, LoopbackServer, Reply

HUGE = 5_000_000
"""Characters of the judge's reply: any size over the bound shows it (the issue's was 50 MB)."""
ROW = {
    "user_input": "What is the capital of France?",
    "response": "Paris is the capital of France.",
    "retrieved_contexts": ["Paris is the capital and largest city of France."],
    "reference": "Paris.",
}


def _huge_reply(request: object) -> str:
    return "HEAD" + "x" * HUGE + "TAIL"  # not JSON: every generate request fails to parse


def _details(out: Path, metric: str) -> dict:
    [row] = [json.loads(line) for line in (out / "samples.jsonl").read_text(encoding="utf-8").splitlines()]
    return row[f"{metric}_details"]


@pytest.mark.parametrize(
    ("metric", "where"),
    [("faithfulness", lambda d: [d]), ("nv_accuracy", lambda d: [f for f in d["failures"] if f])],
    ids=["raw", "dual-judge-failures"],
)
def test_a_huge_judge_reply_is_stored_as_a_bounded_excerpt_with_its_length(tmp_path, metric, where):
    judge = ReplayJudge(generate_rule=_huge_reply, model_id="huge-replies")
    out = tmp_path / "run"
    result = ascend_eval.evaluate(
        [ROW], [metric], judge=judge, judge_mode="generate", cache_dir=False, progress=False, out=out
    )
    assert result.nan_reasons(metric)  # NaN with its reason, as before
    for name in ("samples.jsonl", "results.json", "report.html"):
        assert (out / name).stat().st_size < 60_000, name  # was over 5 MB each
    entries = where(_details(out, metric))
    assert entries
    for entry in entries:
        raw = entry["raw"]
        assert entry["raw_chars"] == HUGE + 8
        assert raw.startswith("HEAD" + "x" * (RAW_HEAD - 4)) and raw.endswith("x" * (RAW_TAIL - 4) + "TAIL")
        assert f"{HUGE + 8 - RAW_HEAD - RAW_TAIL:,} characters not kept" in raw
        assert len(raw) < RAW_HEAD + RAW_TAIL + 60
    stored = json.loads((out / "results.json").read_text(encoding="utf-8"))["samples"][0]
    assert stored[f"{metric}_details"] == _details(out, metric)


def test_a_stored_excerpt_is_read_back_unchanged_and_short_replies_stay_whole():
    cut = MetricResult.nan("parse_failure: x", raw="y" * 10_000)
    again = MetricResult(cut.score, cut.reason, json.loads(json.dumps(cut.details)))
    assert again.details == cut.details and cut.details["raw_chars"] == 10_000
    short = MetricResult.nan("parse_failure: x", raw="y" * (RAW_HEAD + RAW_TAIL))
    assert short.details == {"raw": "y" * (RAW_HEAD + RAW_TAIL)}  # whole, and no raw_chars


ESCAPES = "\x1b]0;owned\x07\x1b[2J\x1b[31mFAKE ROW\r\n\x9b1mC1\x00\x7f"


def test_escape_codes_in_a_servers_error_body_reach_no_message_or_log(caplog):
    with LoopbackServer() as server:
        reply = Reply(f"bad request {ESCAPES} end", status=400, content_type="text/plain")
        server.route(CHAT, lambda body: reply)
        with caplog.at_level(logging.WARNING, logger="ascend_eval"):
            judge = ModelSpec(model=server.url + "/v1", served_model_name="judge")
            result = ascend_eval.evaluate([ROW], "faithfulness", judge=judge, cache_dir=False, progress=False)
    [reason] = result.nan_reasons("faithfulness")
    assert "HTTP 400" in reason and "bad request" in reason and "end" in reason
    logged = "\n".join(r.getMessage() for r in caplog.records)
    assert "bad request" in logged
    for text in (reason, logged):
        assert not any(ord(c) < 0x20 or 0x7F <= ord(c) < 0xA0 for c in text.replace("\n", "")), repr(text)
        assert "\\x1b]0;owned" in text  # shown as an escape, so the reader sees what the server sent
