"""The lexical (FTS5) side of the record store: tokens, selective query terms, conversation context.

Lexical semantics (what any other record store must reproduce to rank the same way):

- **Tokens.** A memory's own tokens are :func:`hello_memory.language.text.lexical_tokens` of its content
  (stemmed English words, jieba words plus character bigrams for Chinese), made FTS-safe by
  :func:`fts_tokens` and stored in the ``lex`` column.
- **Conversation context.** A *conversation turn* is an episodic memory with a ``session_id`` and
  ``event_type == "conversation"`` (:data:`TURN_EVENT_TYPE`; ``add(messages, session_id=...)``,
  ``MemoryTool.auto_record_conversation`` and the benchmark adapters set it; ``event_type`` cannot
  change after the add; a session and participants alone do not make a turn: BENCHMARKS.md
  "Conversations" measures why). The FTS document
  of a turn is the own tokens of up to ``context_window`` live turns before it in its session (by
  ``created_at``, then insertion order), its own tokens twice, then up to ``context_window`` live
  turns after it. Every other memory — notes, document loads, Q&A records, facts — is indexed with
  its own tokens only, even when it shares a session with turns, and is never a turn's neighbour.
  A question about a conversation often matches the turn *around* the evidence (the question that
  prompted it, the reply that names the topic); its cross-validated effect is in BENCHMARKS.md.
  Before it was limited to turns, unrelated app memories of one session (document loads, Q&A
  records, notes) matched a question through the one of them that named its topic.
  The documents are rewritten inside the caller's transaction whenever a neighbourhood changes
  (add, content update, soft delete, restore, delete), so the index never disagrees with the live
  rows; a file indexed under another window or rule is re-indexed when opened.
- **Query terms.** The query's distinct tokens that some memory holds, without those found in more
  than ``COMMON_TERM_DOCS`` FTS documents when rarer ones remain, the ``MAX_QUERY_TERMS`` rarest
  kept, and of those the rarest while their documents add up to at most ``POSTINGS_BUDGET``
  (always the rarest one); they are OR-ed. The budget bounds what one query ranks however large
  the memory grows: FTS5 scores every document an OR query matches before it takes the top ones.
- **Score.** FTS5 ``bm25`` (k1 = 1.2, b = 0.75, ``idf = log((N − n + 0.5) / (n + 0.5))``, at least
  1e-6; N documents, n holding the term; statistics over every user's documents), higher is
  better. Search fuses it relative to the best candidate (:mod:`hello_memory.core.relevance`).
- **Evidence** (the relevance floor): :meth:`ConversationLexicalIndex.lexical_evidence`, the
  idf-weighted share of the query's distinct terms that a memory's FTS document holds, with an idf
  that counts the query's unknown terms and never vanishes in a small memory (its docstring has
  the formula). Only candidates that the vector side does not already admit need it.
"""

from __future__ import annotations

import hashlib
import logging
import math
import re
import sqlite3
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any

from hello_memory.models import MemoryType

logger = logging.getLogger(__name__)

COMMON_TERM_DOCS = 2000
TURN_EVENT_TYPE = "conversation"  # the event_type that marks a conversation turn (see above)
# Stored with the window: a file indexed under another rule is re-indexed when opened.
CONTEXT_RULE = "conversation-turns-v1"
_IS_TURN = "json_extract(fields, '$.event_type') = 'conversation'"
POSTINGS_BUDGET = COMMON_TERM_DOCS  # documents the kept terms may match together (see "Query terms" above)
# Walking one posting of the user's scope token, relative to joining and ranking one matched
# document (BENCHMARKS.md "Scale (issue 25)" has the measurement).
SCOPE_POSTING_COST = 0.025
MAX_QUERY_TERMS = 32  # the rarest ones; a pasted paragraph must not become a 300-term OR query
EVIDENCE_MIN_DOCS = 1000  # lexical evidence treats a smaller memory as a sample of one this size
_FTS_SAFE = re.compile(r"[^\w]", re.UNICODE)


def scope_token(user_id: str) -> str:
    """FTS token that restricts a MATCH to one user (the join on user_id still enforces it)."""
    return "u" + hashlib.sha256(user_id.encode("utf-8")).hexdigest()[:24]


