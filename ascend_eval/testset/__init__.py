"""Test sets from the user's own documents: questions, reference answers and reference contexts written by
the judge from the corpus's chunks, in three query kinds, filtered (stands alone, answerable, not copied,
not a near-duplicate), batched and cached through the engine like an evaluation (docs/testset.md)."""

from ascend_eval.testset.candidates import Candidate, build_candidates, chunk_id
from ascend_eval.testset.config import DEFAULT_KINDS, QUERY_KINDS, TestsetConfig, allocate, parse_kinds
from ascend_eval.testset.corpus import SUFFIXES, load_corpus
from ascend_eval.testset.filters import COPY_SHARE, DROP_REASONS, DuplicateFilter, copies_context
from ascend_eval.testset.generation import corpus_chunks, generate
from ascend_eval.testset.prompts import ABSTRACT, ANSWERABLE, MULTI_HOP, SINGLE_HOP, STANDALONE, WRITERS
from ascend_eval.testset.result import ROW_FIELDS, Testset

__all__ = [
    "ABSTRACT",
    "ANSWERABLE",
    "COPY_SHARE",
    "DEFAULT_KINDS",
    "DROP_REASONS",
    "MULTI_HOP",
    "QUERY_KINDS",
    "ROW_FIELDS",
    "SINGLE_HOP",
    "STANDALONE",
    "SUFFIXES",
    "WRITERS",
    "Candidate",
    "DuplicateFilter",
    "Testset",
    "TestsetConfig",
    "allocate",
    "build_candidates",
    "chunk_id",
    "copies_context",
    "corpus_chunks",
    "generate",
    "load_corpus",
    "parse_kinds",
]
