"""Issue 12's findings, one test each: every bad input ends in a `DataError` or `ConfigError` that names
the sample, the column and the fix, before any model loads (or, for long contexts, in one warning)."""

from __future__ import annotations

import json
import logging
import re
from pathlib import Path

import pytest

import ascend_eval
from ascend_eval.data import Dataset, Sample, load_dataset, validate
from ascend_eval.models.errors import ConfigError, DataError
from ascend_eval.models.judge.replay import ReplayJudge
from tests.conftest import NgramEmbedder

SURROGATE = "q\ud800"


class NoModel:
    """A judge that fails the test if the library ever calls it: errors must come before any model."""

    model_id = "must-not-be-called"

    def generate(self, requests):
        raise AssertionError("a model was called")

    classify = generate


def _evaluate(data, metrics=("faithfulness",), judge=None):
    return ascend_eval.evaluate(
        data,
        list(metrics),
        judge=judge or NoModel(),
        embedder=NgramEmbedder(),
        cache_dir=False,
        progress=False,
    )


# --- lone surrogates --------------------------------------------------------------------------------


def test_a_lone_surrogate_in_a_json_file_is_a_data_error(tmp_path: Path) -> None:
    path = tmp_path / "s.json"
    path.write_text('[{"id": "a", "question": "q\\ud800", "answer": "x"}]', encoding="utf-8")
    with pytest.raises(DataError) as info:
        load_dataset(path)
    message = str(info.value)
    assert "Sample 0 (id 'a'), column 'question'" in message and "lone surrogate ('\\ud800')" in message
    assert "encode('utf-8', 'replace')" in message  # the fix
    message.encode("utf-8")  # the message itself can be printed


@pytest.mark.parametrize(
    ("row", "column"),
    [
        ({"question": SURROGATE}, "'question'"),
        ({"contexts": ["ok", SURROGATE]}, "'contexts'"),
        ({"id": SURROGATE, "question": "q"}, "'id'"),
        ({"question": "q", "note": {"k": [SURROGATE]}}, "'note'"),
        ({"question": "q", SURROGATE: "metadata key"}, "'q\\ud800'"),
    ],
)
def test_a_lone_surrogate_in_python_rows_names_the_column(row, column) -> None:
    with pytest.raises(DataError, match=f"Sample 0.*column {re.escape(column)}.*lone surrogate"):
        load_dataset([row])


def test_a_lone_surrogate_in_samples_built_directly_is_refused_by_validate() -> None:
    samples = [Sample(id="s1", user_input="q", response="a", retrieved_contexts=["ok", "bad\udfff"])]
    with pytest.raises(DataError, match=r"Sample 0 \(id 's1'\), column 'retrieved_contexts\[1\]'"):
        validate(samples, {"faithfulness": ["user_input"]})
    with pytest.raises(DataError, match="lone surrogate"):
        _evaluate(Dataset(samples))
    with pytest.raises(DataError, match="lone surrogate"):
        _evaluate(samples)  # a list of Samples goes through the loaders


def test_a_job_spec_with_a_lone_surrogate_is_refused_before_it_is_stored(tmp_path: Path) -> None:
    from ascend_eval.jobs import Jobs, SecretStore
    from tests.jobs.conftest import inline_spec_for

    spec = inline_spec_for("http://127.0.0.1:9/v1/chat/completions", secret=None)
    spec["dataset"]["rows"][0]["question"][1] = SURROGATE
    jobs = Jobs(tmp_path / "jobs", secrets=SecretStore(tmp_path / "secrets"))
    with pytest.raises(DataError, match=r"'dataset\.rows\[0\]\.question\[1\]' holds a lone surrogate"):
        jobs.create(spec)
    assert not (tmp_path / "jobs").exists() or not any((tmp_path / "jobs").iterdir())


# --- deep nesting and huge numbers -------------------------------------------------------------------


@pytest.mark.parametrize("suffix", [".json", ".jsonl"])
def test_deeply_nested_json_is_a_data_error(tmp_path: Path, suffix: str) -> None:
    path = tmp_path / f"deep{suffix}"
    path.write_text("[" * 100_000, encoding="utf-8")
    with pytest.raises(DataError, match="nests arrays or objects too deeply"):
        load_dataset(path)


def test_deeply_nested_python_values_are_data_errors() -> None:
    deep: list = []
    inner = deep
    for _ in range(100_000):
        inner.append([])
        inner = inner[0]
    with pytest.raises(DataError, match="column 'extra': the value nests"):
        load_dataset([{"question": "q", "extra": deep}])
    with pytest.raises(DataError, match=r"column 'question'.*expected a string, got list \[\[\["):
        load_dataset([{"question": deep}])
    with pytest.raises(DataError, match="Row 0 of the list is a list"):
        load_dataset([deep])


def test_integers_past_pythons_digit_limit_are_data_errors(tmp_path: Path) -> None:
    path = tmp_path / "big.json"
    path.write_text('[{"question": "q", "n": 1' + "0" * 5000 + "}]", encoding="utf-8")
    with pytest.raises(DataError, match="Write such values as strings"):
        load_dataset(path)
    with pytest.raises(DataError, match=r"column 'question'.*expected a string"):
        load_dataset([{"question": 10**5000}])
    with pytest.raises(DataError, match="kept as metadata \\('n'\\)"):
        load_dataset([{"question": "q", "n": 10**5000}])


# --- wrong types in metrics= ------------------------------------------------------------------------


@pytest.mark.parametrize("metrics", [[3], 3, [None], b"faithfulness", [10**5000]])
def test_metrics_that_are_not_metrics_are_config_errors(metrics) -> None:
    with pytest.raises(ConfigError, match="which is not a metric; pass metric names"):
        ascend_eval.evaluate([{"question": "q", "answer": "a"}], metrics, judge=NoModel(), cache_dir=False)


