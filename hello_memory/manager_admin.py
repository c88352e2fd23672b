"""``MemoryManager``'s whole-store operations (:class:`~hello_memory.api.MemoryAdminAPI`): export, import, reindex.

What ``hello-memory export --full``, ``import`` and ``reindex --graph`` call, locally or through a
service (:mod:`hello_memory.client.admin` is the same on the client side); ``reindex --vectors``
(:meth:`ManagerAdmin.relayout_vectors`) only on a data directory.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from typing import Any

from hello_memory.core import MemoryCore
from hello_memory.errors import InvalidInputError
from hello_memory.models import ImportReport, ReindexReport
from hello_memory.validation import check_flag, check_id


class ManagerAdmin:
    """Export, import and graph reindex on the open stores; mixed into ``MemoryManager``."""

    def _open(self) -> MemoryCore:
        raise NotImplementedError

    def export_lines(self, *, vectors: bool = True, users: Sequence[str] | None = None) -> Iterator[str]:
        """Every user's memories (or ``users``'), with history and vectors, as JSON Lines.

        The format is described in :mod:`hello_memory.core.transfer`; :meth:`import_lines` reads it
        back in either mode (a data directory or servers).
        """
        from hello_memory.core.transfer import export_lines

        chosen = None if users is None else [check_id(u, "users") for u in users]
        return export_lines(self._open(), vectors=check_flag(vectors, "vectors"), users=chosen)

    def import_lines(self, lines: Iterable[str], *, reembed: bool = False) -> ImportReport:
        """Import an export written by :meth:`export_lines`; idempotent (see :mod:`hello_memory.core.transfer`)."""
        from hello_memory.core.transfer import import_lines

        return import_lines(self._open(), lines, reembed=check_flag(reembed, "reembed"))

    def relayout_vectors(self) -> list[str]:
        """Rebuild every collection of the embedded vector index in the layout ``settings.vector_memory``
        names (``mapped`` or ``compact``); returns the collections rebuilt (those already in it are left).

        A collection keeps the layout it was created with until then; opening one in another layout
        logs a warning that names it and this command (``hello-memory reindex --vectors``).

        Raises:
            InvalidInputError: the vectors are on a Qdrant server (its collections are configured there).
        """
        vectors = self._bundle_vectors()
        relayout = getattr(vectors, "relayout", None)
        if relayout is None:
            raise InvalidInputError(
                f"the vector index ({type(vectors).__name__}) has no vector_memory layout: it applies to the "
                "embedded index of a data directory; a Qdrant server's collections are configured on the server"
            )
        return [name for name in sorted(vectors.layouts()) if relayout(name)]

    def _bundle_vectors(self) -> Any:
        raise NotImplementedError

    def reindex_graph(self, user_id: str | None = None) -> ReindexReport:
        """Rebuild the knowledge graph of one user (or of every user) from the records."""
        from hello_memory.core.reindex import rebuild_graph

        return rebuild_graph(self._open(), None if user_id is None else check_id(user_id, "user_id"))
