"""Property-based fuzzing of every input path: each loader (JSON, JSONL, CSV, Parquet, columnar dicts,
lists of rows, pandas DataFrames, `Sample`s), validation and `ascend_eval.evaluate(...)`, against the
scripted judge of tests/conftest.py (`statements_rule`, `support_rule`) and `NgramEmbedder`.

The inputs include lone surrogates, control characters, deep nesting, huge fields (up to a million
characters), wrong types, empty values, and raw file contents (truncated JSON, `[` x 100,000, bytes that
are not UTF-8, corrupt Parquet). The only outcomes allowed:

* a `DataError` or `ConfigError` (its message printable as UTF-8, raised before any model was called);
* an `EvaluationResult` whose every score is in [0, 1], or NaN with a reason that is not a hidden bug
  (`plan_error: ...` is one: a metric's plan raised).

Anything else is a crash; there must be none. Hypothesis runs derandomized (the same cases every run), and
the last test checks the tally (at least 2,000 cases) and writes it to `<basetemp>/fuzz_counts.json`; the
terminal summary prints it.

    HF_HUB_OFFLINE=1 .venv/bin/python -m pytest -q tests/faults/test_fuzz_inputs.py
"""

from __future__ import annotations

import csv
import io
import json
import math
import tempfile
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import ascend_eval
from ascend_eval.data import Dataset, Sample
from ascend_eval.models.errors import ConfigError, DataError
from ascend_eval.models.judge.replay import ReplayJudge
from ascend_eval.results import EvaluationResult
from tests.conftest import NgramEmbedder, statements_rule, support_rule
from tests.faults.tally import CRASHES, FEATURES, NAN_REASONS, record, write_summary

pd = pytest.importorskip("pandas")
pa = pytest.importorskip("pyarrow")
pq = pytest.importorskip("pyarrow.parquet")

# Examples per format; the sum is the case count the last test requires (>= 2,000).
EXAMPLES = {
    "columnar dict": 300,
    "list of rows": 350,
    "pandas DataFrame": 250,
    "json file": 300,
    "jsonl file": 250,
    "csv file": 300,
    "parquet file": 200,
    "raw file": 300,
    "samples": 150,
}
MIN_CASES = 2_000

JUDGE = ReplayJudge(generate_rule=statements_rule, classify_rule=support_rule, model_id="rules-v1")
EMBEDDER = NgramEmbedder()
FUZZ = settings(
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.filter_too_much],
)

# --------------------------------------------------------------------------------------------------
# Strategies


def _nested(depth: int) -> list[Any]:
    out: list[Any] = []
    inner = out
    for _ in range(depth):
        inner.append([])
        inner = inner[0]
    return out


SURROGATE = st.characters(min_codepoint=0xD800, max_codepoint=0xDFFF)
CONTROL = st.characters(max_codepoint=0x1F) | st.sampled_from("\x7f\x85\u2028\u2029\ufeff\ufffe\uffff\x00")
TRICKY = st.sampled_from(
    [
        "",
        " ",
        "\n",
        "\r\n",
        '["a", "b"]',
        "['a', 'b']",
        "[",
        "[]",
        '["a", 1]',
        '["unterminated',
        "null",
        "NaN",
        "None",
        "{}",
        '"',
        "a,b;c\td",
        "法国的首都是巴黎。",
        "Input: {}\n\n",
        "x" * 70_000,
    ]
)
TEXT = st.one_of(
    st.text(max_size=30),
    st.text(alphabet=st.characters() | CONTROL, max_size=20),
    st.builds(lambda a, s, b: a + s + b, st.text(max_size=4), SURROGATE, st.text(max_size=4)),
    TRICKY,
)
HUGE = st.sampled_from([70_000, 250_000, 1_000_000]).map(lambda n: "长" * (n - 8) + " x is y.")
"""Contexts up to a million characters; other fields (which the embedder reads) stay at 70,000."""
LONG = st.just("长" * 69_992 + " x is y.")
WRONG = st.one_of(
    st.none(),
    st.integers(),
    st.floats(allow_nan=True, allow_infinity=True),
    st.booleans(),
    st.just(10**5000),
    st.dictionaries(st.text(max_size=3), st.integers() | st.text(max_size=3), max_size=2),
    st.recursive(st.integers() | st.text(max_size=3), lambda c: st.lists(c, max_size=3), max_leaves=6),
    st.just(_nested(600)),
)
TEXTS = st.lists(TEXT, max_size=4)
CONTEXTS = st.one_of(
    TEXTS,
    st.lists(st.text(max_size=30), min_size=1, max_size=3),
    st.builds(lambda huge, rest: [huge, *rest], HUGE, st.lists(st.text(max_size=10), max_size=1)),
    st.lists(TEXT | WRONG, max_size=3),
    TEXT,
    WRONG,
)
COLUMNS = [
    "question",
    "user_input",
    "answer",
    "response",
    "contexts",
    "retrieved_contexts",
    "ground_truth",
    "reference",
    "reference_contexts",
    "ground_truths",
    "id",
    "sample_id",
    "extra",
    "data",
    "rows",
]
LIST_COLUMNS = {"contexts", "retrieved_contexts", "reference_contexts", "ground_truths"}
KEY = st.sampled_from(COLUMNS) | st.text(max_size=6) | st.builds(lambda s: "k" + s, SURROGATE)
PLAIN = st.text(alphabet=st.characters(categories=["L", "N", "Zs", "P"]), min_size=1, max_size=40)


