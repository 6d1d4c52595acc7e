"""RAGAS's `TestsetGenerator` arguments -> ours: documents (LangChain, LlamaIndex, chunks) -> our corpus,
`persona_list` -> persona texts, `query_distribution` -> query kinds and weights, and the arguments that
have nothing to map onto, refused. Objects are recognised by their class names and attributes: neither
RAGAS, LangChain nor LlamaIndex is imported.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ascend_eval.errors import ConfigError, DataError
from ascend_eval.models.spec import ModelSpec
from ascend_eval.ragas.models import Secrets, judge_arg
from ascend_eval.testset import QUERY_KINDS

SYNTHESIZERS: Mapping[str, str] = {
    "SingleHopSpecificQuerySynthesizer": "single_hop",
    "MultiHopSpecificQuerySynthesizer": "multi_hop",
    "MultiHopAbstractQuerySynthesizer": "abstract",
}
"""RAGAS's synthesizer classes (`ragas.testset.synthesizers`) -> the query kind that writes their rows."""

SYNTHESIZER_NAMES: Mapping[str, str] = {
    "single_hop": "single_hop_specific_query_synthesizer",
    "multi_hop": "multi_hop_specific_query_synthesizer",
    "abstract": "multi_hop_abstract_query_synthesizer",
}
"""Query kind -> the `synthesizer_name` RAGAS gives its rows (the synthesizer's default `name`)."""

RAGAS_DEFAULT_KINDS: Mapping[str, float] = dict.fromkeys(QUERY_KINDS, 1.0)
"""RAGAS's `default_query_distribution`: the three synthesizers in equal shares."""

NAME_KEYS = ("source", "filename", "file_name", "file_path")
"""Document metadata that names a document (LangChain loaders: "source"; LlamaIndex: "file_name")."""


def refuse(argument: str, value: Any, why: str) -> None:
    """Raise the `ConfigError` of a `TestsetGenerator` argument that cannot be honoured: named, with why
    and what to do instead."""
    raise ConfigError(f"TestsetGenerator: {argument}={repr(value)[:80]}: {why}")


def check_unsupported(
    *,
    transforms: Any = None,
    callbacks: Any = None,
    token_usage_parser: Any = None,
    return_executor: Any = False,
) -> None:
    """Refuse RAGAS arguments that have nothing to map onto here.

    Raises:
        ConfigError: one of them was given; the message names it and what to do instead.
    """
    if transforms is not None:
        refuse(
            "transforms",
            transforms,
            "RAGAS's knowledge-graph transforms (headlines, summaries, themes, entities) do not run here: "
            "documents are chunked by the RAG pipeline's chunker and neighbouring chunks found by the "
            "embedder. Drop transforms= (pass chunk_size= / chunk_overlap= to set the chunking, or "
            "generate_with_chunks() with chunks you made yourself).",
        )
    if callbacks:
        refuse(
            "callbacks",
            callbacks,
            "LangChain callbacks wrap RAGAS's per-sample LLM calls; ascend-eval batches its requests and "
            "runs no callbacks. Drop callbacks= (with_debugging_logs=True prints each stage and round).",
        )
    if token_usage_parser is not None:
        refuse(
            "token_usage_parser",
            token_usage_parser,
            "a test set's token usage is not counted here. Drop token_usage_parser=.",
        )
    if return_executor:
        refuse(
            "return_executor",
            return_executor,
            "there is no RAGAS Executor to cancel; an interrupted generation resumes from its request cache "
            "when run again. Drop return_executor=.",
        )


def check_size(testset_size: Any) -> int:
    """`testset_size` as rows wanted.

    Raises:
        ConfigError: not an integer >= 1.
    """
    if isinstance(testset_size, bool) or not isinstance(testset_size, int) or testset_size < 1:
        raise ConfigError(f"testset_size={testset_size!r}; it must be an integer >= 1 (rows wanted).")
    return testset_size


