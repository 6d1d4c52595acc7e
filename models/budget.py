"""One device memory budget for a run, split between the local models that share an accelerator.

A vLLM engine asks for a share of the device's whole memory when it starts (`gpu_memory_utilization`) and
refuses to start when less than that is free ("Free memory on device ... is less than desired GPU memory
utilization"; vLLM's and vllm-ascend's workers check it). Two engines that each ask for vLLM's default 0.9,
or one engine beside a torch model, can never both start. So a run has one budget, the share of each
device that all its local models together may take (`memory_budget`, default `DEFAULT_MEMORY_BUDGET`), and
`split_memory` divides it:

- each torch model on the device first sets aside `TORCH_RESERVE` of it for its role (weights, activations,
  the judge's prefix cache), taken from the budget before any engine's share;
- an engine whose spec sets `gpu_memory_utilization` keeps it;
- the other engines on the device share what is left in proportion to `ENGINE_WEIGHT` (a judge's KV cache
  is what makes it fast; an embedder's or a cross-encoder's batch needs little).

An engine over several devices (`tensor_parallel_size`) gets the smallest share it is given on any of
them. CPU models and endpoints take nothing from the budget. Only the device's index is compared: "auto",
"npu" and "npu:0" are the same device, since one machine carries one kind of accelerator.

>>> from ascend_eval.models.spec import ModelSpec
>>> specs = {
...     "judge": ModelSpec(model="/m/judge", role="judge", backend="vllm", device="npu:0"),
...     "embedder": ModelSpec(model="/m/e5", role="embedder", backend="vllm", device="npu:0"),
...     "reranker": ModelSpec(model="/m/ce", role="reranker", device="npu:0"),
... }
>>> split = split_memory(specs, 0.9)
>>> split["judge"].gpu_memory_utilization, split["embedder"].gpu_memory_utilization
(0.6375, 0.2125)
"""

from __future__ import annotations

import math
import os
from collections import defaultdict
from collections.abc import Mapping

from ascend_eval.models.base import Role
from ascend_eval.models.device import DEVICE_ENV
from ascend_eval.models.errors import ConfigError
from ascend_eval.models.spec import ModelSpec

__all__ = ["DEFAULT_MEMORY_BUDGET", "ENGINE_WEIGHT", "TORCH_RESERVE", "check_budget", "split_memory"]

DEFAULT_MEMORY_BUDGET = 0.9
"""Share of each accelerator's memory a run's local models may take together (vLLM's own default for one
engine); the rest stays for the runtime, the graph compiler and other processes."""
ENGINE_WEIGHT: dict[Role, int] = {"judge": 3, "embedder": 1, "reranker": 1}
"""How the engines on a device divide what the budget leaves them."""
TORCH_RESERVE: dict[Role, float] = {"judge": 0.2, "embedder": 0.05, "reranker": 0.05}
"""Share of the device set aside for a torch model of each role before the engines divide the rest: a
judge of a few billion parameters in bfloat16 with `TorchJudgeConfig.kv_cache_bytes` of prefix cache on a
64 GB Ascend 910B; an embedder or cross-encoder of a few hundred million. A larger torch model needs a
smaller budget for the engines: lower `memory_budget` or set the engines' `gpu_memory_utilization`."""


def check_budget(budget: float, what: str = "memory_budget") -> float:
    """`budget` if it is a share in (0, 1].

    Raises:
        ConfigError: it is not.
    """
    if isinstance(budget, bool) or not isinstance(budget, int | float) or not 0 < budget <= 1:
        raise ConfigError(
            f"{what}={budget!r}: the share of each accelerator's memory the run's models may take, in (0, 1] "
            f"(default {DEFAULT_MEMORY_BUDGET})."
        )
    return float(budget)


def _slots(spec: ModelSpec, device: str | None) -> range | None:
    """The accelerator indices a local model occupies; None on the CPU and for an endpoint."""
    if spec.is_endpoint:
        return None
    chosen = spec.device or device or os.environ.get(DEVICE_ENV) or "auto"
    kind, _, index = chosen.strip().lower().partition(":")
    if kind == "cpu":
        return None
    first = int(index) if index.isdigit() else 0
    size = (spec.tensor_parallel_size or 1) if spec.local_backend == "vllm" else 1
    return range(first, first + size)


def split_memory(
    specs: Mapping[Role, ModelSpec], budget: float = DEFAULT_MEMORY_BUDGET, *, device: str | None = None
) -> dict[Role, ModelSpec]:
    """The specs with every vLLM engine's `gpu_memory_utilization` set to its part of `budget` (those that
    set it keep theirs); see the module's description.

    Args:
        specs: the run's models by role.
        budget: share of each accelerator the models may take together.
        device: the run's device for specs that name none (then `ASCEND_EVAL_DEVICE`, then "auto").

    Raises:
        ConfigError: the budget is not a share, or on some device the torch reserves and the engines' own
            `gpu_memory_utilization` leave nothing for the other engines, or exceed the budget.
    """
    budget = check_budget(budget)
    slots = {role: _slots(spec, device) for role, spec in specs.items()}
    reserved: dict[int, float] = defaultdict(float)  # torch reserves and explicit engine shares
    weights: dict[int, int] = defaultdict(int)  # weights of the engines still to be given a share
    holders: dict[int, list[str]] = defaultdict(list)
    for role, spec in specs.items():
        for slot in slots[role] or ():
            if spec.local_backend == "torch":
                reserved[slot] += TORCH_RESERVE[role]
                holders[slot].append(f"the torch {role} ({TORCH_RESERVE[role]})")
            elif spec.gpu_memory_utilization is not None:
                reserved[slot] += spec.gpu_memory_utilization
                holders[slot].append(f"the {role}'s gpu_memory_utilization={spec.gpu_memory_utilization}")
            else:
                weights[slot] += ENGINE_WEIGHT[role]
    for slot, taken in reserved.items():
        left = round(budget - taken, 6)
        if left < 0 or (left == 0 and weights[slot]):
            raise ConfigError(
                f"Device {slot}: {' + '.join(holders[slot])} take {taken:g} of memory_budget={budget:g}, "
                + ("leaving nothing for the other vLLM engines" if weights[slot] else "more than the budget")
                + ". Raise memory_budget (at most 1), lower the engines' gpu_memory_utilization, or run a "
                "model on another device or the CPU."
            )
    out = dict(specs)
    for role, spec in specs.items():
        if spec.local_backend != "vllm" or spec.gpu_memory_utilization is not None or not slots[role]:
            continue
        share = min((budget - reserved[s]) * ENGINE_WEIGHT[role] / weights[s] for s in slots[role])
        # Rounded down, so that the shares never add up to more than the budget.
        out[role] = spec.replace(gpu_memory_utilization=math.floor(share * 10_000) / 10_000)
    return out
