"""open_samples + check_samples against load_dataset + validate: for every source format the same samples
(twice over), for every bad input the same first error with the same message, and, over a 50,000-row
JSONL file, memory that does not grow with the number of samples."""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import datasets
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ascend_eval.data import Column, Dataset, Sample, load_dataset, validate
from ascend_eval.data.stream import KINDS, SampleStream, check_samples, open_samples
from ascend_eval.models.errors import DataError
from tests.data.sources import ROWS, SOURCES, columnar, json_file, jsonl_file, write_csv

FAITHFULNESS = {"faithfulness": [Column.USER_INPUT, Column.RESPONSE, Column.RETRIEVED_CONTEXTS]}

# Ids, metadata (nested, numeric, missing) and absent cells, on top of sources.py's exact-text rows.
RICH: list[dict[str, Any]] = [
    {"id": "q-1", "question": "法国的首都是哪里？", "contexts": ["巴黎。"], "score": 0.5, "tags": ["a"]},
    {"question": "  What is RAG? ", "answer": " RAG ", "score": 1.0, "extra": {"k": [1, 2]}},
    {"id": "q-3", "question": "q3", "contexts": [], "ground_truth": "参考", "note": "附注"},
]


def _jsonl(tmp: Path, rows: list[dict[str, Any]], name: str = "rich.jsonl") -> Path:
    path = tmp / name
    path.write_text("".join(json.dumps(row, ensure_ascii=False) + "\n" for row in rows), encoding="utf-8")
    return path


def _rich_csv(tmp: Path) -> Path:
    header = ["id", "question", "contexts", "answer", "ground_truth", "note"]
    contexts = [json.dumps(r["contexts"]) if "contexts" in r else "" for r in RICH]
    lines = [
        [
            r.get("id", ""),
            r["question"],
            cell,
            r.get("answer", ""),
            r.get("ground_truth", ""),
            r.get("note", ""),
        ]
        for r, cell in zip(RICH, contexts, strict=True)
    ]
    return write_csv(tmp / "rich.csv", header, lines)


def _rich_parquet(tmp: Path) -> Path:
    path = tmp / "rich.parquet"
    frame = pd.DataFrame([{k: v for k, v in r.items() if k != "extra"} for r in RICH], index=[7, 8, 9])
    frame.to_parquet(path)
    return path


def _iterable_from_generator(tmp: Path) -> Any:
    return datasets.IterableDataset.from_generator(lambda: iter([dict(r) for r in ROWS]))


STREAM_SOURCES: dict[str, Callable[[Path], Any]] = {
    **SOURCES,
    "rich jsonl": lambda tmp: _jsonl(tmp, RICH),
    "rich json": lambda tmp: json_file(tmp, RICH),
    "rich csv": _rich_csv,
    "rich parquet with an index": _rich_parquet,
    "rich rows": lambda tmp: [dict(r) for r in RICH],
    "rich pandas": lambda tmp: pd.DataFrame(RICH),
    "rich datasets": lambda tmp: datasets.Dataset.from_list(
        [{k: v for k, v in r.items() if k != "extra"} for r in RICH]
    ),
    "iterable datasets": lambda tmp: datasets.Dataset.from_list(ROWS).to_iterable_dataset(),
    "iterable datasets without features": _iterable_from_generator,
    "a generator of rows": lambda tmp: (dict(r) for r in RICH),
    "samples": lambda tmp: [Sample(id="a", user_input="q", metadata={"k": 1}), Sample(response="r")],
    "a Dataset": lambda tmp: load_dataset(RICH),
    "jsonl with a BOM, CRLF and blank lines": lambda tmp: _bom_crlf(tmp),
    "parquet of 3,000 rows in row groups of 700": lambda tmp: _long_parquet(tmp),
}

EXPECTED_KIND = {"jsonl": "jsonl", "csv": "csv", "parquet": "parquet", "json": "json", "pandas": "pandas"}


def _bom_crlf(tmp: Path) -> Path:
    path = tmp / "crlf.jsonl"
    text = "\r\n".join(json.dumps(r, ensure_ascii=False) for r in RICH)
    path.write_bytes(b"\xef\xbb\xbf" + f"\r\n{text}\r\n\r\n".encode())
    return path