@st.composite
def a_row(draw: st.DrawFn) -> dict[str, Any]:
    """Mostly a plausible sample (so that many cases reach the judge), with a few cells broken."""
    kind = draw(st.sampled_from(["valid", "valid", "mutated", "mutated", "random"]))
    if kind == "random":
        keys = draw(st.lists(KEY, max_size=5, unique=True))
        return {k: draw(CONTEXTS if k in LIST_COLUMNS else (TEXT | WRONG)) for k in keys}
    answer = draw(PLAIN)
    row: dict[str, Any] = {
        "question": draw(PLAIN),
        "answer": answer,
        "contexts": draw(st.just([answer]) | st.lists(PLAIN, min_size=1, max_size=3)),
        "ground_truth": draw(PLAIN),
    }
    if kind == "mutated":
        for key in draw(st.lists(st.sampled_from([*row, "id", "extra"]), min_size=1, max_size=2)):
            row[key] = draw(CONTEXTS if key in LIST_COLUMNS else (TEXT | WRONG | LONG))
        if draw(st.booleans()):
            row.pop(draw(st.sampled_from(list(row))), None)
    return row


ROWS = st.lists(a_row(), max_size=4)
METRICS = st.sampled_from(
    [
        ["faithfulness"],
        ["context_recall"],
        ["answer_similarity"],
        ["faithfulness", "answer_similarity"],
        ["system/rag-faithfulness", "context_recall"],
    ]
)
ANY_METRICS = METRICS | st.sampled_from([[3], "faithfulnes", [], [None], ["faithfulness", 2.5]])

# --------------------------------------------------------------------------------------------------
# The property


def _printable(message: str) -> None:
    message.encode("utf-8")  # raises on a raw surrogate: such a message could not even be shown


def _features(value: Any) -> set[str]:
    """What kinds of hostile input `value` holds, for the tally (walked iteratively, depth-limited)."""
    found: set[str] = set()
    stack = [(value, 0)]
    while stack:
        item, depth = stack.pop()
        if depth > 100:
            found.add("deep nesting")
            continue
        if isinstance(item, str):
            if any(0xD800 <= ord(c) <= 0xDFFF for c in item[:50_000]):
                found.add("lone surrogate")
            if any(ord(c) < 0x20 or c in "\x7f\x85\u2028\u2029\ufeff\ufffe\uffff" for c in item[:50_000]):
                found.add("control character")
            if len(item) > 65_535:
                found.add("huge field")
            if not item.strip():
                found.add("empty value")
        elif item is None or item == [] or item == {}:
            found.add("empty value")
        elif isinstance(item, bool | int | float):
            found.add("wrong type")
        elif isinstance(item, dict):
            stack.extend((v, depth + 1) for v in item.values())
            stack.extend((k, depth + 1) for k in item if isinstance(k, str))
        elif isinstance(item, list | tuple):
            stack.extend((v, depth + 1) for v in item)
    return found