def fts_tokens(tokens: Iterable[str]) -> list[str]:
    """Lexical tokens made safe for FTS5 (only word characters; empty ones dropped)."""
    out = []
    for t in tokens:
        s = _FTS_SAFE.sub("", t)
        if s:
            out.append(s.lower())
    return out


def evidence_weights(df: dict[str, int], terms: Sequence[str], documents: int) -> dict[str, float]:
    """The lexical-evidence weight of each query term: ``log(1 + (N' − n + 0.5) / (n + 0.5))``.

    ``n`` is the number of documents holding the term (0 when none does), ``N' = max(documents,
    EVIDENCE_MIN_DOCS)`` (:meth:`ConversationLexicalIndex.lexical_evidence`; every record store uses it).
    """
    n = max(documents, EVIDENCE_MIN_DOCS)
    return {t: math.log(1 + (n - df.get(t, 0) + 0.5) / (df.get(t, 0) + 0.5)) for t in terms}


def _within_budget(terms: list[str], df: dict[str, int]) -> tuple[list[str], int]:
    """The prefix of ``terms`` (rarest first) whose documents add up to at most ``POSTINGS_BUDGET``
    (at least one term), and that sum."""
    if not terms:
        return [], 0
    kept, total = terms[:1], df[terms[0]]
    for t in terms[1:]:
        if total + df[t] > POSTINGS_BUDGET:
            break
        kept.append(t)
        total += df[t]
    return kept, total