def _long_parquet(tmp: Path) -> Path:
    path = tmp / "long.parquet"
    rows = [{"id": f"r{i}", "question": f"q{i}", "contexts": [f"c{i}"] * (i % 3)} for i in range(3000)]
    pq.write_table(pa.Table.from_pylist(rows), path, row_group_size=700)
    return path


def _kind(name: str, source: Any) -> str:
    if isinstance(source, Dataset):
        return "dataset"
    if isinstance(source, (str, os.PathLike)):
        return Path(source).suffix.lower().lstrip(".")
    if isinstance(source, pd.DataFrame):
        return "pandas"
    if type(source).__module__.startswith("datasets"):
        return "hf"
    return "rows"


@pytest.mark.parametrize("name", list(STREAM_SOURCES))
def test_every_source_streams_the_samples_load_dataset_gives(name: str, tmp_path: Path) -> None:
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    loaded = load_dataset(STREAM_SOURCES[name](tmp_path / "a"))
    source = STREAM_SOURCES[name](tmp_path / "b")
    stream = open_samples(source)
    assert isinstance(stream, SampleStream)
    assert stream.kind == _kind(name, source) and stream.kind in KINDS
    assert stream.origin is source
    assert stream.columns == loaded.columns
    assert dict(stream.roles) == dict(loaded.column_roles)
    assert stream.source == loaded.source.replace(str(tmp_path / "a"), str(tmp_path / "b"))
    first, second = list(stream), list(stream)
    assert first == second == list(loaded)  # ids, fields and metadata (Sample equality compares all)
    assert [s.metadata for s in first] == [s.metadata for s in loaded]
    assert check_samples(stream, {}) == len(stream) == len(loaded)
    assert list(stream) == list(loaded)  # and again after the check
    assert [list(row) for row in stream.rows()] == [list(row) for row in stream.rows()]


def test_rows_are_the_raw_rows(tmp_path: Path) -> None:
    assert list(open_samples(_jsonl(tmp_path, RICH)).rows()) == RICH
    assert list(open_samples(_rich_csv(tmp_path)).rows())[1] == {
        "id": None,
        "question": "  What is RAG? ",
        "contexts": None,
        "answer": " RAG ",
        "ground_truth": None,
        "note": None,
    }
    ds = load_dataset(RICH)
    assert list(open_samples(ds).rows()) == [s.to_row() for s in ds]


def test_column_map_is_applied(tmp_path: Path) -> None:
    rows = [{"query": "q", "docs": ["c"], "question": "kept as metadata"}]
    column_map = {"user_input": "query", "retrieved_contexts": "docs"}
    for source in (rows, _jsonl(tmp_path, rows), pd.DataFrame(rows)):
        stream = open_samples(source, column_map=column_map)
        assert list(stream) == list(load_dataset(source, column_map=column_map))
        assert stream.roles["question"] == "metadata"


def test_length_is_known_where_the_source_says_it_and_after_the_check(tmp_path: Path) -> None:
    assert len(open_samples(_jsonl(tmp_path, RICH))) == 3  # the pass that finds the columns counts them
    assert len(open_samples(_rich_parquet(tmp_path))) == 3  # the footer says it
    stream = open_samples(_rich_csv(tmp_path))
    with pytest.raises(TypeError, match="known once check_samples"):
        len(stream)
    assert list(stream) == list(load_dataset(_rich_csv(tmp_path)))  # list() does not need the length
    assert check_samples(stream, {}) == len(stream) == 3


def test_a_csv_stream_leaves_the_field_limit_as_it_was(tmp_path: Path) -> None:
    import csv

    before = csv.field_size_limit()
    path = write_csv(
        tmp_path / "big.csv", ["question", "contexts"], [["q", json.dumps(["长" * 200_000])]] * 3
    )
    rows = open_samples(path).rows()
    next(rows)
    assert csv.field_size_limit() == before  # a paused stream has the process's limit back
    assert len(list(rows)) == 2


# --------------------------------------------------------------------------------------------------
# Bad inputs: the first error, and its message, are load_dataset + validate's.

Case = Callable[[Path], tuple[Any, dict[str, Any], dict[str, str] | None]]


def _csv_text(tmp: Path, text: str, name: str = "d.csv") -> Path:
    path = tmp / name
    path.write_text(text, encoding="utf-8")
    return path


def _bytes(tmp: Path, data: bytes, name: str) -> Path:
    path = tmp / name
    path.write_bytes(data)
    return path