def check(
    fmt: str,
    source: Any,
    metrics: Any,
    *,
    describe: Callable[[], str] | None = None,
    shown: Any = None,
) -> None:
    """Evaluate `source`; record the outcome; fail (so Hypothesis shrinks the input) on a crash.

    `shown` is what the input held before it was written to a file, for the tally of hostile inputs.
    """
    record(fmt, "cases")
    for feature in _features(source if shown is None else shown):
        FEATURES[feature] += 1
    calls_before = len(JUDGE.calls) + len(EMBEDDER.calls)
    try:
        result = ascend_eval.evaluate(
            source, metrics, judge=JUDGE, embedder=EMBEDDER, cache_dir=False, progress=False
        )
    except (DataError, ConfigError) as error:
        _printable(str(error))
        problem = None
        if len(JUDGE.calls) + len(EMBEDDER.calls) != calls_before:
            problem = f"{type(error).__name__} after a model was called: {error}"
        elif not str(error).strip():
            problem = f"{type(error).__name__} without a message"
        if problem is None:
            record(fmt, "clear_error")
            return
        _crash(fmt, problem, describe)
    except Exception as error:  # anything else is a crash
        _crash(fmt, "".join(traceback.format_exception(error)[-3:]), describe)
    else:
        _check_result(fmt, result, describe)


def _check_result(fmt: str, result: EvaluationResult, describe: Callable[[], str] | None) -> None:
    assert isinstance(result, EvaluationResult)
    record(fmt, "evaluated")
    for metric, results in result.results.items():
        for i, r in enumerate(results):
            score = r.score
            if isinstance(score, float) and math.isnan(score):
                if not r.reason or r.reason.startswith("plan_error"):
                    _crash(fmt, f"{metric} sample {i}: NaN with reason {r.reason!r}", describe)
                record(fmt, "nan")
                NAN_REASONS[r.reason.split(":")[0]] += 1
            elif isinstance(score, int | float) and 0.0 <= score <= 1.0:
                record(fmt, "scored")
            else:
                _crash(fmt, f"{metric} sample {i}: score {score!r} outside [0, 1]", describe)


def _crash(fmt: str, problem: str, describe: Callable[[], str] | None) -> None:
    record(fmt, "crash")
    shown = describe() if describe is not None else ""
    CRASHES.append(f"{fmt}: {problem.strip()[-400:]!a} | input {shown[:300]!a}")
    pytest.fail(f"{fmt}: crash: {problem}\ninput: {shown[:2000]!a}")


def _preview(value: Any) -> Callable[[], str]:
    def show() -> str:
        try:
            return ascii(value[:2000] if isinstance(value, str | bytes) else value)[:2000]
        except Exception:  # a 4300+-digit integer cannot be shown in decimal
            return f"<{type(value).__name__} that repr() refuses>"

    return show


# --------------------------------------------------------------------------------------------------
# Writers: the same rows in each format (a writer may only make the file, never judge it)


def _columnar(rows: list[dict[str, Any]]) -> dict[str, list[Any]]:
    keys = list(dict.fromkeys(k for row in rows for k in row))
    return {k: [row.get(k) for row in rows] for k in keys}


def _json_text(data: Any) -> str | None:
    try:
        return json.dumps(data)  # ensure_ascii: surrogates become \\ud800 escapes, as other tools write them
    except (TypeError, ValueError, RecursionError):
        return None


def _csv_cell(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, list | dict):
        text = _json_text(value)
        if text is None:
            try:
                text = repr(value)
            except ValueError:  # holds an integer of 4300+ digits
                text = "[" + "1" * 5000 + "]"
        return text
    return str(value) if not isinstance(value, int) or abs(value) < 10**4000 else "1" + "0" * 5000


def _csv_text(rows: list[dict[str, Any]]) -> str:
    keys = list(dict.fromkeys(k for row in rows for k in row))
    out = io.StringIO()
    writer = csv.writer(out)
    writer.writerow(keys)
    for row in rows:
        writer.writerow([_csv_cell(row.get(k)) for k in keys])
    return out.getvalue()


