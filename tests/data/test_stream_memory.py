"""open_samples + check_samples over a 50,000-row JSONL file: memory that does not grow with the number of
samples, while checking and while iterating (tracemalloc's peak), and a repeated id still named."""

from __future__ import annotations

import json
import tracemalloc
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from ascend_eval.data import Column, load_dataset
from ascend_eval.data.stream import check_samples, open_samples
from ascend_eval.models.errors import DataError

REQUIREMENTS = {
    "faithfulness": [Column.USER_INPUT, Column.RESPONSE, Column.RETRIEVED_CONTEXTS],
    "context_recall": [Column.REFERENCE],
}

ROWS_IN_BIG_FILE = 50_000
PEAK_BOUND = 2 * 2**20
"""2 MiB. What check_samples keeps is one 8-byte id hash per sample, in an array sized from the count the
opening pass found (50,000 x 8 bytes = 0.4 MiB), plus one row and one Sample at a time and a few counts:
it peaks near 0.45 MiB, and opening or iterating near 0.03 MiB. Holding the samples instead takes about
2.8 KiB each, some 136 MiB for this file (the control below measures a tenth of it)."""


def _big_jsonl(path: Path, count: int) -> Path:
    with path.open("w", encoding="utf-8") as handle:
        for i in range(count):
            row = {
                "id": f"q-{i}",
                "question": f"问题 {i}？",
                "answer": f"回答 {i}",
                "contexts": [f"上下文 {i} 一", f"passage {i} two " * 5],
                "ground_truth": f"参考 {i}",
                "score": i / 7,
            }
            handle.write(json.dumps(row, ensure_ascii=False) + "\n")
    return path


def _peak(run: Callable[[], Any]) -> tuple[Any, int]:
    tracemalloc.start()
    try:
        result = run()
        return result, tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def test_checking_and_iterating_50000_rows_keeps_memory_flat(tmp_path: Path) -> None:
    path = _big_jsonl(tmp_path / "big.jsonl", ROWS_IN_BIG_FILE)
    stream, opening = _peak(lambda: open_samples(path))
    count, checking = _peak(lambda: check_samples(stream, REQUIREMENTS))
    seen, iterating = _peak(lambda: sum(1 for _ in stream))
    assert count == seen == len(stream) == ROWS_IN_BIG_FILE
    assert opening < PEAK_BOUND, f"opening peaked at {opening / 2**20:.2f} MiB"
    assert checking < PEAK_BOUND, f"check_samples peaked at {checking / 2**20:.2f} MiB"
    assert iterating < PEAK_BOUND, f"iterating peaked at {iterating / 2**20:.2f} MiB"
    # The control: holding a tenth of the samples already takes several times the bound.
    control = _big_jsonl(tmp_path / "tenth.jsonl", ROWS_IN_BIG_FILE // 10)
    _, holding = _peak(lambda: load_dataset(control))
    assert holding > 4 * PEAK_BOUND, f"load_dataset peaked at {holding / 2**20:.2f} MiB"


def test_a_repeated_id_in_a_big_file_is_named(tmp_path: Path) -> None:
    path = _big_jsonl(tmp_path / "big.jsonl", 5_000)
    with path.open("a", encoding="utf-8") as handle:
        handle.write(json.dumps({"id": "q-1234", "question": "again"}) + "\n")
    with pytest.raises(DataError) as info:
        check_samples(open_samples(path), {})
    assert "1 id(s) repeat: 'q-1234' (samples 1234, 5000)" in str(info.value)
    with pytest.raises(DataError) as loaded:
        load_dataset(path)
    assert str(info.value) == str(loaded.value)
