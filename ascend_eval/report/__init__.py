"""The comparison of two saved runs: per-metric changes in the mean with paired bootstrap intervals, the
samples that moved most with what their details say, as Markdown or a self-contained HTML page
(`compare.compare_runs`, `ascend-eval compare`).

One run's own page, `report.html`, is part of its results folder and written with it
(`ascend_eval.results.page`).
"""
