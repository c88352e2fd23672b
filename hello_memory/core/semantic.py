"""Semantic tier: entity/relation annotation, fact supersession and graph relevance."""

from __future__ import annotations

import logging

from hello_memory.core.scoring import graph_relevance
from hello_memory.errors import DiskFullError, WriteConflictError
from hello_memory.llm.base import LLMClient
from hello_memory.models import Entity, HistoryEntry, MemoryItem, Relation
from hello_memory.stores.graph.base import GraphStore
from hello_memory.stores.records.base import Fact, RecordStore, RecordWrite

logger = logging.getLogger(__name__)
Links = tuple[list[tuple[str, str, str]], list[tuple[str, str, str]]]
_RETRIES = 3  # supersession re-reads after losing a race to another worker
SUPERSEDED_FACTOR = 0.6  # a superseded fact still answers "what was true", but ranks below the current one


def _extract(llm: LLMClient | None, text: str) -> tuple[list[tuple[str, str]], list[tuple[str, str, str]]]:
    from hello_memory.language import extraction

    result = extraction.LLMExtractor(llm).extract(text) if llm is not None else extraction.extract(text)
    return list(result.entities), list(result.relations)


def annotate(llm: LLMClient | None, item: MemoryItem) -> Links:
    """Extract entities and relations of ``item`` (with ``llm`` when there is one, else rules),
    set them on it and return the graph links."""
    from hello_memory.language.extraction import entity_id

    names, rels = _extract(llm, item.content)
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


def facts_of(links: Links) -> tuple[Fact, ...]:
    """The functional facts a semantic memory's links assert (one value per subject and relation)."""
    from hello_memory.language.extraction import FUNCTIONAL_RELATIONS

    return tuple(Fact(s, rel, o) for s, o, rel in links[1] if rel in FUNCTIONAL_RELATIONS)


def supersede(records: RecordStore, item: MemoryItem, links: Links) -> None:
    """Mark the user's current memories that contradict ``item``'s functional facts as superseded.

    One versioned write per superseded memory (``valid_to`` and ``superseded_by`` set, a history
    entry); idempotent (a superseded memory no longer conflicts), so recovery may run it again.
    """
    for fact in facts_of(links):
        for old_id in records.conflicting_facts(item.user_id, fact.subject_id, fact.relation, fact.object_id):
            if old_id != item.id:
                _supersede_one(records, item, old_id, fact.relation)


def _supersede_one(records: RecordStore, item: MemoryItem, old_id: str, relation: str) -> None:
    for attempt in range(_RETRIES):
        rec = records.read(item.user_id, [old_id]).get(old_id)
        if rec is None or rec.item.valid_to is not None:
            return
        newer = rec.item.model_copy(update={"valid_to": item.created_at, "superseded_by": item.id})
        entry = HistoryEntry(
            memory_id=old_id,
            event="supersede",
            new={"superseded_by": item.id, "relation": relation},
            at=item.created_at,
        )
        try:
            records.apply([RecordWrite(newer, expected_version=rec.version, history=(entry,))])
            return
        except WriteConflictError:  # another worker changed it meanwhile: read it again
            if attempt == _RETRIES - 1:
                raise


def entity_hops(graph: GraphStore, user_id: str, query: str, *, max_hops: int = 2) -> dict[str, int]:
    """entity id → hops from the entities the query names (rules, no LLM call per search)."""
    names, _ = _extract(None, query)
    try:
        start = [eid for eid, _ in graph.find_entities(user_id, sorted({n for n, _ in names}))]
    except DiskFullError as e:  # a graph file that cannot even be created: search goes on without it
        logger.warning("graph relevance unavailable: %s", e)
        return {}
    if not start:
        return {}
    return {n.entity_id: n.hops for n in graph.neighbours(user_id, start, max_hops=max_hops)}


def graph_candidates(graph: GraphStore, user_id: str, hops: dict[str, int], *, limit: int = 50) -> list[str]:
    """Memories that mention a query entity directly (hop 0), at most ``limit``.

    The first-person hub entity ("user") is skipped: every "I ..." fact mentions it, so it would
    flood the candidates without telling them apart.
    """
    from hello_memory.language.extraction import entity_id

    hub = entity_id(user_id, "user")
    direct = [e for e, h in hops.items() if h == 0 and e != hub]
    if not direct:
        return []
    return sorted(graph.memories_mentioning(user_id, direct))[:limit]


def graph_relevance_of(item: MemoryItem, hops: dict[str, int]) -> float:
    """Graph relevance of a memory: through its closest entity to the query's entities (0 if none)."""
    reached = [hops[e.id] for e in item.entities if e.id in hops]
    return graph_relevance(min(reached)) if reached else 0.0
