"""Knowledge graph on Qdrant (server mode without Neo4j): mentions and relations as payload points.

In server mode every durable byte lives in the servers, and the embedded SQLite graph would be
local state. With ``NEO4J_URI`` set the graph goes to Neo4j; without it, to this store, in the
same Qdrant as the records, so that a deployment of Qdrant alone keeps graph relevance and a
worker holds nothing of its own.

Layout: every point belongs to one memory of one user, so a memory's links are written, replaced
and removed without touching anybody else's — no shared node that one worker could delete while
another links it.

- ``<prefix>_graph_mentions``: one point per (user, memory, entity): ``entity_id``, ``name``,
  ``norm_name``, ``type``, ``at`` (link time, ns). An entity exists while a memory mentions it;
  its name is the one of its earliest mention.
- ``<prefix>_graph_relations``: one point per (user, memory, source, type, target).

Traversal is a breadth-first search, one filtered scroll of the relations per hop (payload
indexes on ``source_id`` and ``target_id`` on a server). Point ids are UUIDv5 of their key, so a
repeated ``link`` writes the same points.

Example:
    >>> from hello_memory.language.extraction import entity_id
    >>> store = QdrantGraphStore(":memory:")
    >>> a, b = entity_id("u1", "Alice"), entity_id("u1", "Paris")
    >>> store.link("u1", "m1", [(a, "Alice", "person"), (b, "Paris", "place")], [(a, b, "lives_in")])
    >>> [(n.name, n.hops) for n in store.neighbours("u1", [a])]
    [('Alice', 0), ('Paris', 1)]
    >>> store.close()
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any

from hello_memory.stores.graph.base import GraphNeighbour
from hello_memory.stores.graph.common import (
    EntityRow,
    GraphStoreAdapter,
    RelationRow,
    expand,
)
from hello_memory.stores.qdrant_connection import QdrantConnection, kind_check, models

if TYPE_CHECKING:
    from typing_extensions import Unpack

    from hello_memory.stores.qdrant_connection import QdrantOptions

SCHEMA = 1
MENTIONS, RELATIONS = "graph_mentions", "graph_relations"
_NAMESPACE = uuid.UUID("2b7e4c1a-93d5-4f08-b6a2-5c8e1d0f3a94")
_SEP = "\x1f"
_CHUNK = 512  # values per MatchAny condition
_BATCH = 256  # points per upsert


def _pid(*parts: str) -> str:
    return str(uuid.uuid5(_NAMESPACE, _SEP.join(parts)))


class QdrantGraphStore(GraphStoreAdapter):
    """A :class:`~hello_memory.stores.graph.base.GraphStore` on Qdrant (``qdrant-client``).

    Args:
        location: ``":memory:"`` or a server URL.
        **connection: ``url``, ``path``, ``client``, ``api_key``, ``timeout``, ``retries``, ``prefix``:
            see :class:`~hello_memory.stores.qdrant_connection.QdrantConnection` (share one ``client``
            with the record store to use one connection).
    """

    BACKEND = "qdrant"

    def __init__(self, location: str | None = None, **connection: Unpack[QdrantOptions]) -> None:
        self._conn = QdrantConnection(location, **connection)
        self._ready = False

    def unlink_memory(self, user_id: str, memory_id: str) -> None:
        """Remove the memory's mentions and relations (entities nobody mentions are gone with them)."""
        self._ensure()
        for name in (RELATIONS, MENTIONS):
            self._delete(name, self._of_memory(user_id, memory_id))

    def forget_user(self, user_id: str) -> dict[str, int]:
        """Delete every mention and relation of the user; returns the counts before."""
        counts = self.counts(user_id)
        for name in (RELATIONS, MENTIONS):
            self._delete(name, self._user(user_id))
        return counts

    def counts(self, user_id: str) -> dict[str, int]:
        """``{"entities": n, "relations": m, "mentions": k}`` for the user."""
        self._ensure()
        mentions = self._conn.scroll_all(MENTIONS, self._user(user_id), with_payload=["entity_id"])
        return {
            "entities": len({p.payload["entity_id"] for p in mentions}),
            "relations": self._conn.count(RELATIONS, self._user(user_id)),
            "mentions": len(mentions),
        }

    def residue(self, user_id: str) -> dict[str, int]:
        """Points left for the user per collection (0 everywhere after :meth:`forget_user`)."""
        self._ensure()
        return {name: self._conn.count(name, self._user(user_id)) for name in (MENTIONS, RELATIONS)}

    def close(self) -> None:
        """Close the client if this store built it; idempotent."""
        self._conn.close()

    # -- primitives -------------------------------------------------------------------------------
    def _link(self, user_id: str, memory_id: str, rows: list[EntityRow], rels: list[RelationRow]) -> None:
        """The new points first, then the memory's points not among them."""
        self._ensure()
        m, now = models(), time.time_ns()
        key = {"user_id": user_id, "memory_id": memory_id}
        mentions = [
            m.PointStruct(
                id=_pid(user_id, memory_id, r.id),
                vector={},
                payload={
                    **key,
                    "entity_id": r.id,
                    "name": r.name,
                    "norm_name": r.norm_name,
                    "type": r.type,
                    "at": now,
                },
            )
            for r in rows
        ]
        edges = [
            m.PointStruct(
                id=_pid(user_id, memory_id, r.source, r.type, r.target),
                vector={},
                payload={**key, "source_id": r.source, "target_id": r.target, "type": r.type},
            )
            for r in rels
        ]
        for name, points in ((MENTIONS, mentions), (RELATIONS, edges)):
            for start in range(0, len(points), _BATCH):
                self._conn.call(
                    "link", "upsert", self._conn.full(name), points=points[start : start + _BATCH], wait=True
                )
            self._delete(name, self._of_memory(user_id, memory_id, keep=[str(p.id) for p in points]))

    def _neighbours(self, user_id: str, starts: list[str], max_hops: int) -> list[GraphNeighbour]:
        """One filtered scroll of the relations per hop."""

        def next_layer(frontier: list[str], seen: set[str]) -> dict[str, str]:
            reached: set[str] = set()
            for p in self._edges(user_id, sorted(frontier)):
                reached.update((p.payload["source_id"], p.payload["target_id"]))
            new = sorted(reached - seen)
            names = self._names(user_id, new)
            return {eid: names.get(eid, eid) for eid in new}

        return expand(self._names(user_id, starts), next_layer, max_hops)

    def _mentions(self, user_id: str, entity_ids: list[str]) -> list[tuple[str, str]]:
        points = self._mention_points(user_id, "entity_id", entity_ids, ["memory_id", "entity_id"])
        return [(p.payload["memory_id"], p.payload["entity_id"]) for p in points]

    def _entities_named(self, user_id: str, keys: list[str]) -> list[tuple[str, str, str]]:
        """Each entity's name is the one of its earliest mention."""
        best: dict[str, tuple[int, str, str]] = {}  # entity id -> (at, name, norm_name) of its first mention
        for p in self._mention_points(user_id, "norm_name", keys, ["entity_id", "name", "norm_name", "at"]):
            pl = p.payload
            candidate = (int(pl.get("at") or 0), pl["name"], pl["norm_name"])
            if pl["entity_id"] not in best or candidate < best[pl["entity_id"]]:
                best[pl["entity_id"]] = candidate
        return [(norm, eid, name) for eid, (_, name, norm) in best.items()]

    # -- internals ------------------------------------------------------------------------------
    def _ensure(self) -> None:
        if self._ready:
            return
        for name, keywords in (
            (MENTIONS, ("user_id", "memory_id", "entity_id", "norm_name")),
            (RELATIONS, ("user_id", "memory_id", "source_id", "target_id")),
        ):
            meta = {"kind": name, "schema": SCHEMA}
            self._conn.ensure_collection(name, meta, kind_check(name, SCHEMA), vectors_config={})
            self._conn.ensure_indexes(name, keywords=keywords, tenant="user_id")
        self._ready = True

    @staticmethod
    def _user(user_id: str, *extra: Any) -> Any:
        m = models()
        return m.Filter(must=[m.FieldCondition(key="user_id", match=m.MatchValue(value=user_id)), *extra])

    def _of_memory(self, user_id: str, memory_id: str, keep: Sequence[str] | None = None) -> Any:
        m = models()
        where = self._user(user_id, m.FieldCondition(key="memory_id", match=m.MatchValue(value=memory_id)))
        if keep:
            where.must_not = [m.HasIdCondition(has_id=list(keep))]
        return where

    def _delete(self, name: str, where: Any) -> None:
        selector = models().FilterSelector(filter=where)
        self._conn.call("unlink", "delete", self._conn.full(name), points_selector=selector, wait=True)

    def _mention_points(self, user_id: str, key: str, values: Sequence[str], fields: list[str]) -> list[Any]:
        return self._any(MENTIONS, user_id, [(key, values)], fields)

    def _edges(self, user_id: str, entity_ids: Sequence[str]) -> list[Any]:
        return self._any(
            RELATIONS,
            user_id,
            [("source_id", entity_ids), ("target_id", entity_ids)],
            ["source_id", "target_id"],
        )

    def _any(
        self, name: str, user_id: str, keys: Iterable[tuple[str, Sequence[str]]], fields: list[str]
    ) -> list[Any]:
        """The user's points of ``name`` whose ``key`` is one of its values (for any of ``keys``)."""
        m = models()
        out: dict[str, Any] = {}
        for key, values in keys:
            for start in range(0, len(values), _CHUNK):
                part = list(values[start : start + _CHUNK])
                if not part:
                    continue
                self._ensure()
                where = self._user(user_id, m.FieldCondition(key=key, match=m.MatchAny(any=part)))
                for p in self._conn.scroll_all(name, where, with_payload=fields):
                    out[str(p.id)] = p
        return list(out.values())

    def _names(self, user_id: str, entity_ids: Sequence[str]) -> dict[str, str]:
        """entity id -> its name, for the ids among ``entity_ids`` that some memory mentions."""
        first: dict[str, tuple[int, str]] = {}
        for p in self._mention_points(user_id, "entity_id", entity_ids, ["entity_id", "name", "at"]):
            candidate = (int(p.payload.get("at") or 0), p.payload["name"])
            eid = p.payload["entity_id"]
            if eid not in first or candidate < first[eid]:
                first[eid] = candidate
        return {eid: name for eid, (_, name) in first.items()}
