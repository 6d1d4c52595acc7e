"""Metric jobs in NVIDIA NeMo Evaluator's shape, run locally: a spec, secrets by name, a job directory
with status, progress, log, cache and results, and resume after an interruption.

>>> from ascend_eval.jobs import load_spec
>>> spec = load_spec({
...     "metric": "system/rag-faithfulness",
...     "dataset": "bilingual-example",
...     "metric_params": {"judge_llm": {"model": {"url": "local:default"}}},
... })
>>> spec.metric_names(), spec.metric_params.top_k
(['system/rag-faithfulness'], 10)
"""

from ascend_eval.jobs.runner import Job, Jobs
from ascend_eval.jobs.secrets import SecretStore
from ascend_eval.jobs.spec import JobSpec, load_spec

__all__ = ["Job", "JobSpec", "Jobs", "SecretStore", "load_spec"]
