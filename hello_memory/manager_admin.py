"""``MemoryManager``'s whole-store operations (:class:`~hello_memory.api.MemoryAdminAPI`): export, import, reindex.

What ``hello-memory export --full``, ``import`` and ``reindex --graph`` call, locally or through a
service (:mod:`hello_memory.client.admin` is the same on the client side).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence

from hello_memory.core import MemoryCore
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

    def reindex_graph(self, user_id: str | None = None) -> ReindexReport:
        """Rebuild the knowledge graph of one user (or of every user) from the records."""
        from hello_memory.core.reindex import rebuild_graph

        return rebuild_graph(self._open(), None if user_id is None else check_id(user_id, "user_id"))
