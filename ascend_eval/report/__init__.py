"""Reports on saved runs: one run's HTML page (inline CSS and SVG, no script, no external reference) that
`EvaluationResult.save` writes beside results.json, bootstrap intervals, and the comparison of two runs."""

from ascend_eval.report.run import REPORT_FILE, RunResult, render_run_report, write_run_report

__all__ = ["REPORT_FILE", "RunResult", "render_run_report", "write_run_report"]
