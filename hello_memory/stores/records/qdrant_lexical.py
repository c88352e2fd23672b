"""Lexical documents with conversation context on Qdrant: plan before a write, refresh after it.

The FTS5 index rewrites a session's neighbouring documents inside the write's transaction
(:mod:`hello_memory.stores.records.sqlite_lexical`). Qdrant has no transaction across points, so
:class:`SessionContext` does it in two steps: :meth:`SessionContext.plan` reads each touched
session once and computes the written memories' documents with their neighbours (the record
upsert carries them); :meth:`SessionContext.refresh` reads the sessions again after the writes and
re-encodes every turn within the window of a change, in the session's order before *and* after
(a deleted or moved turn's old neighbours lose it). A session is read whole: the cost of a write
grows with its session's length (conversations have tens to hundreds of turns).

The refresh is derived data: a failure there is logged, not raised (the record write stands), and
:meth:`SessionContext.rebuild` re-encodes everything.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from hello_memory.errors import StoreError
from hello_memory.language.text import lexical_tokens
from hello_memory.models import MemoryItem, MemoryType
from hello_memory.stores.qdrant_connection import QdrantConnection, models
from hello_memory.stores.records import qdrant_codec as codec
from hello_memory.stores.sparse import LexicalEncoder, context_document, index_terms

logger = logging.getLogger(__name__)
_UPDATE_BATCH = 256
SessionKey = tuple[str, str]
Document = tuple[list[str], bool]  # a lexical document's terms, and whether it carries neighbours


@dataclass
class LexicalPlan:
    """What a write batch will index lexically, and which sessions to refresh afterwards."""

    documents: dict[str, Document] = field(default_factory=dict)
    seqs: dict[str, int] = field(default_factory=dict)
    sessions: dict[SessionKey, list[codec.Turn]] = field(default_factory=dict)
    changed: set[str] = field(default_factory=set)


class SessionContext:
    """Session-window lexical documents of one records collection."""

    def __init__(self, conn: QdrantConnection, collection: str, vector: str, window: int) -> None:
        self._conn, self._collection, self._vector, self.window = conn, collection, vector, window

    def turns(self, user_id: str, session_id: str) -> list[codec.Turn]:
        """The live episodic turns of a session, in conversation order."""
        qfilter = codec.scope_filter(
            user_id,
            types=[MemoryType.EPISODIC.value],
            session_id=session_id,
            deleted=False,
            extra=[codec.match("turn", True)],
        )
        points = self._conn.scroll_all(self._collection, qfilter, with_payload=codec.TURN_FIELDS)
        return codec.ordered(codec.turn_of(str(p.id), p.payload) for p in points)

    def plan(self, items: Sequence[MemoryItem]) -> LexicalPlan:
        """Documents (and insertion sequence numbers) of the items about to be written."""
        base = time.time_ns()
        plan = LexicalPlan(seqs={it.id: base + i for i, it in enumerate(items)})
        own = {it.id: index_terms(lexical_tokens(it.content)) for it in items}
        plan.documents = {k: (v, False) for k, v in own.items()}
        if self.window == 0:
            return plan
        keys: set[SessionKey] = set()
        for it in items:
            if codec.is_turn(it):
                keys.add((it.user_id, it.session_id))  # type: ignore[arg-type]  # is_turn: a session
        for key in sorted(keys):
            before = self.turns(*key)
            plan.sessions[key] = before
            current = {t.id: t for t in before}
            for it in items:
                if not _in_session(it, key):
                    continue
                plan.changed.add(it.id)
                if codec.has_context(it):
                    seq = current[it.id].seq if it.id in current else plan.seqs[it.id]
                    current[it.id] = codec.Turn(it.id, it.created_at.timestamp(), seq, tuple(own[it.id]))
                else:
                    current.pop(it.id, None)
            docs = self._documents(
                codec.ordered(current.values()), {it.id for it in items if _in_session(it, key)}
            )
            plan.documents.update((k, v) for k, v in docs.items() if k in own)
        return plan

    def plan_removal(self, points: Iterable[Any]) -> LexicalPlan:
        """The sessions whose documents lose the deleted points."""
        plan = LexicalPlan()
        if self.window == 0:
            return plan
        for p in points:
            pl = p.payload
            plan.changed.add(str(p.id))
            if pl.get("turn") and pl.get("session_id") is not None:
                key = (pl["user_id"], pl["session_id"])
                if key not in plan.sessions:
                    plan.sessions[key] = self.turns(*key)
        return plan

    def refresh(self, plan: LexicalPlan, encoder: LexicalEncoder) -> None:
        """Re-encode the turns around the plan's changes (failures are logged: see the module docstring)."""
        try:
            for key, before in plan.sessions.items():
                after = self.turns(*key)
                near = _near(before, plan.changed, self.window) | _near(after, plan.changed, self.window)
                docs = self._documents(after, near)
                stale = {k: v for k, v in docs.items() if plan.documents.get(k) != v}
                self._update(stale, encoder)
        except StoreError as e:
            logger.warning(
                "refreshing the lexical context of %d session(s) failed: %s", len(plan.sessions), e
            )

    def rebuild(self, encoder: LexicalEncoder, user_id: str | None = None) -> int:
        """Re-encode every live memory's lexical document (of one user, or all); returns how many."""
        m = models()
        must = [codec.empty("deleted_ts")] + (
            [codec.match("user_id", user_id)] if user_id is not None else []
        )
        fields = ["user_id", "session_id", "memory_type", *codec.TURN_FIELDS]
        points = self._conn.scroll_all(self._collection, m.Filter(must=must), with_payload=fields)
        docs: dict[str, Document] = {}
        sessions: dict[SessionKey, list[codec.Turn]] = {}
        for p in points:
            pl = p.payload
            turn = codec.turn_of(str(p.id), pl)
            if self.window and pl.get("turn") and pl.get("session_id") is not None:
                sessions.setdefault((pl["user_id"], pl["session_id"]), []).append(turn)
            else:
                docs[turn.id] = (list(turn.terms), False)
        for turns in sessions.values():
            ordered = codec.ordered(turns)
            docs.update(self._documents(ordered, {t.id for t in ordered}))
        self._update(docs, encoder)
        return len(docs)

    def _documents(self, turns: Sequence[codec.Turn], wanted: set[str]) -> dict[str, Document]:
        w = self.window
        out: dict[str, Document] = {}
        for i, t in enumerate(turns):
            if t.id in wanted:
                before = [x.terms for x in turns[max(0, i - w) : i]]
                after = [x.terms for x in turns[i + 1 : i + 1 + w]]
                out[t.id] = (context_document(before, t.terms, after), bool(before or after))
        return out

    def _update(self, docs: dict[str, Document], encoder: LexicalEncoder) -> None:
        m = models()
        full = self._conn.full(self._collection)
        points, empty = [], []
        for pid, (terms, context) in docs.items():
            indices, values = encoder.document(terms, context=context)
            if indices:
                points.append(
                    m.PointVectors(
                        id=pid, vector={self._vector: m.SparseVector(indices=indices, values=values)}
                    )
                )
            else:
                empty.append(pid)
        for start in range(0, len(points), _UPDATE_BATCH):
            self._conn.call(
                "update lexical vectors",
                "update_vectors",
                full,
                points=points[start : start + _UPDATE_BATCH],
                wait=True,
            )
        if empty:
            selector = m.PointIdsList(points=empty)
            self._conn.call(
                "drop lexical vectors",
                "delete_vectors",
                full,
                vectors=[self._vector],
                points=selector,
                wait=True,
            )


def _in_session(item: MemoryItem, key: SessionKey) -> bool:
    return (item.user_id, item.session_id) == key


def _near(turns: Sequence[codec.Turn], changed: set[str], window: int) -> set[str]:
    """Ids of the turns within ``window`` of a changed one (the changed ones included)."""
    out: set[str] = set()
    for i, t in enumerate(turns):
        if t.id in changed:
            out.update(x.id for x in turns[max(0, i - window) : i + window + 1])
    return out
