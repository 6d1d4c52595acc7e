"""Column, Sample and Dataset: names, immutability, hashing and the Sequence behaviour."""

from __future__ import annotations

from collections.abc import Sequence

import pytest
from pydantic import ValidationError

from ascend_eval.data import LEGACY_ALIASES, Column, Dataset, Sample
from ascend_eval.models.errors import DataError


def test_column_values_are_the_ragas_field_names() -> None:
    assert [c.value for c in Column] == [
        "user_input",
        "response",
        "retrieved_contexts",
        "reference",
        "reference_contexts",
    ]
    assert Column.USER_INPUT == "user_input"
    assert str(Column.RETRIEVED_CONTEXTS) == "retrieved_contexts"
    assert f"{Column.REFERENCE}" == "reference"


def test_legacy_aliases_map_the_v01_names() -> None:
    assert dict(LEGACY_ALIASES) == {
        "question": Column.USER_INPUT,
        "answer": Column.RESPONSE,
        "contexts": Column.RETRIEVED_CONTEXTS,
        "ground_truth": Column.REFERENCE,
    }
    with pytest.raises(TypeError):
        LEGACY_ALIASES["query"] = Column.USER_INPUT  # type: ignore[index]
    assert Column.RESPONSE.legacy_name == "answer"
    assert Column.REFERENCE_CONTEXTS.legacy_name is None


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("question", Column.USER_INPUT),
        ("user_input", Column.USER_INPUT),
        ("contexts", Column.RETRIEVED_CONTEXTS),
        (Column.REFERENCE, Column.REFERENCE),
        ("reference_contexts", Column.REFERENCE_CONTEXTS),
    ],
)
def test_column_resolve_accepts_current_and_legacy_names(name: str, expected: Column) -> None:
    assert Column.resolve(name) is expected


def test_column_resolve_rejects_unknown_names_with_a_suggestion() -> None:
    with pytest.raises(DataError) as info:
        Column.resolve("retrieved_context")
    message = str(info.value)
    assert "'retrieved_context'" in message
    assert "Did you mean 'retrieved_contexts'?" in message
    assert "'user_input'" in message  # lists the valid names


def test_sample_keeps_strings_exactly_and_makes_lists_tuples() -> None:
    sample = Sample(
        user_input="  法国的首都是哪里？\n",
        response="",
        retrieved_contexts=["巴黎是法国的首都。 ", "\t上下文"],
        id="q1",
    )
    assert sample.user_input == "  法国的首都是哪里？\n"
    assert sample.response == ""
    assert sample.retrieved_contexts == ("巴黎是法国的首都。 ", "\t上下文")
    assert sample.reference is None


def test_sample_is_frozen_and_rejects_unknown_fields_and_wrong_types() -> None:
    sample = Sample(user_input="q")
    with pytest.raises(ValidationError):
        sample.user_input = "changed"  # type: ignore[misc]
    with pytest.raises(ValidationError, match="quesiton"):
        Sample(quesiton="typo")  # type: ignore[call-arg]
    with pytest.raises(ValidationError):
        Sample(retrieved_contexts="one string, not a list")  # type: ignore[arg-type]
    with pytest.raises(ValidationError):
        Sample(user_input=42)  # type: ignore[arg-type]


def test_sample_accepts_legacy_keywords_and_exposes_legacy_properties() -> None:
    sample = Sample(question="q", answer="a", contexts=["c1", "c2"], ground_truth="g")  # type: ignore[call-arg]
    assert (sample.user_input, sample.response, sample.retrieved_contexts, sample.reference) == (
        "q",
        "a",
        ("c1", "c2"),
        "g",
    )
    assert (sample.question, sample.answer, sample.contexts, sample.ground_truth) == (
        "q",
        "a",
        ("c1", "c2"),
        "g",
    )
    assert sample.joined_contexts == "c1\nc2"
    assert Sample().joined_contexts is None


def test_sample_rejects_different_legacy_and_current_values() -> None:
    with pytest.raises(ValidationError, match="'question' and 'user_input'"):
        Sample(question="a", user_input="b")  # type: ignore[call-arg]
    assert Sample(question="same", user_input="same").user_input == "same"  # type: ignore[call-arg]
    assert Sample(contexts=["c"], retrieved_contexts=("c",)).contexts == ("c",)  # type: ignore[call-arg]