class ConversationLexicalIndex:
    """Mixin for the record store: FTS documents with conversation context, selective query terms.

    Needs ``self.context_window`` and ``self.query`` (from :class:`SQLiteDatabase`).
    """

    context_window: int = 0
    # Document frequencies read from ``memories_vocab``: term → (docs, ``_fts_changes`` when read).
    # FTS5 counts a term's documents by walking its posting list (~22 ms per query at 100k
    # memories for common terms), so a count is reused while it cannot have crossed
    # ``COMMON_TERM_DOCS``: every FTS document written or deleted moves a count by at most one.
    _df_cache: dict[str, tuple[int, int]]  # set by the store's __init__
    _user_docs: dict[str, tuple[int, int]]  # user → (live memories, ``_fts_changes`` when counted)
    _fts_changes: int = 0
    _doc_count: tuple[int, int] | None = None  # (live memories, ``_fts_changes`` when counted)

    if TYPE_CHECKING:  # provided by SQLiteDatabase

        def query(self, sql: str, params: Sequence[Any] = ()) -> list[Any]: ...

    @staticmethod
    def _rowid(conn: sqlite3.Connection, mid: str) -> int | None:
        row = conn.execute("SELECT rowid FROM memories WHERE id=?", (mid,)).fetchone()
        return None if row is None else int(row[0])

    def _context_rows(self, conn: sqlite3.Connection, rowid: int) -> tuple[list[Any], list[Any]]:
        """``(before, after)`` ``(rowid, lex)`` of the live session neighbours of ``rowid``, nearest first."""
        w = self.context_window
        me = conn.execute(
            f"SELECT user_id, session_id, memory_type, created_at, {_IS_TURN} FROM memories WHERE rowid=?",
            (rowid,),
        ).fetchone()
        if w == 0 or me is None or me[1] is None or me[2] != MemoryType.EPISODIC.value or not me[4]:
            return [], []
        base = (
            "SELECT rowid, lex FROM memories INDEXED BY ix_mem_user_session_created "
            "WHERE user_id=? AND session_id=? AND created_at {op} ? AND memory_type='episodic' "
            f"AND deleted_at IS NULL AND rowid<>? AND (created_at<>? OR rowid {{op}} ?) AND {_IS_TURN} "
            "ORDER BY created_at {order}, rowid {order} LIMIT ?"
        )
        args = (me[0], me[1], me[3], rowid, me[3], rowid, w)
        before = conn.execute(base.format(op="<=", order="DESC"), args).fetchall()
        after = conn.execute(base.format(op=">=", order="ASC"), args).fetchall()
        return before, after

    def _context_rowids(self, conn: sqlite3.Connection, rowid: int) -> list[int]:
        before, after = self._context_rows(conn, rowid)
        return [r[0] for r in before + after]

    def _refresh(
        self, conn: sqlite3.Connection, rowids: Iterable[int], *, include_context: bool = True
    ) -> None:
        """Rewrite the FTS documents of ``rowids`` (and, by default, of their session neighbours)."""
        todo = set(rowids)
        if include_context and self.context_window:
            for rowid in list(todo):
                todo.update(self._context_rowids(conn, rowid))
        for rowid in sorted(todo):
            self._write_fts(conn, rowid)

    def _fts_changed(self, documents: int = 1) -> None:
        """Record FTS documents written or deleted (before the change: a rollback stays safe)."""
        self._fts_changes += documents

    def _forget_frequencies(self) -> None:
        """Drop every cached count (after bulk changes to the FTS table)."""
        self._df_cache, self._user_docs, self._doc_count = {}, {}, None

    def _write_fts(self, conn: sqlite3.Connection, rowid: int) -> None:
        self._fts_changed(2)
        conn.execute("DELETE FROM memories_fts WHERE rowid=?", (rowid,))
        row = conn.execute("SELECT user_id, lex, deleted_at FROM memories WHERE rowid=?", (rowid,)).fetchone()
        if row is None or row[2] is not None:
            return
        before, after = self._context_rows(conn, rowid)
        if before or after:
            parts = [r[1] for r in reversed(before)] + [row[1], row[1]] + [r[1] for r in after]
            text = " ".join(p for p in parts if p)
        else:
            text = row[1]
        conn.execute(
            "INSERT INTO memories_fts(rowid, scope, tokens) VALUES (?,?,?)",
            (rowid, scope_token(row[0]), text),
        )

    def _sync_context_window(self, conn: sqlite3.Connection) -> None:
        """Rebuild the session memories' FTS documents when the file was indexed with another window
        or context rule (files written before :data:`CONTEXT_RULE` stored the window alone)."""
        row = conn.execute("SELECT value FROM meta WHERE key='lexical_context_window'").fetchone()
        if row is not None and row[0] == f"{self.context_window}/{CONTEXT_RULE}":
            return
        conn.execute("BEGIN IMMEDIATE")
        try:
            rowids = conn.execute(
                "SELECT rowid FROM memories WHERE memory_type='episodic' AND session_id IS NOT NULL "
                "AND deleted_at IS NULL"
            ).fetchall()
            for (rowid,) in rowids:
                self._write_fts(conn, rowid)
            conn.execute(
                "INSERT OR REPLACE INTO meta(key, value) VALUES ('lexical_context_window', ?)",
                (f"{self.context_window}/{CONTEXT_RULE}",),
            )
        except BaseException:
            conn.execute("ROLLBACK")
            raise
        conn.execute("COMMIT")
        if rowids:
            logger.info(
                "rebuilt the lexical context of %d memories (window %d)", len(rowids), self.context_window
            )

    def lexical_evidence(self, user_id: str, tokens: Sequence[str], ids: Sequence[str]) -> dict[str, float]:
        """How much of the query each of the user's memories among ``ids`` matches, in [0, 1].

        The idf-weighted share of the query's distinct terms that the memory's FTS document holds
        (a conversation turn's document includes its context): ``Σ w(t) for t in query ∩ document /
        Σ w(t) for t in query``, ``w(t) = log(1 + (N' − n + 0.5) / (n + 0.5))`` with ``n`` the FTS
        documents holding ``t`` (0 for a term no memory has) and ``N' = max(N, EVIDENCE_MIN_DOCS)``.
        Unlike bm25, it is absolute: a query about something never stored keeps the weight of its
        unknown terms, so one shared word is weak evidence; and ``N'`` keeps a small memory (where
        every term is in most documents, and bm25's idf is 0) from having no evidence at all.
        """
        terms = list(dict.fromkeys(fts_tokens(tokens)))
        if not terms or not ids:
            return {}
        weight = evidence_weights(self._frequencies(terms), terms, self._document_count())
        total = sum(weight.values())
        out: dict[str, float] = {}
        for start in range(0, len(ids), 500):
            part = list(ids[start : start + 500])
            rows = self.query(
                "SELECT m.id, f.tokens FROM memories m JOIN memories_fts f ON f.rowid = m.rowid "
                f"WHERE m.id IN ({','.join('?' * len(part))}) AND +m.user_id=?",
                [*part, user_id],
            )
            for mid, text in rows:
                held = set(text.split())
                out[mid] = sum(w for t, w in weight.items() if t in held) / total
        return out

    def _document_count(self) -> int:
        """FTS documents of every user (FTS5's N), cached until a tenth of them have changed."""
        now = self._fts_changes
        hit = self._doc_count
        if hit is None or now - hit[1] > max(100, hit[0] // 10):
            rows = self.query("SELECT COUNT(*) FROM memories WHERE deleted_at IS NULL")
            hit = self._doc_count = (int(rows[0][0]), now)
        return hit[0]

    def _selective_terms(self, terms: list[str]) -> tuple[list[str], int | None]:
        """Drop terms found in more than ``COMMON_TERM_DOCS`` memories when rarer ones remain.

        BM25 gives such terms almost no weight, but ranking every memory they match dominates
        the query time at 100k memories (a term in half of them costs tens of milliseconds).
        Returns the terms and how many documents they match at most (``None``: not counted).
        """
        if len(terms) < 2:
            return terms, None
        df = self._frequencies(terms)
        present = [t for t in terms if df.get(t, 0) > 0]  # a term no memory has cannot match
        kept = sorted((t for t in present if df[t] <= COMMON_TERM_DOCS), key=lambda t: df[t])[
            :MAX_QUERY_TERMS
        ]
        if not kept:  # only common terms: keep the rarest, by exact counts
            df = self._frequencies(present, exact=True)
            kept = sorted(present, key=lambda t: df[t])[:1]
        return _within_budget(kept, df)

    def _scope_pays(self, user_id: str, postings: int | None) -> bool:
        """Whether to intersect a MATCH with the user's scope token (the JOIN on user_id enforces
        isolation either way; this only chooses the cheaper plan).

        With the scope, FTS5 walks the scope's posting list, as long as the user's memories;
        without it, every document the terms match, of every user, is joined to its row and
        ranked before the JOIN drops the other users' (each far dearer than a posting walked:
        BENCHMARKS.md "Scale (issue 25)"). The scope pays when walking the user's
        postings (:data:`SCOPE_POSTING_COST` of a ranked match each) costs less than ranking the
        matches expected from other users (``postings`` × their share of the documents): never
        for the only user of a store, nearly always in a store of many. The counts are cached
        and re-read after a tenth of them in FTS changes: a stale count only picks a slower plan.
        """
        if postings is None:
            return True
        now = self._fts_changes
        hit = self._user_docs.get(user_id)
        if hit is None or now - hit[1] > max(100, hit[0] // 10):
            rows = self.query(
                "SELECT COUNT(*) FROM memories WHERE user_id=? AND deleted_at IS NULL", (user_id,)
            )
            hit = self._user_docs[user_id] = (int(rows[0][0]), now)
        mine = hit[0]
        others = postings * (1.0 - mine / max(self._document_count(), mine, 1))
        return mine * SCOPE_POSTING_COST < others

    def _frequencies(self, terms: list[str], *, exact: bool = False) -> dict[str, int]:
        """Documents per term: exact, or cached and provably on the same side of ``COMMON_TERM_DOCS``.

        A cached count of a common term is reused while fewer FTS documents have changed since it
        was read than it exceeds the threshold by; rare terms (cheap to count) are always re-read.
        """
        now, df, todo = self._fts_changes, {}, []
        for t in terms:
            hit = self._df_cache.get(t)
            if not exact and hit is not None and hit[0] - (now - hit[1]) > COMMON_TERM_DOCS:
                df[t] = hit[0]
            else:
                todo.append(t)
        if todo:
            rows = self.query(
                f"SELECT term, doc FROM memories_vocab WHERE col='tokens' AND term IN ({','.join('?' * len(todo))})",
                todo,
            )
            for term, docs in rows:
                df[term] = docs
                if docs > COMMON_TERM_DOCS:
                    self._df_cache[term] = (docs, now)
        return df