def _utf8(text: str) -> str:
    # A file on disk holds UTF-8: a lone surrogate cannot be written as text (JSON writes an escape).
    return text.encode("utf-8", "replace").decode("utf-8")


def _deep_utf8(value: Any) -> Any:
    if isinstance(value, str):
        return _utf8(value)
    if isinstance(value, list):
        return [_deep_utf8(v) for v in value]
    if isinstance(value, dict):
        return {_utf8(str(k)): _deep_utf8(v) for k, v in value.items()}
    return value


def _arrow_value(value: Any) -> Any:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return None
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return [_utf8(v) for v in value]
    return _utf8(_csv_cell(value))


def _parquet(rows: list[dict[str, Any]], path: Path) -> None:
    columns = _columnar(rows)
    arrays = {}
    for key, values in columns.items():
        converted = [_arrow_value(v) for v in values]
        if any(isinstance(v, list) for v in converted):  # one type per column: lists, or their text
            converted = [v if isinstance(v, list) or v is None else [v] for v in converted]
        arrays[_utf8(key) or "_"] = converted
    pq.write_table(pa.table(arrays) if arrays else pa.table({"q": pa.array([], pa.string())}), path)


# --------------------------------------------------------------------------------------------------
# One test per format


@settings(FUZZ, max_examples=EXAMPLES["columnar dict"])
@given(rows=ROWS, metrics=METRICS)
def test_columnar_dicts(rows: list[dict[str, Any]], metrics: Any) -> None:
    data = _columnar(rows)
    check("columnar dict", data, metrics, describe=_preview(data))


@settings(FUZZ, max_examples=EXAMPLES["list of rows"])
@given(rows=ROWS | st.lists(TEXT | WRONG, max_size=3), metrics=ANY_METRICS)
def test_lists_of_rows(rows: list[Any], metrics: Any) -> None:
    check("list of rows", rows, metrics, describe=_preview(rows))


@settings(FUZZ, max_examples=EXAMPLES["pandas DataFrame"])
@given(rows=ROWS, metrics=METRICS)
def test_pandas_dataframes(rows: list[dict[str, Any]], metrics: Any) -> None:
    try:
        frame = pd.DataFrame(rows, dtype=object) if rows else pd.DataFrame({"question": []})
    except UnicodeEncodeError:  # pandas' Arrow-backed strings cannot hold a lone surrogate at all
        rows = _deep_utf8(rows)
        frame = pd.DataFrame(rows, dtype=object)
    check("pandas DataFrame", frame, metrics, describe=_preview(rows), shown=rows)


def _in_file(suffix: str, content: str | bytes) -> Path:
    folder = Path(tempfile.mkdtemp(prefix="fuzz-"))
    path = folder / f"data{suffix}"
    if isinstance(content, bytes):
        path.write_bytes(content)
    else:
        path.write_text(content, encoding="utf-8")
    return path


@settings(FUZZ, max_examples=EXAMPLES["json file"])
@given(rows=ROWS, wrap=st.sampled_from(["rows", "columnar", "data-wrapped", "rows-wrapped"]), metrics=METRICS)
def test_json_files(rows: list[dict[str, Any]], wrap: str, metrics: Any) -> None:
    shaped: Any = {
        "rows": rows,
        "columnar": _columnar(rows),
        "data-wrapped": {"data": rows},
        "rows-wrapped": {"rows": _columnar(rows)},
    }[wrap]
    text = _json_text(shaped)
    if text is None:  # not JSON-able (a Python int past JSON's reach): the raw-file test covers files
        text = _json_text(rows[:0])
    path = _in_file(".json", text or "[]")
    check("json file", path, metrics, describe=lambda: text or "", shown=rows)


@settings(FUZZ, max_examples=EXAMPLES["jsonl file"])
@given(rows=ROWS, blank_lines=st.booleans(), metrics=METRICS)
def test_jsonl_files(rows: list[dict[str, Any]], blank_lines: bool, metrics: Any) -> None:
    lines = [line for line in (_json_text(row) for row in rows) if line is not None]
    text = ("\n\n" if blank_lines else "\n").join(lines)
    check("jsonl file", _in_file(".jsonl", text), metrics, describe=lambda: text, shown=rows)