def _twenty_alternating(tmp: Path) -> Any:
    return [{"question": "q"} if i % 2 else {"question": "q", "answer": "a"} for i in range(20)]


def _twelve_with_gaps(tmp: Path) -> Any:
    rows = [{"question": "q", "answer": "a", "contexts": ["c"]} for _ in range(12)]
    for index in (0, 3, 7):
        del rows[index]["contexts"]
    rows[9]["contexts"] = None
    rows[10]["answer"] = None
    return _jsonl(tmp, rows)


def _jsonl_bad_cell_on_line(tmp: Path) -> Path:
    lines = [json.dumps({"question": f"q{i}", "contexts": ["c"]}) for i in range(6)]
    lines[4] = json.dumps({"question": "q4", "contexts": "a plain string"})
    lines[5] = json.dumps({"question": ["not", "text"]})
    return _bytes(tmp, ("\n".join(lines) + "\n").encode(), "cell.jsonl")


def _surrogate_samples(tmp: Path) -> Any:
    return Dataset([Sample(id="s1", user_input="q", response="a", retrieved_contexts=["ok", "bad\udfff"])])


def _long_contexts(tmp: Path) -> Any:
    return [{"question": "q", "answer": "a", "contexts": ["x" * 70_000, "y" * 80_000]}] * 2


def _parquet_rows(tmp: Path, rows: list[dict[str, Any]], schema: pa.Schema | None = None) -> Path:
    path = tmp / "d.parquet"
    pq.write_table(pa.Table.from_pylist(rows, schema=schema), path)
    return path


