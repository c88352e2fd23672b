"""What every graph backend shares: input checks, the rows a link writes, layered traversal, result order.

:class:`GraphStoreAdapter` writes the :class:`~hello_memory.stores.graph.base.GraphStore` methods whose
logic is the same on every backend — validate, ask the backend for raw rows, shape the answer — so
that SQLite, Neo4j and Qdrant refuse the same input the same way and order their answers alike. A
backend implements the private primitives and the methods that are its own (unlink, counts, forget).
"""

from __future__ import annotations

import logging
from abc import abstractmethod
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

from hello_memory.errors import InvalidInputError
from hello_memory.language.extraction import normalise_name
from hello_memory.stores.adapter import StoreAdapter
from hello_memory.stores.graph.base import GraphNeighbour

logger = logging.getLogger(__name__)

#: The keys of ``counts()`` and ``forget_user()``, in order.
COUNT_KEYS = ("entities", "relations", "mentions")
#: The type of an entity nothing more specific is known of; a more specific type replaces it.
GENERIC_TYPE = "concept"


@dataclass(frozen=True, slots=True)
class EntityRow:
    """An entity as a link writes it (the name stripped, its normalised form beside it)."""

    id: str
    name: str
    norm_name: str
    type: str


@dataclass(frozen=True, slots=True)
class RelationRow:
    """A relation as a link writes it."""

    source: str
    target: str
    type: str


def require_text(value: object, field: str) -> None:
    """Raise :class:`InvalidInputError` unless ``value`` is a non-empty string."""
    if not isinstance(value, str) or not value:
        raise InvalidInputError(f"{field} must be a non-empty string", field=field)


def entity_rows(entities: Sequence[tuple[str, str, str]]) -> list[EntityRow]:
    """Checked ``(id, name, type)`` entities, one row per id (the first wins)."""
    rows: dict[str, EntityRow] = {}
    for eid, name, kind in entities:
        require_text(eid, "entities")
        norm = normalise_name(name) if isinstance(name, str) else ""
        if not norm:
            raise InvalidInputError(f"entity {eid!r} has an empty name", field="entities")
        rows.setdefault(eid, EntityRow(eid, name.strip(), norm, kind or GENERIC_TYPE))
    return list(rows.values())


def relation_rows(known: set[str], relations: Sequence[tuple[str, str, str]]) -> list[RelationRow]:
    """Checked ``(source, target, type)`` relations between ``known`` entities, without repeats."""
    rows: dict[tuple[str, str, str], RelationRow] = {}
    for source, target, kind in relations:
        if source not in known or target not in known:
            raise InvalidInputError(
                f"relation {source!r} -[{kind}]-> {target!r} names an entity not linked by this memory",
                field="relations",
            )
        require_text(kind, "relations")
        rows.setdefault((source, kind, target), RelationRow(source, target, kind))
    return list(rows.values())


#: ``next_layer(frontier, seen)``: the entities one edge away from ``frontier`` and not in ``seen``, with
#: their names.
NextLayer = Callable[[list[str], set[str]], dict[str, str]]


def expand(starts: dict[str, str], next_layer: NextLayer, max_hops: int) -> list[GraphNeighbour]:
    """Breadth-first search from ``starts`` (id -> name): each entity once, at its smallest hop count."""
    found = [GraphNeighbour(eid, name, 0) for eid, name in starts.items()]
    seen = set(starts)
    layer = starts
    for hop in range(1, max_hops + 1):
        if not layer:
            break
        layer = {eid: name for eid, name in next_layer(list(layer), seen).items() if eid not in seen}
        seen.update(layer)
        found.extend(GraphNeighbour(eid, name, hop) for eid, name in layer.items())
    return found


