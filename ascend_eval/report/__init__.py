"""The report of one evaluation run: a self-contained HTML page (inline CSS and SVG, no script, no external
reference) that `EvaluationResult.save` writes beside results.json and `ascend-eval report` re-renders."""

from ascend_eval.report.run import REPORT_FILE, RunResult, render_run_report, write_run_report

__all__ = ["REPORT_FILE", "RunResult", "render_run_report", "write_run_report"]