def test_has_and_get_take_columns_and_names() -> None:
    sample = Sample(user_input="q", response="", retrieved_contexts=[])
    assert sample.has(Column.USER_INPUT) and sample.has("question")
    assert sample.has("response")  # an empty string is present
    assert sample.has("retrieved_contexts")  # so is an empty list; validate() treats it separately
    assert not sample.has(Column.REFERENCE) and not sample.has("ground_truth")
    assert sample.get("contexts") == ()
    assert sample.get(Column.REFERENCE) is None
    with pytest.raises(DataError, match="Unknown column 'nope'"):
        sample.get("nope")


def test_language_text_joins_question_response_and_reference() -> None:
    sample = Sample(
        user_input="什么是RAG？", response="检索增强生成", reference="RAG", retrieved_contexts=["x"]
    )
    assert sample.language_text() == "什么是RAG？\n检索增强生成\nRAG"
    assert Sample(response="only").language_text() == "only"
    assert Sample().language_text() == ""


def test_hash_ignores_metadata_and_equal_samples_hash_equal() -> None:
    a = Sample(id="1", user_input="q", metadata={"source": "a"})
    b = Sample(id="1", user_input="q", metadata={"source": "b", "n": [1, 2]})
    assert hash(a) == hash(b)
    assert a != b  # equality still sees metadata
    assert a == Sample(id="1", user_input="q", metadata={"source": "a"})
    assert len({a, Sample(id="1", user_input="q", metadata={"source": "a"})}) == 1
    assert hash(a) != hash(Sample(id="2", user_input="q"))


def test_metadata_must_be_json_able_and_is_copied() -> None:
    original = {"tags": ["a"], "score": 0.5, "中文": "值"}
    sample = Sample(metadata=original)
    original["tags"].append("b")
    assert sample.metadata == {"tags": ["a"], "score": 0.5, "中文": "值"}
    with pytest.raises(ValidationError, match="JSON-able"):
        Sample(metadata={"bad": object()})
    with pytest.raises(ValidationError, match="JSON-able"):
        Sample(metadata={"nan": float("nan")})


def _dataset() -> Dataset:
    samples = [Sample(id=str(i), user_input=f"q{i}") for i in range(4)]
    return Dataset(samples, columns=["question"], source="test rows")


def test_dataset_is_an_immutable_sequence() -> None:
    ds = _dataset()
    assert isinstance(ds, Sequence)
    assert len(ds) == 4
    assert [s.user_input for s in ds] == ["q0", "q1", "q2", "q3"]
    assert ds[-1].user_input == "q3"
    assert ds[1] in ds
    assert ds.index(ds[2]) == 2
    assert ds.columns == ("question",)
    assert ds.source == "test rows"
    assert ds.column_roles == {"question": "user_input"}
    with pytest.raises(AttributeError):
        ds.columns = ("x",)  # type: ignore[misc]
    with pytest.raises(AttributeError):
        ds.extra = 1  # type: ignore[attr-defined]
    with pytest.raises(TypeError):
        ds[0] = Sample()  # type: ignore[index]
    with pytest.raises(IndexError):
        ds[4]


def test_dataset_slice_keeps_columns_and_source() -> None:
    part = _dataset()[1:3]
    assert isinstance(part, Dataset)
    assert [s.id for s in part] == ["1", "2"]
    assert part.columns == ("question",)
    assert part.source == "test rows"
    assert "2 samples from test rows" in repr(part)


def test_dataset_rejects_items_that_are_not_samples() -> None:
    with pytest.raises(DataError, match="Dataset item 1 is a dict, not a Sample"):
        Dataset([Sample(), {"question": "q"}])  # type: ignore[list-item]


def test_to_row_reads_back_to_an_equal_sample() -> None:
    from ascend_eval.data import load_dataset

    sample = Sample(id="q1", question="q", contexts=["a", "b"], answer="x", metadata={"tags": ["t"], "n": 1})
    row = sample.to_row()
    assert row == {
        "id": "q1", "tags": ["t"], "n": 1, "user_input": "q", "response": "x",
        "retrieved_contexts": ["a", "b"],
    }  # fmt: skip
    row["tags"].append("changed")  # a copy: the frozen sample keeps its metadata
    assert sample.metadata["tags"] == ["t"]
    assert load_dataset([sample.to_row()])[0] == sample


def test_with_samples_keeps_the_source_and_adds_gained_columns() -> None:
    ds = Dataset([Sample(id="0", question="q")], columns=["question"], source="file 'x.json'")
    gained = ds.with_samples([Sample(id="0", question="q", contexts=["c"], metadata={"ids": ["d#0"]})])
    assert gained.source == "file 'x.json'"
    assert gained.columns == ("question", "retrieved_contexts", "ids")
    assert gained.column_roles == {
        "question": "user_input",
        "retrieved_contexts": "retrieved_contexts",
        "ids": "metadata",
    }