@pytest.mark.filterwarnings("ignore::DeprecationWarning")  # ragas 0.4 moves its metrics to .collections
def test_a_ragas_metric_object_says_which_name_to_pass() -> None:
    ragas_metrics = pytest.importorskip("ragas.metrics")
    for given in (ragas_metrics.Faithfulness(), [ragas_metrics.Faithfulness()]):
        with pytest.raises(ConfigError, match=r"RAGAS metric object.*metrics=\['faithfulness'\]"):
            ascend_eval.evaluate([{"question": "q", "answer": "a"}], given, judge=NoModel(), cache_dir=False)


# --- CSV contexts -----------------------------------------------------------------------------------


def test_a_csv_contexts_cell_that_is_a_plain_string_is_a_data_error(tmp_path: Path) -> None:
    path = tmp_path / "c.csv"
    path.write_text(
        'id,question,contexts\na,q,"[""one"", ""two""]"\nb,q,just one passage\n', encoding="utf-8"
    )
    with pytest.raises(DataError) as info:
        _evaluate(path)
    message = str(info.value)
    assert "Sample 1 (id 'b'), column 'contexts'" in message and "plain string 'just one passage'" in message
    assert "in a CSV cell, write that list as JSON text" in message
    path.write_text('question,contexts\nq,"[""one"", ""two""]"\n', encoding="utf-8")
    assert load_dataset(path)[0].contexts == ("one", "two")  # a JSON list written as text is fine


# --- ids and names with a trailing newline --------------------------------------------------------


@pytest.mark.parametrize("name", ["judge-key\n", "judge-key\r\n", "\njudge-key"])
def test_secret_names_with_a_newline_are_refused(tmp_path: Path, name: str) -> None:
    from ascend_eval.jobs import SecretStore

    store = SecretStore(tmp_path / "secrets")
    for call in (lambda: store.set(name, "v"), lambda: store.resolve(name), lambda: store.delete(name)):
        with pytest.raises(ConfigError, match="is not valid"):
            call()


@pytest.mark.parametrize("job_id", ["job-1\n", "job-1\r\n", "\njob-1"])
def test_job_ids_with_a_newline_are_refused(tmp_path: Path, job_id: str) -> None:
    from ascend_eval.jobs import Jobs
    from tests.jobs.conftest import inline_spec_for

    jobs = Jobs(tmp_path / "jobs")
    with pytest.raises(ConfigError, match="is not valid"):
        jobs.create(inline_spec_for("http://127.0.0.1:9/v1/chat/completions", secret=None), job_id=job_id)
    with pytest.raises(ConfigError, match="is not valid"):
        jobs.get(job_id)


# --- long contexts ----------------------------------------------------------------------------------


def test_a_million_character_context_is_sent_whole_with_one_warning(caplog) -> None:
    from tests.conftest import SUPPORT_RULE_YES, statements_rule, support_rule

    judge = ReplayJudge(generate_rule=statements_rule, classify_rule=support_rule, model_id="rules-v1")
    rows = [
        {"question": "q", "answer": "x is y.", "contexts": ["x is y. " + "z" * 1_000_000, "w" * 70_000]},
        {"question": "q2", "answer": "x is y.", "contexts": ["x is y."]},
    ]
    with caplog.at_level(logging.WARNING, logger="ascend_eval"):
        result = _evaluate(rows, judge=judge)
    warnings = [r.getMessage() for r in caplog.records if "longer than" in r.getMessage()]
    assert warnings == [
        (
            "2 context(s) are longer than 65,535 characters (the longest has 1,000,008); they are sent "
            "whole. A judge with a smaller context window truncates or fails them: cut them first (jobs: "
            "metric_params.truncate_long_documents)."
        )
    ]
    # sent whole: the claim at the start was found (the rule judge's calibrated "yes")
    assert result["faithfulness"] == [pytest.approx(SUPPORT_RULE_YES)] * 2
    assert judge.calls  # the judge really ran


def test_paths_the_system_cannot_use_are_data_errors() -> None:
    for path in ("a\x00b.json", "a" * 5000 + ".json", "~no-such-user-12345/data.json"):
        with pytest.raises(DataError):
            load_dataset(path)


def test_column_map_values_must_be_column_names() -> None:
    with pytest.raises(DataError, match=r"column_map\['user_input'\] is a list"):
        load_dataset([{"q": "x"}], column_map={"user_input": ["q"]})
    with pytest.raises(DataError, match="column_map must be a dict"):
        load_dataset([{"q": "x"}], column_map=[("user_input", "q")])  # type: ignore[arg-type]


def test_objects_whose_to_dict_fails_are_data_errors() -> None:
    class Broken:
        def to_dict(self):
            raise RuntimeError("boom")

    class NotADict:
        def to_dict(self):
            return [1, 2]

    with pytest.raises(DataError, match=r"Broken\.to_dict\(\) raised RuntimeError"):
        load_dataset([Broken()])
    with pytest.raises(DataError, match=r"to_dict\(\) returned a list, not a dict"):
        load_dataset([NotADict()])


def test_messages_are_json_safe() -> None:
    with pytest.raises(DataError) as info:
        load_dataset([{"question": SURROGATE}])
    json.dumps(str(info.value), ensure_ascii=False).encode("utf-8")


def test_a_score_never_leaves_zero_to_one_by_rounding() -> None:
    # Found by the fuzz suite: this text's trigram vector has a cosine of 1.0000000000000002 with itself.
    text = "0\xd4\xed\u012e\u0131\xe7\U0002820b\U0002c8d8\xc2\xf1"
    result = _evaluate([{"question": "q", "answer": text, "ground_truth": text}], ["answer_similarity"])
    assert result["answer_similarity"] == [1.0]