def persona_entry(persona: Any, index: int) -> tuple[str, str]:
    """(who asks, as our persona text; the name RAGAS's `persona_name` gives) for one `persona_list`
    entry: a RAGAS `Persona` ("Name: role description"), a {"name", "role_description"} mapping, or a
    string (its own name).

    Raises:
        ConfigError: anything else, or a blank name or description.
    """
    if isinstance(persona, str):
        text = " ".join(persona.split())
        if text:
            return text, text
    else:
        get = persona.get if isinstance(persona, Mapping) else lambda key: getattr(persona, key, None)
        name, role = get("name"), get("role_description")
        if isinstance(name, str) and isinstance(role, str) and name.strip() and role.strip():
            return " ".join(f"{name.strip()}: {role}".split()), name.strip()
    raise ConfigError(
        f"persona_list[{index}]={repr(persona)[:80]}: each persona must be a ragas Persona(name=..., "
        "role_description=...) with both non-empty, or a short description as a string."
    )


def _same_model(a: Any, b: Any) -> bool:
    return a == b if isinstance(a, ModelSpec) and isinstance(b, ModelSpec) else a is b


@dataclass(frozen=True)
class Distribution:
    """A RAGAS `query_distribution` as our kinds: the weight per query kind, and the `synthesizer_name`
    each kind's rows carry."""

    kinds: dict[str, float]
    names: dict[str, str]

    @classmethod
    def of(cls, query_distribution: Any, llm: Any, judge: Any, secrets: Secrets) -> Distribution:
        """Map (synthesizer, weight) pairs; None or an empty list is RAGAS's default (equal shares).

        A kind listed twice gets the sum of its weights. Each synthesizer must write with the generator's
        LLM (one judge writes every kind here) and carry no `llm_context`.

        Raises:
            ConfigError: an entry that is no (synthesizer, weight) pair, a synthesizer of another class
                (named), a weight that is no number >= 0, all weights 0, another LLM or an llm_context.
        """
        if not query_distribution:
            return cls(dict(RAGAS_DEFAULT_KINDS), dict(SYNTHESIZER_NAMES))
        if isinstance(query_distribution, str | Mapping) or not isinstance(query_distribution, Sequence):
            refuse("query_distribution", query_distribution, "pass a list of (synthesizer, weight) pairs.")
        kinds: dict[str, float] = {}
        names: dict[str, str] = {}
        for i, entry in enumerate(query_distribution):
            where = f"query_distribution[{i}]"
            if not isinstance(entry, tuple | list) or len(entry) != 2:
                refuse(where, entry, "each entry must be a (synthesizer, weight) pair.")
            synthesizer, weight = entry
            kind = cls.kind_of(synthesizer, where)
            if (
                isinstance(weight, bool)
                or not isinstance(weight, int | float)
                or not 0 <= weight < float("inf")
            ):
                refuse(where, entry, f"the weight {weight!r} must be a number >= 0.")
            cls.check_llm(synthesizer, llm, judge, secrets, where)
            name = str(getattr(synthesizer, "name", "") or SYNTHESIZER_NAMES[kind])
            if names.setdefault(kind, name) != name:
                refuse(
                    where,
                    entry,
                    f"a second {type(synthesizer).__name__} named {name!r} (the first is {names[kind]!r}); "
                    "both would write the same kind of row here. Keep one, with the weights added up.",
                )
            kinds[kind] = kinds.get(kind, 0.0) + float(weight)
        if sum(kinds.values()) <= 0:
            refuse("query_distribution", query_distribution, "every weight is 0; give one a weight > 0.")
        return cls(kinds, names)

    @staticmethod
    def kind_of(synthesizer: Any, where: str) -> str:
        cls = type(synthesizer)
        kind = SYNTHESIZERS.get(cls.__name__) if cls.__module__.split(".")[0] == "ragas" else None
        if kind is None:
            raise ConfigError(
                f"TestsetGenerator: {where} is a {cls.__module__}.{cls.__name__}, which ascend-eval does not "
                f"write: it writes the rows of RAGAS's {', '.join(SYNTHESIZERS)} (with their own prompts, "
                "not a subclass's). Use those in query_distribution."
            )
        return kind

    @staticmethod
    def check_llm(synthesizer: Any, llm: Any, judge: Any, secrets: Secrets, where: str) -> None:
        name = type(synthesizer).__name__
        context = getattr(synthesizer, "llm_context", None)
        if context:
            refuse(
                f"{where} {name}.llm_context",
                context,
                "ascend-eval's writing prompts take no extra context. Drop llm_context=, or say who asks "
                "with TestsetGenerator(persona_list=[Persona(name=..., role_description=...)]).",
            )
        theirs = getattr(synthesizer, "llm", None)
        if theirs is None or theirs is llm:
            return
        if not _same_model(judge_arg(theirs, secrets, what=f"{where} {name}.llm"), judge):
            refuse(
                f"{where} {name}.llm",
                theirs,
                "it differs from the generator's llm; here one judge writes every kind of row. Create the "
                "synthesizer with llm= the generator's llm.",
            )