BAD: dict[str, Case] = {
    # missing or empty columns (validate)
    "all samples lack a column": lambda t: (
        {"question": [f"q{i}" for i in range(8)], "answer": [f"a{i}" for i in range(8)]},
        FAITHFULNESS,
        None,
    ),
    "one sample lacks a column": lambda t: ([{"question": "q", "answer": "a"}], FAITHFULNESS, None),
    "some samples lack columns (jsonl)": lambda t: (_twelve_with_gaps(t), FAITHFULNESS, None),
    "more than five samples lack it": lambda t: (
        _twenty_alternating(t),
        {"answer_relevancy": ["user_input", "response"]},
        None,
    ),
    "several metrics": lambda t: (
        {"question": ["q0", "q1"], "answer": ["a0", "a1"]},
        {
            "faithfulness": ["user_input", "response", "retrieved_contexts"],
            "answer_correctness": ["user_input", "response", "reference"],
            "context_recall": ["user_input", "retrieved_contexts", "reference"],
        },
        None,
    ),
    "a similar column name (csv)": lambda t: (
        _csv_text(t, 'question,answer,retrieved_context\n问题,回答,"[""上下文""]"\n'),
        FAITHFULNESS,
        None,
    ),
    "an empty context list": lambda t: (
        {"question": ["", "q"], "answer": ["", "a"], "contexts": [["c"], []]},
        FAITHFULNESS,
        None,
    ),
    "ids shown": lambda t: (
        [{"id": "q-17", "question": "q"}, {"id": "q-18", "question": "q", "answer": "a"}],
        {"answer_relevancy": ["question", "answer"]},
        None,
    ),
    "a frozenset of columns (parquet)": lambda t: (
        _parquet_rows(t, [{"question": "q"}] * 7),
        {"noise_sensitivity": frozenset({Column.RETRIEVED_CONTEXTS, Column.REFERENCE, Column.RESPONSE})},
        None,
    ),
    "a column given by column_map but empty": lambda t: (
        [{"query": "q"}, {"query": None}],
        {"m": ["user_input"]},
        {"user_input": "query"},
    ),
    "an unknown required column": lambda t: ([{"question": "q"}], {"m": ["contxt"]}, None),
    "an unknown required column on an empty dataset": lambda t: ([], {"m": ["contxt"]}, None),
    # empty datasets
    "an empty list": lambda t: ([], FAITHFULNESS, None),
    "an empty jsonl file": lambda t: (_bytes(t, b"\n", "empty.jsonl"), FAITHFULNESS, None),
    "a header-only csv": lambda t: (_csv_text(t, "question,answer\n"), FAITHFULNESS, None),
    "an empty parquet file": lambda t: (
        _parquet_rows(t, [], pa.schema([("question", pa.string())])),
        FAITHFULNESS,
        None,
    ),
    "an empty DataFrame": lambda t: (pd.DataFrame({"question": []}), FAITHFULNESS, None),
    "an empty datasets.Dataset": lambda t: (datasets.Dataset.from_dict({"question": []}), {}, None),
    "an empty Dataset": lambda t: (Dataset([]), {}, None),
    # repeated ids (load_dataset)
    "repeated ids": lambda t: ({"id": ["a", "b", "a"], "question": ["x", "y", "z"]}, {}, None),
    "an id that repeats a position": lambda t: ([{"question": "x"}, {"id": "0", "question": "y"}], {}, None),
    "more than five ids repeat (jsonl)": lambda t: (
        _jsonl(t, [{"id": f"i{i % 7}", "question": "q"} for i in range(30)]),
        {},
        None,
    ),
    "one id on every row (csv)": lambda t: (
        write_csv(t / "ids.csv", ["id", "question"], [["same", "q"]] * 40),
        FAITHFULNESS,
        None,
    ),
    "repeated ids before missing columns": lambda t: ([{"id": "a"}, {"id": "a"}], FAITHFULNESS, None),
    # cells (load_dataset)
    "a bad cell on line 5 of a jsonl file": lambda t: (_jsonl_bad_cell_on_line(t), FAITHFULNESS, None),
    "a context list with a number (json)": lambda t: (
        json_file(t, [{"question": "q", "contexts": ["a"]}, {"question": "q", "contexts": ["a", 5]}]),
        {},
        None,
    ),
    "a plain-string context in a csv": lambda t: (
        write_csv(t / "p.csv", ["id", "question", "contexts"], [["a", "q", '["ok"]'], ["b", "q", "plain"]]),
        {},
        None,
    ),
    "a number where text is expected": lambda t: ([{"reference": 42}], {}, None),
    "a list where text is expected (pandas)": lambda t: (
        pd.DataFrame({"question": ["ok", ["a", "b"]]}),
        {},
        None,
    ),
    "legacy and current names disagree": lambda t: ([{"question": "a", "user_input": "b"}], {}, None),
    "a bad cell in a datasets.Dataset": lambda t: (
        datasets.Dataset.from_list([{"question": "q", "contexts": "plain"}]),
        {},
        None,
    ),
    "a bad cell and a repeated id": lambda t: ([{"id": "a"}, {"id": "a"}, {"reference": 1}], {}, None),
    # lone surrogates
    "a lone surrogate in a json file": lambda t: (
        _csv_text(t, '[{"id": "a", "question": "q\\ud800", "answer": "x"}]', "s.json"),
        FAITHFULNESS,
        None,
    ),
    "a lone surrogate in a jsonl file": lambda t: (
        _csv_text(t, '{"question": "ok"}\n{"question": "q", "contexts": ["\\udfff"]}\n', "s.jsonl"),
        FAITHFULNESS,
        None,
    ),
    "a lone surrogate in a metadata key": lambda t: ([{"question": "q", "q\ud800": "v"}], {}, None),
    "a lone surrogate in samples built directly": lambda t: (_surrogate_samples(t), FAITHFULNESS, None),
    # column_map
    "a column_map value that names no column": lambda t: (ROWS, {}, {"user_input": "query"}),
    "a column_map key that is not ours": lambda t: (ROWS, {}, {"query": "question"}),
    "a reversed column_map": lambda t: (
        [{"query": "q", "user_input": "x"}],
        {},
        {"query": "user_input"},
    ),
    "a column_map value that names no column (csv)": lambda t: (
        _rich_csv(t),
        {},
        {"user_input": "query"},
    ),
    "a column_map value that names no column (parquet)": lambda t: (
        _rich_parquet(t),
        {},
        {"reference": "answer_text"},
    ),
    "a column_map with a loaded Dataset": lambda t: (load_dataset(ROWS), {}, {"user_input": "question"}),
    "a column_map that is not a dict": lambda t: (ROWS, {}, ["user_input"]),
    # files and types (load_dataset, before any sample)
    "a missing file": lambda t: (t / "nope.jsonl", {}, None),
    "an unsupported extension": lambda t: (_bytes(t, b"x", "data.xlsx"), {}, None),
    "a directory": lambda t: (t, {}, None),
    "an unknown user's home": lambda t: ("~no-such-user-here/data.json", {}, None),
    "an int": lambda t: (42, {}, None),
    "bytes": lambda t: (b"question", {}, None),
    "a DatasetDict with two splits": lambda t: (
        datasets.DatasetDict({"a": datasets.Dataset.from_list(ROWS), "b": datasets.Dataset.from_list(ROWS)}),
        {},
        None,
    ),
    "a DataFrame that repeats a column": lambda t: (
        pd.DataFrame([["q", "a"]], columns=["question", "question"]),
        {},
        None,
    ),
    "columns of different lengths": lambda t: ({"question": ["a", "b"], "answer": ["x"]}, {}, None),
    "a row that is not a dict": lambda t: ([{"question": "q"}, "not a row"], {}, None),
    "a jsonl line that is not an object": lambda t: (
        _csv_text(t, '{"question": "a"}\n["not", "an object"]\n', "d.jsonl"),
        {},
        None,
    ),
    "a jsonl line that is not JSON": lambda t: (
        _csv_text(t, '{"question": "a"}\n{"q": \n', "d.jsonl"),
        {},
        None,
    ),
    "a deeply nested jsonl line": lambda t: (_csv_text(t, "[" * 100_000, "deep.jsonl"), {}, None),
    "a jsonl file that is not UTF-8": lambda t: (
        _bytes(t, '{"question": "法国"}\n'.encode("gbk"), "gbk.jsonl"),
        {},
        None,
    ),
    "a bad line, then a byte that is not UTF-8 (jsonl)": lambda t: (
        _bytes(
            t, b'{"question": "a"}\n{"q": \n' + b'{"question": "a"}\n' * 50 + b'{"a": "\xff"}\n', "x.jsonl"
        ),
        {},
        None,
    ),
    "a BOM, then a byte that is not UTF-8 (jsonl)": lambda t: (
        _bytes(t, b'\xef\xbb\xbf{"question": "a"}\n{"question": "\xe4\xb8"}\n', "bom.jsonl"),
        {},
        None,
    ),
    "a truncated UTF-8 sequence at the end (jsonl)": lambda t: (
        _bytes(t, b'{"question": "a"}\n{"question": "\xe4\xb8', "t.jsonl"),
        {},
        None,
    ),
    "a line separator inside a jsonl string": lambda t: (
        _bytes(t, '{"question": "a\u2028b"}\n'.encode(), "ls.jsonl"),
        {},
        None,
    ),
    "a json document with extra data": lambda t: (
        _csv_text(t, '{"question": "a"}\n{"question": "b"}\n', "lines.json"),
        {},
        None,
    ),
    "a csv row with extra fields": lambda t: (_csv_text(t, "question,answer\nq,a,unexpected\n"), {}, None),
    "a csv header that repeats a column": lambda t: (_csv_text(t, "question,question\nq,a\n"), {}, None),
    "a csv that is not UTF-8": lambda t: (
        write_csv(t / "gbk.csv", ["question"], [["法国的首都是哪里？"]], encoding="gbk"),
        {},
        None,
    ),
    "a bad csv cell, then a row with extra fields": lambda t: (
        _csv_text(t, 'question,contexts\nq,plain\nq,"[""c""]"\nq,"[]",extra\n'),
        FAITHFULNESS,
        None,
    ),
    "a bad column_map, then a csv row with extra fields": lambda t: (
        _csv_text(t, "question,answer\nq,a\nq,a,extra\n"),
        {},
        {"user_input": "query"},
    ),
    "a corrupt parquet file": lambda t: (_bytes(t, b"PAR1 this is not parquet", "broken.parquet"), {}, None),
    "an empty parquet file with no footer": lambda t: (_bytes(t, b"", "zero.parquet"), {}, None),
}


