"""``MemoryAPI``: the contract of :class:`~hello_memory.MemoryManager` and of its remote client.

Code written against this protocol runs unchanged in process (``MemoryManager``) or against a
memory service (:class:`~hello_memory.client.remote.RemoteMemory`, ``hello-memory serve``): the same
method names, arguments, return types (the pydantic models of :mod:`hello_memory.models`) and
errors (the :class:`~hello_memory.errors.HelloMemoryError` subclasses). Switching is one line.
:class:`MemoryAdminAPI` is the same promise for the whole-store operations (export, import, reindex).
For asyncio, :mod:`hello_memory.api_async` has both with awaitable methods.

Example:
    >>> from hello_memory import MemoryManager
    >>> from hello_memory.api import MemoryAPI
    >>> def remember(memory: MemoryAPI, text: str) -> str:
    ...     return memory.add(text, memory_type="semantic").id
    >>> issubclass(MemoryManager, MemoryAPI)  # doctest: +SKIP
    True
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from datetime import datetime
from typing import Any, Protocol, overload, runtime_checkable

from hello_memory.context import ContextBlock
from hello_memory.models import (
    ConsolidateReport,
    ForgetReport,
    HistoryEntry,
    ImportReport,
    MemoryItem,
    MemoryStats,
    MemoryType,
    ReindexReport,
    ScoredMemory,
)

Query = str | Sequence[Mapping[str, Any] | tuple[str, str]]
#: A conversation: ``[{"role": ..., "content": ..., "name"?: ..., "created_at"?: ...}, ...]`` (see ``add``).
Messages = Sequence[Mapping[str, Any]]
TimeRange = tuple[datetime | str | None, datetime | str | None]


@runtime_checkable
class MemoryAPI(Protocol):
    """Multi-tier memory of one or many users (see :class:`~hello_memory.MemoryManager` for details).

    Every call that takes ``user_id=None`` acts for :attr:`user_id`. Errors: ``InvalidInputError``
    for bad arguments (nothing stored), ``NotFoundError`` for an absent id or another user's,
    ``StoreError``/``EmbeddingError`` when a backend fails; through a service also
    ``PermissionDeniedError`` (the API key does not grant the user) and ``ServiceError``.
    """

    @property
    def user_id(self) -> str:
        """The default user of every call."""
        ...

    @property
    def enabled(self) -> tuple[MemoryType, ...]:
        """The memory tiers this memory serves."""
        ...

    @overload
    def add(
        self, content: str, *, memory_type: str | MemoryType | None = None, importance: float = 0.5,
        user_id: str | None = None, session_id: str | None = None, created_at: datetime | str | None = None,
        metadata: dict[str, Any] | None = None, memory_id: str | None = None, **fields: Any,
    ) -> MemoryItem: ...
    @overload
    def add(
        self, content: Messages, *, memory_type: str | MemoryType | None = None, importance: float = 0.5,
        user_id: str | None = None, session_id: str | None = None, created_at: datetime | str | None = None,
        metadata: dict[str, Any] | None = None, memory_id: str | None = None, **fields: Any,
    ) -> list[MemoryItem]: ...
    def add(
        self,
        content: str | Messages,
        *,
        memory_type: str | MemoryType | None = None,
        importance: float = 0.5,
        user_id: str | None = None,
        session_id: str | None = None,
        created_at: datetime | str | None = None,
        metadata: dict[str, Any] | None = None,
        memory_id: str | None = None,
        **fields: Any,
    ) -> MemoryItem | list[MemoryItem]:
        """Store one memory and return it (with its full UUID), or a conversation and return its turns.

        ``memory_type`` defaults to working memory for a text. ``fields`` sets type-specific fields
        (``event_type``, ``tags``, ``source_path``, ...). ``memory_id`` (a full UUID chosen by the
        caller) makes the call idempotent: a retry with the same id and content returns the stored
        memory and stores nothing; the same id with other content, type or user raises
        :class:`~hello_memory.errors.IdConflictError`.

        **A conversation** — ``content`` a list of chat messages ``{"role", "content", "name"?, "id"?,
        "created_at"?, "memory_id"?}`` (OpenAI's format), ``session_id`` required — is stored as one
        episodic memory per message, returned as a list in the messages' order: the message's text as
        content (``"Caroline: text"`` when it has a ``name``: questions name people), its speaker
        (``name``, else ``role``) as participant, ``event_type="conversation"``,
        its ``created_at`` or else the call's ``created_at`` (default now) plus its position in
        milliseconds. Search then reads each turn with the turns around it, prefers the turns of a
        person the query names, and finds them by time. ``importance``, ``metadata`` and ``fields``
        apply to every new turn. The conversation may be sent again and again — whole, as a window
        of its last messages, or only the new ones: the messages are matched against the session's
        stored turns (:mod:`hello_memory.core.conversations`) and only what is new is stored; a
        message with its own ``id`` is matched by it; an edited message (a changed text under its
        ``id``, or the one difference in an otherwise matching overlap) updates its turn in place;
        a turn the user updated keeps its content, and one the user forgot or removed stays so (no
        turn returned for it, no error). Turn ids are HMACs under a random key of the store: no one
        else can compute them.

        Raises ``InvalidInputError`` for bad input (for a conversation: any bad message) and
        ``EmbeddingError``/``StoreError`` when a backend fails — in every case nothing is stored.
        """
        ...

    def add_many(self, items: Iterable[dict[str, Any]]) -> list[MemoryItem]:
        """Store many memories at once (batched embedding); all are validated before any is stored.

        Each item is a dict of :meth:`add`'s arguments (at least ``content``), ``memory_id``
        included: a retried batch stores only what is not stored yet and returns every item, in
        order, as stored. The whole batch is stored or none of it.
        """
        ...

    def get(self, memory_id: str, *, user_id: str | None = None, include_deleted: bool = False) -> MemoryItem:
        """One memory of the user; ``NotFoundError`` if absent or another user's."""
        ...

    def get_all(
        self,
        *,
        user_id: str | None = None,
        memory_type: str | MemoryType | None = None,
        limit: int | None = None,
        include_deleted: bool = False,
    ) -> list[MemoryItem]:
        """The user's memories, newest first."""
        ...

    def search(
        self,
        query: Query,
        *,
        user_id: str | None = None,
        memory_types: Sequence[str | MemoryType] | None = None,
        limit: int = 10,
        min_importance: float = 0.0,
        min_score: float | None = None,
        time_range: TimeRange | None = None,
        session_id: str | None = None,
        reference_time: datetime | str | None = None,
    ) -> list[ScoredMemory]:
        """One ranked list across tiers, each hit with its score breakdown.

        Nothing is a correct answer: a question none of whose candidates clears the relevance floor
        gets an empty list. Otherwise the memories that cleared it come first, by final score, and
        (``Settings.floor_scope="question"``, the default) the other candidates follow them, by score,
        each with ``hit.below_floor`` true: evidence at depth for a caller that ranks, never for a
        prompt (:func:`hello_memory.models.cleared` keeps the others out; ``build_context``, the tools
        and the app do). ``query`` is a string or the conversation so far (``[{"role": "user", "content": ...}, ...]``
        or ``(role, content)`` pairs): its human turns become the query (see
        :mod:`hello_memory.language.queries`). Times the query names ("yesterday", "three weeks ago",
        "上周二") are resolved against ``reference_time``, the moment it is asked (default: now; see
        :mod:`hello_memory.language.timeref`): memories made then are preferred by
        ``Settings.time_weight``, unlike ``time_range``, which excludes everything outside it.
        """
        ...

    def history(self, memory_id: str, *, user_id: str | None = None) -> list[HistoryEntry]:
        """Every change of one memory, oldest first; a forgotten (restorable) memory keeps its history.

        Raises:
            NotFoundError: the user holds no memory with this id, exactly as :meth:`get` with
                ``include_deleted=True``: another user's, never stored, or removed (``remove`` and a
                purge delete a memory's history with it, by design).
        """
        ...

    def update(
        self,
        memory_id: str,
        content: str | None = None,
        importance: float | None = None,
        metadata: dict[str, Any] | None = None,
        *,
        user_id: str | None = None,
    ) -> MemoryItem:
        """Change content (re-embedded), importance and/or metadata (merged into the old dict).

        All-or-nothing in embedded mode: when the vector index or the graph cannot take the change,
        the memory stays exactly as it was (old content searchable, no history entry) and
        ``StoreError`` is raised; the caller can simply retry. With records on a server, where each
        record is committed when written, a failed graph write leaves the update committed and
        raises ``IndexPendingError`` (see :mod:`hello_memory.core.unit`).
        """
        ...

    def remove(self, memory_id: str, *, user_id: str | None = None) -> None:
        """Delete a memory from every store, history and graph edges included (not restorable).

        Raises :class:`~hello_memory.errors.IndexPendingError` when the memory is deleted but its
        vector or graph links could not be removed yet (completed on the next open).
        """
        ...

    def restore(self, memory_id: str, *, user_id: str | None = None) -> MemoryItem:
        """Undo a soft delete (``forget`` without ``purge``); all-or-nothing like :meth:`update`."""
        ...

    def forget(
        self,
        strategy: str = "importance_based",
        threshold: float = 0.1,
        max_age_days: float = 30,
        *,
        capacity: int | None = None,
        memory_types: Sequence[str | MemoryType] | None = None,
        user_id: str | None = None,
        purge: bool = False,
    ) -> ForgetReport:
        """Forget by ``importance_based``, ``time_based``, ``capacity_based`` or ``combined`` policy.

        Restorable (:meth:`restore`) unless ``purge``; returns what was forgotten and why.
        """
        ...

    def consolidate(
        self,
        from_type: str | MemoryType = "working",
        to_type: str | MemoryType = "episodic",
        importance_threshold: float = 0.7,
        *,
        user_id: str | None = None,
    ) -> ConsolidateReport:
        """Promote important memories to a longer-lived tier, atomically and de-duplicated.

        Only towards longer-lived tiers: working → episodic, working → semantic, episodic →
        semantic. Any other pair (back towards working memory, or perceptual as source or target)
        raises :class:`InvalidInputError` and changes nothing.
        """
        ...

    def clear_all(self, user_id: str | None = None) -> int:
        """Delete all of one user's memories (never another user's); returns how many."""
        ...

    def forget_user(self, user_id: str) -> dict[str, int]:
        """Remove every memory of ``user_id`` from every store; returns per-store counts.

        Knowledge bases are not memories: in process, RAG namespaces stay (clear the app's
        ``docs_<user>`` with ``RAGPipeline.clear``); the memory service deletes the user's default
        knowledge base as well (``knowledge_base:…`` counts; docs/service.md, "Users and deletion").
        """
        ...

    def stats(self, *, user_id: str | None = None) -> MemoryStats:
        """Counts per tier, deleted count, graph size and the backends in use."""
        ...

    def summary(self, limit: int = 10, *, user_id: str | None = None) -> str:
        """A readable summary: counts per tier, then the most important memories of each.

        The memories are rendered as quoted evidence: one JSON-quoted line each inside a
        ``<memory_evidence>`` block, so a stored ``assistant: ...`` line or ``<|im_start|>system``
        reaches a model as data, never as chat structure.
        """
        ...

    def build_context(
        self,
        query: str,
        *,
        budget_tokens: int = 800,
        floor: float | None = None,
        position: str = "user",
        user_id: str | None = None,
        limit: int = 20,
    ) -> ContextBlock:
        """Relevant memories rendered as labelled evidence within a token budget (docs/design.md §7).

        Only memories that cleared the relevance floor (never a ``below_floor`` hit of :meth:`search`);
        empty when nothing stored is relevant.
        """
        ...

    def close(self) -> None:
        """Release the stores or the connection; idempotent."""
        ...

    def __enter__(self) -> MemoryAPI:
        """``with`` support: the memory itself."""
        ...

    def __exit__(self, *exc: object) -> None:
        """``with`` support: :meth:`close`."""
        ...


@runtime_checkable
class MemoryAdminAPI(Protocol):
    """Whole-store operations: moving a memory (export, import) and repairing it (graph reindex).

    Beside :class:`MemoryAPI`, not in it: these are an operator's tasks, not an agent's, so the
    tools, the MCP server and the app (which take a ``MemoryAPI``) never offer them. Both
    :class:`~hello_memory.MemoryManager` and :class:`~hello_memory.client.remote.RemoteMemory`
    implement it, with the same arguments, results and errors. Through a service, an API key reaches
    only its own user (``users=None`` / ``user_id=None`` then mean that user; a line or a name of
    another user is ``PermissionDeniedError``); the admin key, or a loopback service without keys,
    reaches every user.

    Example:
        >>> from hello_memory.api import MemoryAdminAPI
        >>> def backup(memory: MemoryAdminAPI, path: str) -> None:
        ...     with open(path, "w", encoding="utf-8") as out:
        ...         out.writelines(line + "\n" for line in memory.export_lines())
    """

    def export_lines(self, *, vectors: bool = True, users: Sequence[str] | None = None) -> Iterator[str]:
        """Every user's memories (or ``users``'), with history and vectors, as JSON Lines (a header first).

        Lazy: the lines are produced (or received) as they are iterated, never held all at once.
        """
        ...

    def import_lines(self, lines: Iterable[str], *, reembed: bool = False) -> ImportReport:
        """Import an export (idempotent by id; counts verified against its header)."""
        ...

    def reindex_graph(self, user_id: str | None = None) -> ReindexReport:
        """Rebuild the knowledge graph of one user (``None``: of every user reached) from the records."""
        ...