def _document_name(metadata: Any) -> str | None:
    if not isinstance(metadata, Mapping):
        return None
    for key in NAME_KEYS:
        value = metadata.get(key)
        if value is not None and str(value).strip():
            return str(value)
    return None


def documents_corpus(items: Sequence[tuple[str, Any]]) -> list[dict[str, str]]:
    """Our corpus (`{"id", "title", "text"}`) from (text, metadata) pairs, blank texts skipped.

    A document is named by its metadata's "source", "filename", "file_name" or "file_path", else by its
    position; a name that several documents share (the pages of one PDF) gets ":1", ":2", ... in order.

    Raises:
        DataError: no document has any text.
    """
    kept = [(i, text, metadata) for i, (text, metadata) in enumerate(items) if text.strip()]
    if not kept:
        raise DataError(
            f"None of the {len(items)} documents has any text (page_content / text is blank or missing). "
            "Pass documents with text."
        )
    names = [_document_name(metadata) or str(i) for i, _, metadata in kept]
    shared = {name for name, n in Counter(names).items() if n > 1}
    seen: Counter[str] = Counter()
    corpus = []
    for name, (_, text, metadata) in zip(names, kept, strict=True):
        seen[name] += 1
        doc_id = f"{name}:{seen[name]}" if name in shared else name
        title = metadata.get("title") if isinstance(metadata, Mapping) else None
        corpus.append({"id": doc_id, "title": str(title or ""), "text": text})
    return corpus


def langchain_pairs(
    documents: Any, *, strings: bool = False, what: str = "documents"
) -> list[tuple[str, Any]]:
    """(page_content, metadata) of LangChain `Document`s (and of plain strings, with `strings`); `what`
    names the argument in messages.

    Raises:
        DataError: not a list of documents, or an item without a `page_content` string.
    """
    pairs = []
    for i, doc in enumerate(_listed(documents, what)):
        if strings and isinstance(doc, str):
            pairs.append((doc, {}))
            continue
        text = getattr(doc, "page_content", None)
        if not isinstance(text, str):
            raise DataError(
                f"{what}[{i}] is a {type(doc).__name__}, not a LangChain Document (no page_content "
                "string). Pass langchain_core.documents.Document(page_content=..., metadata=...) objects"
                + (" or strings." if strings else ".")
            )
        pairs.append((text, getattr(doc, "metadata", None) or {}))
    return pairs


def llama_index_pairs(documents: Any) -> list[tuple[str, Any]]:
    """(text, metadata) of LlamaIndex `Document`s (`.text`, else `.get_content()`), read by their
    attributes: llama_index need not be installed.

    Raises:
        DataError: not a list of documents, or an item with neither a `text` string nor `get_content()`.
    """
    pairs = []
    for i, doc in enumerate(_listed(documents, "documents")):
        text = getattr(doc, "text", None)
        if not isinstance(text, str) and callable(getattr(doc, "get_content", None)):
            text = doc.get_content()
        if not isinstance(text, str):
            raise DataError(
                f"documents[{i}] is a {type(doc).__name__}, not a LlamaIndex Document (no text string and no "
                "get_content()). Pass llama_index.core.Document(text=..., metadata=...) objects."
            )
        pairs.append((text, getattr(doc, "metadata", None) or {}))
    return pairs


def _listed(documents: Any, what: str) -> list[Any]:
    if isinstance(documents, str | bytes | Mapping) or not isinstance(documents, Sequence | Iterator):
        raise DataError(f"{what} must be a list of documents; got {type(documents).__name__}.")
    return list(documents)