def _outcome(run: Callable[[], Any], caplog: pytest.LogCaptureFixture) -> tuple[Any, list[str]]:
    caplog.clear()
    try:
        run()
        result: Any = "ok"
    except Exception as exc:  # the comparison is of what each path raises
        result = (type(exc).__name__, str(exc))
    return result, [record.getMessage() for record in caplog.records]


@pytest.mark.parametrize("name", list(BAD))
def test_a_bad_input_fails_as_load_dataset_and_validate_fail(
    name: str, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING, logger="ascend_eval.data")
    source, requirements, column_map = BAD[name](tmp_path)
    expected = _outcome(lambda: validate(load_dataset(source, column_map=column_map), requirements), caplog)
    source, requirements, column_map = BAD[name](tmp_path)  # a fresh one: sources may be read once
    actual = _outcome(
        lambda: check_samples(open_samples(source, column_map=column_map), requirements), caplog
    )
    assert expected[0] != "ok", "the case is not a bad input"
    assert actual == expected


@pytest.mark.parametrize("name", ["a bad cell on line 5 of a jsonl file", "a plain-string context in a csv"])
def test_iterating_reaches_the_bad_cell(name: str, tmp_path: Path) -> None:
    source, _, _ = BAD[name](tmp_path)
    stream = open_samples(source)  # opening reads no cell
    with pytest.raises(DataError, match=r"^Sample \d"):
        list(stream)


