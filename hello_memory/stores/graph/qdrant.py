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
from typing import Any

from hello_memory.errors import InvalidInputError
from hello_memory.language.extraction import normalise_name
from hello_memory.stores.graph.base import GraphNeighbour
from hello_memory.stores.graph.sqlite import entity_rows, relation_rows
from hello_memory.stores.qdrant_connection import QdrantConnection, kind_check, models

SCHEMA = 1
MENTIONS, RELATIONS = "graph_mentions", "graph_relations"
_NAMESPACE = uuid.UUID("2b7e4c1a-93d5-4f08-b6a2-5c8e1d0f3a94")
_SEP = "\x1f"
_CHUNK = 512  # values per MatchAny condition
_BATCH = 256  # points per upsert


def _pid(*parts: str) -> str:
    return str(uuid.uuid5(_NAMESPACE, _SEP.join(parts)))


class QdrantGraphStore:
    """A :class:`~hello_memory.stores.graph.base.GraphStore` on Qdrant (``qdrant-client``).

    Args:
        location / url / path / client, api_key, timeout, retries, prefix: as for
            :class:`~hello_memory.stores.records.qdrant.QdrantRecordStore` (share one ``client``
            with it to use one connection).
    """

    def __init__(
        self,
        location: str | None = None,
        *,
        url: str | None = None,
        path: str | None = None,
        api_key: str | None = None,
        timeout: float = 30,
        client: Any = None,
        prefix: str = "hm",
        retries: int = 3,
    ) -> None:
        self._conn = QdrantConnection(
            location,
            url=url,
            path=path,
            api_key=api_key,
            timeout=timeout,
            client=client,
            prefix=prefix,
            retries=retries,
        )
        self._ready = False

    @property
    def backend(self) -> str:
        """``"qdrant"``."""
        return "qdrant"

    def __enter__(self) -> QdrantGraphStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- writes -------------------------------------------------------------------------------
    def link(
        self,
        user_id: str,
        memory_id: str,
        entities: Sequence[tuple[str, str, str]],
        relations: Sequence[tuple[str, str, str]],
    ) -> None:
        """Replace the memory's links: the new points first, then the memory's points not among them.

        Raises:
            InvalidInputError: an empty id or name, or a relation endpoint not among ``entities``.
        """
        _require(user_id, "user_id")
        _require(memory_id, "memory_id")
        rows = entity_rows(user_id, entities)
        rels = relation_rows(user_id, memory_id, {r[1] for r in rows}, relations)
        self._ensure()
        m, now = models(), time.time_ns()
        mentions = [
            m.PointStruct(
                id=_pid(user_id, memory_id, eid),
                vector={},
                payload={
                    "user_id": user_id,
                    "memory_id": memory_id,
                    "entity_id": eid,
                    "name": name,
                    "norm_name": norm,
                    "type": kind,
                    "at": now,
                },
            )
            for _, eid, name, norm, kind in rows
        ]
        edges = [
            m.PointStruct(
                id=_pid(user_id, memory_id, src, kind, dst),
                vector={},
                payload={
                    "user_id": user_id,
                    "memory_id": memory_id,
                    "source_id": src,
                    "target_id": dst,
                    "type": kind,
                },
            )
            for _, src, dst, kind, _ in rels
        ]
        for name, points in ((MENTIONS, mentions), (RELATIONS, edges)):
            for start in range(0, len(points), _BATCH):
                self._conn.call(
                    "link", "upsert", self._conn.full(name), points=points[start : start + _BATCH], wait=True
                )
            self._delete(name, self._of_memory(user_id, memory_id, keep=[str(p.id) for p in points]))

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

    # -- reads --------------------------------------------------------------------------------
    def neighbours(
        self, user_id: str, entity_ids: Sequence[str], *, max_hops: int = 2
    ) -> list[GraphNeighbour]:
        """Entities within ``max_hops`` of any start (edges in both directions), nearest first."""
        if isinstance(max_hops, bool) or not isinstance(max_hops, int) or max_hops < 0:
            raise InvalidInputError("max_hops must be an integer >= 0", field="max_hops")
        names = self._names(user_id, list(dict.fromkeys(entity_ids)))
        found = {eid: 0 for eid in names}
        frontier = set(names)
        for hop in range(1, max_hops + 1):
            if not frontier:
                break
            reached: set[str] = set()
            for p in self._edges(user_id, sorted(frontier)):
                reached.update((p.payload["source_id"], p.payload["target_id"]))
            frontier = reached - set(found)
            names |= self._names(user_id, sorted(frontier))
            found.update((eid, hop) for eid in frontier)
        out = [GraphNeighbour(eid, names.get(eid, eid), hops) for eid, hops in found.items()]
        return sorted(out, key=lambda n: (n.hops, n.name, n.entity_id))

    def memories_mentioning(self, user_id: str, entity_ids: Sequence[str]) -> dict[str, list[str]]:
        """memory id -> the given entity ids it mentions (in the order given)."""
        order = {e: i for i, e in enumerate(dict.fromkeys(entity_ids))}
        found: dict[str, list[str]] = {}
        for p in self._mentions(user_id, "entity_id", list(order), ["memory_id", "entity_id"]):
            found.setdefault(p.payload["memory_id"], []).append(p.payload["entity_id"])
        return {mid: sorted(set(ids), key=order.__getitem__) for mid, ids in sorted(found.items())}

    def find_entities(self, user_id: str, names: Sequence[str]) -> list[tuple[str, str]]:
        """(id, name) of the user's entities whose normalised name equals a normalised ``names`` entry."""
        keys = list(dict.fromkeys(k for k in map(normalise_name, names) if k))
        rank = {k: i for i, k in enumerate(keys)}
        best: dict[str, tuple[int, str, str]] = {}  # entity id -> (at, name, norm_name) of its first mention
        for p in self._mentions(user_id, "norm_name", keys, ["entity_id", "name", "norm_name", "at"]):
            pl = p.payload
            candidate = (int(pl.get("at") or 0), pl["name"], pl["norm_name"])
            if pl["entity_id"] not in best or candidate < best[pl["entity_id"]]:
                best[pl["entity_id"]] = candidate
        ranked = sorted(best.items(), key=lambda kv: (rank[kv[1][2]], kv[0]))
        return [(eid, name) for eid, (_, name, _) in ranked]

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

    def _mentions(self, user_id: str, key: str, values: Sequence[str], fields: list[str]) -> list[Any]:
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
        for p in self._mentions(user_id, "entity_id", entity_ids, ["entity_id", "name", "at"]):
            candidate = (int(p.payload.get("at") or 0), p.payload["name"])
            eid = p.payload["entity_id"]
            if eid not in first or candidate < first[eid]:
                first[eid] = candidate
        return {eid: name for eid, (_, name) in first.items()}


def _require(value: object, field: str) -> None:
    if not isinstance(value, str) or not value:
        raise InvalidInputError(f"{field} must be a non-empty string", field=field)
