"""Everything a run's results are, and how they are kept: the result types (`EvaluationResult`, and
`StoredResult` read back from a folder on demand), the sinks that take scored samples in dataset order,
the results folder's files (`samples.jsonl`, `results.json`, `scores.csv`, `summary.json`, and the
`report.html` page), aggregates kept online, and their bootstrap intervals.

Nothing here imports the executors, the report on two runs (`ascend_eval.report`) or the entry points;
they import this (tests/test_import_graph.py checks there are no package cycles).
"""

from ascend_eval.results.result import (
    OUTPUT_FILES,
    EvaluationResult,
    StoredResult,
    aggregate,
    check_output_dir,
)

__all__ = ["OUTPUT_FILES", "EvaluationResult", "StoredResult", "aggregate", "check_output_dir"]
