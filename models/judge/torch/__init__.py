"""`TorchJudge`: a judge LLM run with transformers on an Ascend NPU, a CUDA GPU or the CPU.

torch, transformers and xgrammar are imported when a judge is built, not when this package is imported.
"""

from ascend_eval.models.judge.torch.config import TorchJudgeConfig
from ascend_eval.models.judge.torch.judge import TorchJudge

__all__ = ["TorchJudge", "TorchJudgeConfig"]
