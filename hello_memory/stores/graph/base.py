"""The knowledge-graph contract (:class:`GraphStore`): entities and relations per user.

Every backend passes the contract suite in :mod:`hello_memory.testing.graph_store`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol, runtime_checkable


@dataclass(frozen=True, slots=True)
class GraphNeighbour:
    """An entity reached from a start entity, with its hop distance."""

    entity_id: str
    name: str
    hops: int


@runtime_checkable
class GraphStore(Protocol):
    """Entities and relations per user; every call is scoped by ``user_id``.

    Semantics:
    - entity ids are stable: the same (user, normalised name) always maps to the same id;
    - ``link`` records that a memory mentions entities and asserts relations; re-linking a
      memory replaces its previous links;
    - ``unlink_memory`` removes the memory's mentions and the relations it asserted, and
      entities no memory mentions any more;
    - ``forget_user`` removes everything of the user and returns per-table counts.
    """

    @property
    def backend(self) -> str:
        """Short backend name, e.g. ``"sqlite+networkx"``."""
        ...

    def link(
        self,
        user_id: str,
        memory_id: str,
        entities: Sequence[tuple[str, str, str]],
        relations: Sequence[tuple[str, str, str]],
    ) -> None:
        """Record ``entities`` as (id, name, type) and ``relations`` as (source_id, target_id, type)."""
        ...

    def unlink_memory(self, user_id: str, memory_id: str) -> None:
        """Remove a memory's mentions, its relations and entities left without mentions."""
        ...

    def neighbours(
        self, user_id: str, entity_ids: Sequence[str], *, max_hops: int = 2
    ) -> list[GraphNeighbour]:
        """Entities within ``max_hops`` of any start entity (starts included with hops=0)."""
        ...

    def memories_mentioning(self, user_id: str, entity_ids: Sequence[str]) -> dict[str, list[str]]:
        """memory id -> the given entity ids it mentions."""
        ...

    def find_entities(self, user_id: str, names: Sequence[str]) -> list[tuple[str, str]]:
        """(id, name) of the user's entities whose normalised name is in ``names``."""
        ...

    def counts(self, user_id: str) -> dict[str, int]:
        """``{"entities": n, "relations": m, "mentions": k}`` for the user."""
        ...

    def forget_user(self, user_id: str) -> dict[str, int]:
        """Delete everything of the user; returns deleted counts per table."""
        ...

    def close(self) -> None:
        """Release resources; idempotent."""
        ...
