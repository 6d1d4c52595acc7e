"""Recording stand-ins for the parts that cannot run here: `torch_npu` (no NPU) and, for the Ascend and
CUDA paths, the `vllm` package (the vLLM release those rows pin runs only on their devices).

`StandinNpu` behaves like torch_npu 2.10 where our code depends on it (torch_npu/npu/__init__.py and
utils.py of Ascend/pytorch v2.10.0): the device count comes from ASCEND_RT_VISIBLE_DEVICES and is fixed
when the runtime initialises; `is_bf16_supported()` answers for the SoC (True from the Ascend 910B1 on) and
initialises the runtime; a forked child of an initialised process raises "Cannot re-initialize NPU in
forked subprocess"; `synchronize(device)`, `set_device(index)` and `mem_get_info(device)` are recorded.

`StandinVllm` is a `vllm` package with `LLM`, `SamplingParams`, `PoolingParams`,
`sampling_params.StructuredOutputsParams`, `sampling_params.RepetitionDetectionParams` and
`platforms.current_platform`, which record every keyword our runtimes pass and the environment an engine
starts in, and answer with outputs of the right shape.
"""

from __future__ import annotations

import os
import sys
import types
from dataclasses import dataclass, field
from typing import Any

import pytest
import torch

from ascend_eval.models.device import DEVICE_ENV

BF16_SOCS = ("Ascend910B", "Ascend910_93", "Ascend950")


class StandinNpu:
    """`torch.npu` as torch_npu registers it, for `devices` physical NPUs of SoC `soc`."""

    def __init__(self, devices: int = 8, soc: str = "Ascend910B3") -> None:
        self.physical = devices
        self.soc = soc
        self.calls: list[str] = []
        self._count: int | None = None  # fixed at initialisation, as aclInit reads the variable once
        self.current = 0
        self.forked = False

    def _visible(self) -> int:
        value = os.environ.get("ASCEND_RT_VISIBLE_DEVICES")
        if value is None:
            return self.physical
        return len([v for v in value.split(",") if v.strip() and int(v) < self.physical])

    def _lazy_init(self) -> None:
        if self._count is not None:
            return
        if self.forked:
            raise RuntimeError(
                "Cannot re-initialize NPU in forked subprocess. To use NPU with multiprocessing, you must "
                "use the 'spawn' start method"
            )
        self._count = self._visible()
        self.calls.append("init")

    def is_initialized(self) -> bool:
        return self._count is not None and not self.forked

    def device_count(self) -> int:
        return self._count if self._count is not None else self._visible()

    def is_bf16_supported(self, including_emulation: bool = False) -> bool:
        self._lazy_init()
        return self.soc.startswith(BF16_SOCS)

    def get_device_name(self, device: Any = None) -> str:
        self._lazy_init()
        return self.soc

    def set_device(self, device: Any) -> None:
        self._lazy_init()
        self.current = int(str(device).rpartition(":")[2])
        self.calls.append(f"set_device:{self.current}")

    def synchronize(self, device: Any = None) -> None:
        self._lazy_init()
        self.calls.append(f"synchronize:{device}")

    def empty_cache(self) -> None:
        self.calls.append("empty_cache")

    def mem_get_info(self, device: Any = None) -> tuple[int, int]:
        self._lazy_init()
        self.calls.append(f"mem_get_info:{device}")
        return (30 << 30, 64 << 30)


@pytest.fixture
def standin_npu(monkeypatch: pytest.MonkeyPatch) -> StandinNpu:
    """torch_npu installed as a stand-in for 8 Ascend 910B NPUs, with ASCEND_RT_VISIBLE_DEVICES=4,5."""
    npu = StandinNpu()
    monkeypatch.setitem(sys.modules, "torch_npu", types.ModuleType("torch_npu"))
    monkeypatch.setattr(torch, "npu", npu, raising=False)
    monkeypatch.setenv("ASCEND_RT_VISIBLE_DEVICES", "4,5")
    monkeypatch.delenv(DEVICE_ENV, raising=False)
    monkeypatch.delenv("VLLM_WORKER_MULTIPROC_METHOD", raising=False)
    return npu


# ------------------------------------------------------------------ vllm


@dataclass
class Call:
    name: str
    kwargs: dict[str, Any]
    environ: dict[str, str] = field(default_factory=dict)


