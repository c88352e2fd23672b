"""Semantic tier: entity/relation annotation, fact supersession and graph relevance."""

from __future__ import annotations

import logging
import sqlite3
from typing import TYPE_CHECKING

from hello_memory.core.scoring import graph_relevance
from hello_memory.errors import DiskFullError
from hello_memory.models import Entity, HistoryEntry, MemoryItem, Relation

if TYPE_CHECKING:
    from hello_memory.manager import MemoryManager

logger = logging.getLogger(__name__)
Links = tuple[list[tuple[str, str, str]], list[tuple[str, str, str]]]
SUPERSEDED_FACTOR = 0.6  # a superseded fact still answers "what was true", but ranks below the current one


def _extract(
    mm: MemoryManager, text: str, *, allow_llm: bool = True
) -> tuple[list[tuple[str, str]], list[tuple[str, str, str]]]:
    from hello_memory.language import extraction

    if allow_llm and mm.llm is not None:
        result = extraction.LLMExtractor(mm.llm).extract(text)
    else:
        result = extraction.extract(text)
    return list(result.entities), list(result.relations)


def annotate(mm: MemoryManager, item: MemoryItem) -> Links:
    """Extract entities and relations of ``item``, set them on it and return the graph links."""
    from hello_memory.language.extraction import entity_id

    names, rels = _extract(mm, item.content)
    ents: dict[str, tuple[str, str, str]] = {}
    for name, kind in names:
        eid = entity_id(item.user_id, name)
        ents.setdefault(eid, (eid, name, kind))
    edges = []
    for src, rel, dst in rels:
        s, d = entity_id(item.user_id, src), entity_id(item.user_id, dst)
        for eid, name in ((s, src), (d, dst)):
            ents.setdefault(eid, (eid, name, "concept"))
        edges.append((s, d, rel))
    links: Links = (list(ents.values()), edges)
    item.entities = [Entity(id=e[0], name=e[1], type=e[2]) for e in links[0]]
    item.relations = [Relation(source_id=s, target_id=d, type=r) for s, d, r in edges]
    return links


def with_links(item: MemoryItem, links: Links) -> MemoryItem:
    """A copy of ``item`` carrying ``links`` as its entities and relations."""
    return item.model_copy(
        update={
            "entities": [Entity(id=e[0], name=e[1], type=e[2]) for e in links[0]],
            "relations": [Relation(source_id=s, target_id=d, type=r) for s, d, r in links[1]],
        }
    )


def links_of(item: MemoryItem) -> Links:
    """The graph links stored on an item."""
    return (
        [(e.id, e.name, e.type) for e in item.entities],
        [(r.source_id, r.target_id, r.type) for r in item.relations],
    )


def record_facts(mm: MemoryManager, conn: sqlite3.Connection, item: MemoryItem, links: Links) -> None:
    """Store functional facts of ``item`` and supersede older memories that contradict them."""
    from hello_memory.language.extraction import FUNCTIONAL_RELATIONS

    records = mm.bundle.sqlite
    for s, o, rel in links[1]:
        if rel not in FUNCTIONAL_RELATIONS:
            continue
        for old_id in records.conflicting_facts(item.user_id, s, rel, o):
            old = records.fetch([old_id], item.user_id).get(old_id)
            if old is None or old.id == item.id:
                continue
            newer = old.model_copy(update={"valid_to": item.created_at, "superseded_by": item.id})
            records.replace(conn, newer, None)
            records.add_history(
                conn,
                HistoryEntry(
                    memory_id=old.id,
                    event="supersede",
                    old=None,
                    new={"superseded_by": item.id, "relation": rel},
                    at=item.created_at,
                ),
                item.user_id,
            )
        records.add_fact(conn, item.user_id, item.id, s, rel, o)


def entity_hops(mm: MemoryManager, user_id: str, query: str, *, max_hops: int = 2) -> dict[str, int]:
    """entity id → hops from the entities the query names (rules, no LLM call per search)."""
    names, _ = _extract(mm, query, allow_llm=False)
    graph = mm.bundle.graph
    try:
        start = [eid for eid, _ in graph.find_entities(user_id, sorted({n for n, _ in names}))]
    except DiskFullError as e:  # a graph file that cannot even be created: search goes on without it
        logger.warning("graph relevance unavailable: %s", e)
        return {}
    if not start:
        return {}
    return {n.entity_id: n.hops for n in graph.neighbours(user_id, start, max_hops=max_hops)}


def graph_candidates(mm: MemoryManager, user_id: str, hops: dict[str, int], *, limit: int = 50) -> list[str]:
    """Memories that mention a query entity directly (hop 0), at most ``limit``.

    The first-person hub entity ("user") is skipped: every "I ..." fact mentions it, so it would
    flood the candidates without telling them apart.
    """
    from hello_memory.language.extraction import entity_id

    hub = entity_id(user_id, "user")
    direct = [e for e, h in hops.items() if h == 0 and e != hub]
    if not direct:
        return []
    return sorted(mm.bundle.graph.memories_mentioning(user_id, direct))[:limit]


def graph_relevance_of(item: MemoryItem, hops: dict[str, int]) -> float:
    """Graph relevance of a memory: through its closest entity to the query's entities (0 if none)."""
    reached = [hops[e.id] for e in item.entities if e.id in hops]
    return graph_relevance(min(reached)) if reached else 0.0
