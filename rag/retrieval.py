"""Retrieval over the chunk store: per query dense + BM25 fused, merged across MQE/HyDE/PRF queries.

Each query's candidates are its dense neighbours (a chunk's best passage cosine) and its BM25
matches; chunks found only lexically get their exact dense score (:func:`fill_dense`) so that the
fusion compares like with like. The candidate pool is ``max(limit × multiplier, 20)`` split across
the queries (:func:`rag.expansion.pool_sizes`); the queries' results are merged by max or RRF.
"""

from __future__ import annotations

import numpy as np

from hello_memory.core.relevance import dense_floor, fuse
from hello_memory.language.text import lexical_tokens, normalize_text
from hello_memory.pace import unpaced
from hello_memory.stores.chunks.base import ChunkRecord
from rag import expansion
from rag.core import RAGCore
from rag.models import ChunkHit, Expansion, SearchResult

Scored = tuple[float, float, dict[str, float]]
"""A chunk's best sim over the queries, its merged score, and its breakdown."""


@unpaced()  # a read gives the GIL to no writer's loop (hello_memory.pace)
def search(
    core: RAGCore, query: str, *, limit: int, min_score: float | None, enable_mqe: bool, enable_hyde: bool
) -> SearchResult:
    """Hybrid search of ``query`` (validated) with the expansions asked for."""
    extra, notes = expansion.llm_expansions(
        core.llm, query, enable_mqe=enable_mqe, n_mqe=core.settings.mqe_expansions, enable_hyde=enable_hyde
    )
    queries = [Expansion(kind="original", text=query), *extra]
    if (enable_mqe or enable_hyde) and core.llm is None:  # offline: pseudo-relevance feedback
        queries += _prf(core, query, limit)
    hits = retrieve(core, [q.text for q in queries], limit, min_score)
    return SearchResult(query=query, hits=hits, expansions=queries, notes=notes)


def _prf(core: RAGCore, query: str, limit: int) -> list[Expansion]:
    """Offline expansion: the query plus frequent terms of its first top chunks."""
    first = scored(core, [query], limit)
    top = core.store.get_chunks(core.namespace, sorted(first, key=lambda c: -first[c][1])[:3])
    prf = expansion.prf_query(query, [c.text for c in top.values()])
    return [Expansion(kind="prf", text=prf)] if prf else []


def retrieve(core: RAGCore, texts: list[str], limit: int, min_score: float | None) -> list[ChunkHit]:
    """The ``limit`` best chunks over the queries ``texts`` whose sim clears the floor."""
    found = scored(core, texts, limit)
    floor = core.settings.min_score if min_score is None else min_score
    ranked = sorted((c for c in found if found[c][0] >= floor), key=lambda c: (-found[c][1], c))[:limit]
    chunks = core.store.get_chunks(core.namespace, ranked)
    sources = {d.document_id: d.source_path for d in core.documents()}
    return [_hit(chunks[c], found[c], sources.get(chunks[c].document_id)) for c in ranked if c in chunks]


def scored(core: RAGCore, texts: list[str], limit: int) -> dict[str, Scored]:
    """Chunk id → (best sim, merged score, breakdown) over the queries."""
    settings = core.settings
    _, per = expansion.pool_sizes(limit, settings.candidate_pool_multiplier, len(texts))
    texts = [normalize_text(t) for t in texts]  # as converted documents are (Kangxi radicals, ...)
    vectors = core.embedder.embed(texts, kind="query")
    floor = dense_floor(core.embedder.name)
    per_query = []
    best: dict[str, tuple[float, dict[str, float]]] = {}
    for text, vec in zip(texts, vectors, strict=True):
        dense = core.store.dense_search(core.namespace, vec, per)
        lexical = core.store.lexical_search(core.namespace, lexical_tokens(text), per)
        fill_dense(core, vec, dense, lexical)
        rel = fuse(dense, lexical, method=settings.fusion, dense_weight=settings.dense_weight, floor=floor)
        per_query.append({c: r.sim for c, r in rel.items()})
        for c, r in rel.items():
            if r.sim > best.get(c, (-1.0, {}))[0]:
                best[c] = (r.sim, {"sim": r.sim, "dense": r.dense, "lexical": r.lexical})
    merged = expansion.merge(per_query, settings.expansion_merge)
    return {c: (best[c][0], merged[c], best[c][1]) for c in merged}


def fill_dense(core: RAGCore, qvec: np.ndarray, dense: dict[str, float], lexical: dict[str, float]) -> None:
    """Exact best-passage cosine for chunks found only lexically."""
    missing = [c for c in lexical if c not in dense]
    if missing:
        dense.update(core.store.dense_scores(core.namespace, qvec, missing))


def _hit(chunk: ChunkRecord, scored: Scored, source: str | None) -> ChunkHit:
    return ChunkHit(
        chunk_id=chunk.chunk_id,
        document_id=chunk.document_id,
        source_path=source,
        heading_path=chunk.heading_path,
        start=chunk.start,
        end=chunk.end,
        text=chunk.text,
        score=scored[1],
        breakdown=scored[2],
    )
