"""Reports on saved runs: one run's HTML report, bootstrap intervals and the comparison of two runs."""