class GraphStoreAdapter(StoreAdapter):
    """Base of the :class:`~hello_memory.stores.graph.base.GraphStore` backends.

    Subclasses set :attr:`BACKEND` and implement ``_link``, ``_neighbours``, ``_mentions``,
    ``_entities_named``, ``unlink_memory``, ``counts``, ``forget_user`` and ``close``.
    """

    def link(
        self,
        user_id: str,
        memory_id: str,
        entities: Sequence[tuple[str, str, str]],
        relations: Sequence[tuple[str, str, str]],
    ) -> None:
        """Replace the memory's links with ``entities`` (id, name, type) and ``relations`` (src, dst, type).

        Everything is checked before anything is written: every relation endpoint must be one of the
        entities of the same call (a memory mentions what it relates).

        Raises:
            InvalidInputError: an empty id or name, or a relation endpoint not among ``entities``.
        """
        require_text(user_id, "user_id")
        require_text(memory_id, "memory_id")
        rows = entity_rows(entities)
        rels = relation_rows({r.id for r in rows}, relations)
        self._link(user_id, memory_id, rows, rels)
        logger.debug(
            "linked memory %s of user %s: %s entities, %s relations", memory_id, user_id, len(rows), len(rels)
        )

    def neighbours(
        self, user_id: str, entity_ids: Sequence[str], *, max_hops: int = 2
    ) -> list[GraphNeighbour]:
        """Entities within ``max_hops`` of any start (edges in both directions), nearest first.

        Unknown start ids are ignored; each entity appears once with its smallest hop count.
        """
        if isinstance(max_hops, bool) or not isinstance(max_hops, int) or max_hops < 0:
            raise InvalidInputError("max_hops must be an integer >= 0", field="max_hops")
        starts = list(dict.fromkeys(entity_ids))
        if not starts:
            return []
        found = self._neighbours(user_id, starts, max_hops)
        return sorted(found, key=lambda n: (n.hops, n.name, n.entity_id))

    def memories_mentioning(self, user_id: str, entity_ids: Sequence[str]) -> dict[str, list[str]]:
        """memory id -> the given entity ids it mentions (in the order given), memories sorted by id."""
        order = {e: i for i, e in enumerate(dict.fromkeys(entity_ids))}
        if not order:
            return {}
        found: dict[str, list[str]] = {}
        for memory_id, eid in sorted(set(self._mentions(user_id, list(order)))):
            found.setdefault(memory_id, []).append(eid)
        return {m: sorted(ids, key=order.__getitem__) for m, ids in found.items()}

    def find_entities(self, user_id: str, names: Sequence[str]) -> list[tuple[str, str]]:
        """(id, name) of the user's entities whose normalised name equals a normalised ``names`` entry."""
        keys = list(dict.fromkeys(k for k in map(normalise_name, names) if k))
        if not keys:
            return []
        rank = {k: i for i, k in enumerate(keys)}
        rows = sorted(self._entities_named(user_id, keys), key=lambda r: (rank[r[0]], r[1]))
        return [(eid, name) for _, eid, name in rows]

    @abstractmethod
    def unlink_memory(self, user_id: str, memory_id: str) -> None:
        """Remove the memory's mentions, its relations and entities no memory mentions any more."""

    @abstractmethod
    def counts(self, user_id: str) -> dict[str, int]:
        """``{"entities": n, "relations": m, "mentions": k}`` for the user."""

    @abstractmethod
    def forget_user(self, user_id: str) -> dict[str, int]:
        """Delete everything of the user; returns deleted counts per table, as ``counts()``."""

    # -- primitives ---------------------------------------------------------------------------------
    @abstractmethod
    def _link(self, user_id: str, memory_id: str, rows: list[EntityRow], rels: list[RelationRow]) -> None:
        """Replace the memory's links with the checked rows, in one step."""

    @abstractmethod
    def _neighbours(self, user_id: str, starts: list[str], max_hops: int) -> list[GraphNeighbour]:
        """The entities within ``max_hops`` of ``starts`` (distinct, not empty), in any order."""

    @abstractmethod
    def _mentions(self, user_id: str, entity_ids: list[str]) -> Iterable[tuple[str, str]]:
        """(memory id, entity id) of every mention of ``entity_ids`` (distinct, not empty)."""

    @abstractmethod
    def _entities_named(self, user_id: str, keys: list[str]) -> Iterable[tuple[str, str, str]]:
        """(normalised name, id, name) of the user's entities whose normalised name is in ``keys``."""