@settings(FUZZ, max_examples=EXAMPLES["csv file"])
@given(rows=ROWS, bom=st.booleans(), metrics=METRICS)
def test_csv_files(rows: list[dict[str, Any]], bom: bool, metrics: Any) -> None:
    text = _utf8(_csv_text(rows)) if rows else "question,contexts\n"
    path = _in_file(".csv", ("\ufeff" if bom else "") + text)
    # Text cells lost their lone surrogates on the way to UTF-8; list cells keep them as JSON escapes.
    shown = [{k: v if isinstance(v, list) else _deep_utf8(v) for k, v in row.items()} for row in rows]
    check("csv file", path, metrics, describe=lambda: text, shown=shown)


@settings(FUZZ, max_examples=EXAMPLES["parquet file"])
@given(rows=ROWS, metrics=METRICS)
def test_parquet_files(rows: list[dict[str, Any]], metrics: Any) -> None:
    path = _in_file(".parquet", b"")
    _parquet(rows, path)
    check("parquet file", path, metrics, describe=_preview(rows), shown=_deep_utf8(rows))


RAW_TEXT = st.one_of(
    st.text(max_size=60),
    st.sampled_from(
        [
            "[" * 100_000,
            "{" * 50_000,
            '[{"question": "q", "answer": "a"',
            '{"question": ["a", "b"], "answer": ["x"]}',
            '{"question": "not a list"}',
            '[{"question": "q\\ud800", "contexts": ["\\udfff"]}]',
            '[{"question": 1' + "0" * 5000 + "}]",
            "[1, 2, 3]",
            '"just a string"',
            "question,contexts\nq,plain text\n",
            'question,contexts\nq,"[""a"", ""b"""\n',
            "question,answer\nq\n",
            "q,q\n1,2\n",
            "\x00\x01\x02",
            '{"data": 5}',
            '{"question": "q"}\n[1]\n',
            '[{"question": "q", "answer": "x is y.", "contexts": ["x is y."], "ground_truth": "x"}]',
            '{"question": "q", "answer": "x is y.", "contexts": ["x is y."]}\n',
            'question,answer,contexts,ground_truth\nq,x is y.,"[""x is y.""]",x\n',
        ]
    ),
)


@settings(FUZZ, max_examples=EXAMPLES["raw file"])
@given(
    suffix=st.sampled_from([".json", ".jsonl", ".csv", ".parquet", ".txt", ""]),
    content=RAW_TEXT | st.binary(max_size=64) | st.just(b"\xff\xfe[{\x00") | st.just(b"PAR1garbagePAR1"),
    metrics=METRICS,
)
def test_raw_files(suffix: str, content: str | bytes, metrics: Any) -> None:
    if isinstance(content, str):
        content = _utf8(content)
    shown = content if isinstance(content, str) else None
    check("raw file", _in_file(suffix, content), metrics, describe=lambda: repr(content[:300]), shown=shown)


@settings(FUZZ, max_examples=EXAMPLES["samples"])
@given(
    texts=st.lists(st.tuples(TEXT, st.lists(TEXT, max_size=3), TEXT | st.none()), min_size=1, max_size=3),
    as_dataset=st.booleans(),
    metrics=METRICS,
)
def test_samples_built_directly(
    texts: list[tuple[str, list[str], str | None]], as_dataset: bool, metrics: Any
) -> None:
    samples = [
        Sample(id=str(i), user_input=q, retrieved_contexts=c, response=a, reference=q)
        for i, (q, c, a) in enumerate(texts)
    ]
    source = Dataset(samples, source="fuzz") if as_dataset else samples
    check("samples", source, metrics, describe=_preview(texts), shown=texts)


def test_the_tally_has_no_crash(fuzz_counts_file: Path) -> None:
    """Runs last: at least 2,000 cases in all when every format ran, and 0 crashes."""
    data = write_summary(fuzz_counts_file)
    assert data["crashes"] == 0, data["crash_examples"]
    formats_run = set(data["by_format"])
    if formats_run != set(EXAMPLES):
        pytest.skip(f"only {sorted(formats_run)} ran; the case count is checked when every format runs")
    assert data["cases"] >= MIN_CASES, data
    assert data["clear_errors"] and data["evaluations"] and data["scored_results"], data