class _Recorded:
    calls: list[Call]

    def __init__(self, **kwargs: Any) -> None:
        self.kwargs = kwargs
        self.calls.append(Call(type(self).__name__, kwargs))

    def __getattr__(self, name: str) -> Any:
        if name == "kwargs":
            raise AttributeError(name)
        return self.kwargs.get(name)


def _ns(**kw: Any) -> types.SimpleNamespace:
    return types.SimpleNamespace(**kw)


class StandinVllm:
    """A `vllm` package for `sys.modules`, on platform `device_type`; `calls` records every call."""

    def __init__(self, device_type: str = "cpu", capability: tuple[int, int] | None = None) -> None:
        self.calls: list[Call] = []
        calls = self.calls
        self.environ_keys = (
            "ASCEND_RT_VISIBLE_DEVICES",
            "CUDA_VISIBLE_DEVICES",
            "VLLM_WORKER_MULTIPROC_METHOD",
        )
        keys = self.environ_keys

        class SamplingParams(_Recorded):
            __struct_fields__ = (
                "max_tokens",
                "temperature",
                "logprob_token_ids",
                "logprobs",
                "repetition_detection",
            )

        class PoolingParams(_Recorded):
            pass

        class StructuredOutputsParams(_Recorded):
            pass

        class RepetitionDetectionParams(_Recorded):
            pass

        for recorded in (SamplingParams, PoolingParams, StructuredOutputsParams, RepetitionDetectionParams):
            recorded.calls = calls

        class LLM:
            def __init__(self, **kwargs: Any) -> None:
                calls.append(Call("LLM", kwargs, {k: os.environ[k] for k in keys if k in os.environ}))
                self.kwargs = kwargs
                limit = kwargs.get("max_model_len") or 512
                self.llm_engine = _ns(model_config=_ns(max_model_len=limit))

            def generate(self, prompts: list, sampling_params: Any = None, **kwargs: Any) -> list:
                calls.append(
                    Call("LLM.generate", {"prompts": prompts, "sampling_params": sampling_params, **kwargs})
                )
                out = []
                for params in sampling_params:
                    ids = params.kwargs.get("logprob_token_ids") or []
                    first = {t: _ns(logprob=-1.0 - 0.1 * j) for j, t in enumerate(ids)}
                    completion = _ns(logprobs=[first], text="{}", token_ids=[1], finish_reason="stop")
                    out.append(_ns(outputs=[completion]))
                return out

            def embed(self, prompts: list, **kwargs: Any) -> list:
                calls.append(Call("LLM.embed", {"prompts": prompts, **kwargs}))
                return [_ns(outputs=_ns(embedding=[1.0, 0.0, 0.0, 0.0])) for _ in prompts]

            def score(self, data_1: list, data_2: list, **kwargs: Any) -> list:
                calls.append(Call("LLM.score", {"data_1": data_1, "data_2": data_2, **kwargs}))
                return [_ns(outputs=_ns(score=0.5)) for _ in data_1]

        def get_device_capability(device_id: int = 0) -> Any:
            return None if capability is None else _ns(major=capability[0], minor=capability[1])

        package = types.ModuleType("vllm")
        package.__path__ = []  # a package, so that `import vllm.platforms` finds its submodules
        package.LLM, package.SamplingParams, package.PoolingParams = LLM, SamplingParams, PoolingParams
        sampling = types.ModuleType("vllm.sampling_params")
        sampling.SamplingParams, sampling.StructuredOutputsParams = SamplingParams, StructuredOutputsParams
        sampling.RepetitionDetectionParams = RepetitionDetectionParams
        platforms = types.ModuleType("vllm.platforms")
        platforms.current_platform = _ns(device_type=device_type, get_device_capability=get_device_capability)
        package.sampling_params, package.platforms = sampling, platforms
        self.modules = {"vllm": package, "vllm.sampling_params": sampling, "vllm.platforms": platforms}

    def install(self, monkeypatch: pytest.MonkeyPatch) -> StandinVllm:
        for name, module in self.modules.items():
            monkeypatch.setitem(sys.modules, name, module)
        return self

    def named(self, name: str) -> list[Call]:
        return [c for c in self.calls if c.name == name]