def test_a_long_context_warns_once_as_validate_does(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING, logger="ascend_eval.data")
    expected = _outcome(lambda: validate(load_dataset(_long_contexts(tmp_path)), FAITHFULNESS), caplog)
    assert expected[0] == "ok" and len(expected[1]) == 1 and "4 context(s)" in expected[1][0]
    assert (
        _outcome(lambda: check_samples(open_samples(_long_contexts(tmp_path)), FAITHFULNESS), caplog)
        == expected
    )
    quiet = _outcome(
        lambda: check_samples(open_samples(_long_contexts(tmp_path)), FAITHFULNESS, warn_long_contexts=False),
        caplog,
    )
    assert quiet == ("ok", [])


# --------------------------------------------------------------------------------------------------
# Any bytes in a .jsonl or .csv file: the stream reads them as load_dataset does.

_JSONL_FRAGMENTS = [
    b'{"question": "q"}',
    b'{"id": "a", "answer": "x", "contexts": ["c"]}',
    b'{"question": "\\ud800"}',
    b'{"q": ',
    b"[1]",
    b"\n",
    b"\r\n",
    b"\r",
    b"   ",
    "\u2028".encode(),
    "\x85".encode(),
    b"\x0c",
    b"\xef\xbb\xbf",
    b"\xef\xbb",
    b"\xff",
    b"\xe4\xb8",
    "问".encode(),
    "问".encode("gbk"),
]


_CSV_FRAGMENTS = [
    b"question,contexts,id",
    b"q,",
    b'"[""c""]"',
    b"[]",
    b"plain",
    b",",
    b'"',
    b"a",
    b"\n",
    b"\r\n",
    b"\xef\xbb\xbf",
    b"\xff",
    "问".encode(),
]
_FILES = st.one_of(
    st.tuples(st.just(".jsonl"), st.lists(st.sampled_from(_JSONL_FRAGMENTS), max_size=12)),
    st.tuples(st.just(".csv"), st.lists(st.sampled_from(_CSV_FRAGMENTS), max_size=14)),
)


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(file=_FILES)
def test_any_file_bytes_give_load_datasets_outcome(
    file: tuple[str, list[bytes]], tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    extension, parts = file
    path = tmp_path / f"fuzz{extension}"
    path.write_bytes(b"".join(parts))
    expected = _outcome(lambda: validate(load_dataset(path), {"m": ["user_input"]}), caplog)
    actual = _outcome(lambda: check_samples(open_samples(path), {"m": ["user_input"]}), caplog)
    assert actual == expected
    if expected[0] == "ok":
        assert list(open_samples(path)) == list(load_dataset(path))


def test_columnar_source_keeps_its_columns(tmp_path: Path) -> None:
    stream = open_samples(columnar(ROWS))
    assert stream.kind == "rows" and stream.source == "dict of 2 rows"
    assert list(stream) == list(load_dataset(jsonl_file(tmp_path)))


def test_a_parquet_file_without_pyarrow_raises_load_datasets_missing_dependency(tmp_path: Path) -> None:
    path = _rich_parquet(tmp_path)
    # A None entry in sys.modules makes `import pyarrow` fail, as on a machine without it.
    code = (
        "import sys\n"
        "sys.modules['pyarrow'] = None\n"
        "from ascend_eval.data import load_dataset\n"
        "from ascend_eval.data.stream import open_samples\n"
        "for read in (load_dataset, open_samples):\n"
        "    try:\n"
        f"        read({str(path)!r})\n"
        "    except ImportError as exc:\n"
        "        print(type(exc).__name__, exc)\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    first, second = result.stdout.splitlines()
    assert first == second and first.startswith("MissingDependencyError") and "ascend-eval[data]" in first
