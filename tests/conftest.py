"""Fixtures shared by the whole suite: offline settings and a rule-based replay judge."""

from __future__ import annotations

import json
import os
import re

import pytest

from ascend_eval.models.base import ClassifyRequest, GenerateRequest
from ascend_eval.models.judge.replay import ReplayJudge
from ascend_eval.prompts.layout import read_input

# Tiny judge checkpoints (built in the session from a config, never downloaded), shared by every folder.
pytest_plugins = ["tests.tiny_models"]

# No model hub exists here or in CI: any attempt to download must fail fast instead of hanging.
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
# Nor anything to report to: Ray's usage statistics off, whose Ray Data collector otherwise keeps asking a
# Prometheus on localhost:9090 from background threads after the Ray tests have ended.
os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
os.environ.setdefault("RAY_DATA_USAGE_DISABLED", "1")


def sample_input(request: GenerateRequest | ClassifyRequest) -> dict:
    """What a request asks about, read back out of the rendered prompt (`layout.read_input`: its input,
    with pointers into the sample block replaced by the sample's texts).

    For the rule judge of end-to-end tests (whole datasets, requests that arrive over HTTP as text). Metric
    tests answer from recorded outputs instead (`tests/recorded_judge.py`), looked up by request."""
    return read_input(request.messages[-1].content)


def split_sentences(text: str) -> list[str]:
    return [s.strip() for s in re.split(r"(?<=[.!?。！？])\s*", text) if s.strip()]


def statements_rule(request: GenerateRequest) -> str:
    """Statements = the answer's sentences: an exact, known decomposition."""
    return json.dumps({"statements": split_sentences(sample_input(request)["answer"])}, ensure_ascii=False)


def verdict_tokens(prompt: str) -> tuple[str, str]:
    """The tokens a rule server answers a yes/no request with: a user's criterion asks for "Yes" / "No"
    (`prompts/criteria.py`), the built-in verdicts for "1" / "0"."""
    criterion = "Answer Yes or No" in prompt or "回答 Yes 或 No" in prompt
    return ("Yes", "No") if criterion else ("1", "0")


def support_rule(request: ClassifyRequest) -> list[float]:
    """Supported (p=0.9) when the statement, without its final punctuation, occurs in the context. A
    user's criterion (an input without a statement) holds (p=0.8) when a text it reads has a digit, else
    0.3."""
    data = sample_input(request)
    if "statement" not in data:
        p = 0.8 if any(c.isdigit() for text in data.values() if isinstance(text, str) for c in text) else 0.3
        return [p if label == "Yes" else 1 - p for label in request.labels]
    claim = data["statement"].rstrip(".。!！?？")
    p = 0.9 if claim in data["context"] else 0.2
    return [1 - p, p] if request.labels == ("0", "1") else [p, 1 - p]


# What `support_rule` scores under the default calibration ("anchored"): its yes-anchors get 0.9 and its
# no-anchors 0.2, so the threshold is sigmoid((logit .9 + logit .2) / 2) = 0.6 and the scale puts the
# anchors at 0.9 and 0.1 (prompts/calibration.py): a verdict of 0.9 reads 0.9, one of 0.2 reads 0.1.
# Scored as expected values, a statement found in the context counts 0.9 and one not found 0.1.
SUPPORT_RULE_YES = 0.9
SUPPORT_RULE_NO = 0.1
CALIBRATION_REQUESTS = 6
"""Requests one yes/no prompt's calibration sends per language and run (three anchor pairs)."""


@pytest.fixture
def rule_judge() -> ReplayJudge:
    return ReplayJudge(generate_rule=statements_rule, classify_rule=support_rule, model_id="rules-v1")


@pytest.fixture(autouse=True, scope="session")
def _float32_on_every_cpu():
    """Local models on the CPU run in float32 in tests, whatever the CPU: on one with AMX or AVX512-BF16,
    `dtype="auto"` picks bfloat16 (`Device.precision`), whose rounding would make "batched equals single"
    and "shared prefix equals unshared" comparisons inexact. Session-wide, so that module- and
    session-scoped model fixtures are built under it too. Flags passed explicitly are still parsed; a test
    of the policy on this very machine is marked `real_cpu_precision`."""
    from ascend_eval.models.platforms import cpu

    real = cpu.cpu_supports_bf16
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(cpu, "cpu_supports_bf16", lambda cpuinfo=None: cpuinfo is not None and real(cpuinfo))
        patch.setattr(cpu, "real_cpu_supports_bf16", real, raising=False)
        yield


@pytest.fixture(autouse=True)
def _real_cpu_precision(request, monkeypatch):
    """`real_cpu_precision` tests see this machine's own CPU flags (built inside the test)."""
    if request.node.get_closest_marker("real_cpu_precision") is not None:
        from ascend_eval.models.platforms import cpu

        monkeypatch.setattr(cpu, "cpu_supports_bf16", cpu.real_cpu_supports_bf16)


@pytest.fixture(autouse=True)
def _isolated_home(tmp_path_factory, monkeypatch):
    """Keep converted models in one session folder and never write to the user's cache, except where a
    test asks for the shared session cache of real models (`ASCEND_EVAL_HOME` set by that fixture)."""
    home = tmp_path_factory.getbasetemp() / "ascend-eval-home"
    home.mkdir(exist_ok=True)
    monkeypatch.setenv("ASCEND_EVAL_HOME", str(home))


class NgramEmbedder:
    """A real (if simple) embedder: hashed character trigrams, L2-normalised. Deterministic and instant,
    for tests about the pipeline rather than about embedding quality."""

    model_id = "ngram-64"

    def __init__(self, dim: int = 64):
        self.dim = dim
        self.calls: list[tuple[str, int]] = []

    def embed(self, texts, *, kind="document"):
        import zlib

        import numpy as np

        self.calls.append((kind, len(texts)))
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        for i, text in enumerate(texts):
            padded = f"  {text}  "
            for j in range(len(padded) - 2):
                out[i, zlib.crc32(padded[j : j + 3].encode()) % self.dim] += 1.0
        norms = np.linalg.norm(out, axis=1, keepdims=True)
        return out / np.where(norms == 0, 1, norms)


@pytest.fixture
def ngram_embedder() -> NgramEmbedder:
    return NgramEmbedder()
