"""The fuzz suite's tally (tests/faults/tally.py), shown at the end of every run that collected it, with
or without `-s`; `test_fuzz_inputs.py` also writes it to `<basetemp>/fuzz_counts.json`."""

from __future__ import annotations

from typing import Any

import pytest

from tests.faults.tally import TALLY, summary


@pytest.fixture(scope="session")
def fuzz_counts_file(tmp_path_factory: pytest.TempPathFactory):
    return tmp_path_factory.getbasetemp() / "fuzz_counts.json"


def pytest_terminal_summary(terminalreporter: Any) -> None:
    if not TALLY["cases"]:
        return
    data = summary()
    terminalreporter.section("input fuzzing")
    terminalreporter.write_line(
        f"cases {data['cases']}: clear errors {data['clear_errors']}, evaluations {data['evaluations']} "
        f"(scores {data['scored_results']}, NaN with a reason {data['nan_with_reason_results']}), "
        f"crashes {data['crashes']}"
    )
    terminalreporter.write_line(f"  cases with: {data['cases_with']}")
    terminalreporter.write_line(f"  NaN reasons: {data['nan_reasons']}")
    for fmt, counts in data["by_format"].items():
        terminalreporter.write_line(f"  {fmt}: {dict(sorted(counts.items()))}")
    for line in data["crash_examples"]:
        terminalreporter.write_line(f"  CRASH {line}")
