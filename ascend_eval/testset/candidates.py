"""Which chunks each candidate question is written from: every chunk alone (single-hop), a chunk with one
or two of its nearest neighbours, twice over (multi-hop), a chunk with its three nearest (abstract).

Neighbours are found by embedding cosine among the `NEIGHBOURS` nearest chunks; for multi-hop, those that
share a named entity with the first chunk (`ascend_eval.text.entities`) come first. Each kind's candidates
are shuffled by a generator seeded with the run's seed and the kind's name, and each is given its persona
the same way: the same seed and corpus always give the same candidates in the same order, which is what
lets a rerun send the judge the same requests, answered from the request cache.
"""

from __future__ import annotations

import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from ascend_eval.pipeline.chunking import Chunk
from ascend_eval.similarity import cosine_matrix, top_k
from ascend_eval.testset.config import TestsetConfig
from ascend_eval.text.entities import entity_key, extract_entities
from ascend_eval.text.language import Language, detect_language

NEIGHBOURS = 8
"""How many nearest chunks (by embedding cosine) a multi-hop or abstract group is drawn from."""
MULTI_HOP_GROUPS = 2
"""Multi-hop groups per seed chunk: with its first-ranked neighbours, and with the next ones. One per chunk
left a small corpus short of candidates: the 14 short documents of the built-in Chinese corpus gave 13
multi-hop candidates, and with the near-duplicates of a small judge dropped, 21 rows of 30."""
ABSTRACT_CHUNKS = 4
"""Chunks of an abstract group: its first chunk and its nearest neighbours (fewer in a smaller corpus)."""
_BLOCK = 1024


@dataclass(frozen=True)
class Candidate:
    """One question to write: its kind, its chunks (indices into the run's chunk list, the first one the
    group's seed), the language to write in, and who asks (None without personas)."""

    kind: str
    chunks: tuple[int, ...]
    language: Language
    persona: str | None = None


def chunk_id(chunk: Chunk) -> str:
    """`doc_id#chunk_index`, as the RAG pipeline names a chunk (`retrieved_context_ids`)."""
    return f"{chunk.doc_id}#{chunk.index}"


def nearest(vectors: NDArray[np.float32], texts: Sequence[str], k: int = NEIGHBOURS) -> list[list[int]]:
    """Per chunk, the `k` other chunks with the highest cosine, best first (ties: lower index first);
    chunks with the very same text are not each other's neighbours.

    >>> v = np.array([[1, 0], [0.9, 0.1], [0, 1]], dtype=np.float32)
    >>> nearest(v, ["a", "b", "c"], k=1)
    [[1], [0], [1]]
    """
    out: list[list[int]] = []
    for start in range(0, len(texts), _BLOCK):
        scores = cosine_matrix(vectors[start : start + _BLOCK], vectors)
        for row, picked in enumerate(top_k(scores, min(len(texts), k + 1 + 4))):
            i = start + row
            out.append([j for j in picked if j != i and texts[j] != texts[i]][:k])
    return out


def entity_sets(texts: Sequence[str]) -> list[frozenset[str]]:
    """Each text's named entities, quantities and dates, as comparison keys."""
    return [frozenset(entity_key(e) for e in extract_entities(t)) for t in texts]


def _groups(
    kind: str, neighbours: Sequence[Sequence[int]], entities: Sequence[frozenset[str]], rng: random.Random
) -> list[tuple[int, ...]]:
    """The chunk groups of `kind` (one per seed chunk, `MULTI_HOP_GROUPS` for multi-hop), each set of chunks
    once, in seed order. The p-th multi-hop group of a chunk takes one or two of its neighbours from the
    p-th on, those that share an entity with it ranked first."""
    groups, seen = [], set()
    for i, near in enumerate(neighbours):
        if kind == "single_hop":
            found: list[tuple[int, ...]] = [(i,)]
        elif not near:
            continue
        elif kind == "multi_hop":
            ranked = sorted(near, key=lambda j: (not (entities[i] & entities[j]), near.index(j)))
            starts = range(min(MULTI_HOP_GROUPS, len(ranked)))
            found = [(i, *ranked[p : p + rng.choice((1, 2))]) for p in starts]
        else:
            found = [(i, *near[: ABSTRACT_CHUNKS - 1])]
        for group in found:
            if frozenset(group) not in seen:
                seen.add(frozenset(group))
                groups.append(group)
    return groups


def build_candidates(
    chunks: Sequence[Chunk],
    vectors: NDArray[np.float32],
    languages: Mapping[str, Language],
    config: TestsetConfig,
) -> dict[str, list[Candidate]]:
    """Every candidate of each active kind, in the order they are tried.

    Args:
        chunks: the corpus's chunks.
        vectors: their embeddings, one row per chunk.
        languages: the language of each document by id (used when `config.language` is "auto").
        config: kinds, personas, language and seed.

    Returns:
        Kind -> its candidates, shuffled by the seed. Multi-hop and abstract need two chunks at least: with
        one chunk they have none.
    """
    texts = [c.text for c in chunks]
    active = config.active_kinds
    neighbours = nearest(vectors, texts) if len(chunks) > 1 else [[] for _ in chunks]
    entities = entity_sets(texts) if "multi_hop" in active else [frozenset()] * len(chunks)
    personas = list(config.personas or ())
    out: dict[str, list[Candidate]] = {}
    for kind in active:
        rng = random.Random(f"{config.seed}/{kind}")
        groups = _groups(kind, neighbours, entities, rng)
        rng.shuffle(groups)
        who = random.Random(f"{config.seed}/{kind}/persona")
        out[kind] = [
            Candidate(
                kind,
                group,
                languages[chunks[group[0]].doc_id] if config.language == "auto" else config.language,  # type: ignore[arg-type]
                personas[who.randrange(len(personas))] if personas else None,
            )
            for group in groups
        ]
    return out


def document_languages(documents: Sequence[Mapping[str, str]]) -> dict[str, Language]:
    """Each document's language by id (`detect_language` of its text).

    >>> document_languages([{"id": "a", "text": "Tea grows here."}, {"id": "b", "text": "这里种茶。"}])
    {'a': 'en', 'b': 'zh'}
    """
    return {doc["id"]: detect_language(doc["text"]) for doc in documents}
