"""Value types every dataset loader returns: documents, queries and the task that holds them.

A *corpus* is one isolated memory space (one LoCoMo conversation, one MADial user, the pooled
LongMemEval haystack): a system indexes each corpus separately and answers a query only from the
corpus named by ``Query.corpus_id``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from enum import Enum
from typing import Any


@dataclass(frozen=True, slots=True)
class Doc:
    """One retrievable unit (a turn, a memory, a whole document to be chunked).

    Example:
        >>> Doc("D1:3", "Caroline: I went to a support group.", None, "1", "Caroline").doc_id
        'D1:3'
    """

    doc_id: str
    text: str
    created_at: datetime | None = None
    session_id: str | None = None
    speaker: str | None = None
    metadata: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class Query:
    """One question with its gold units.

    Attributes:
        gold: ids of the gold units. For ``Match.ID`` tasks these are doc ids; for ``Match.SPAN``
            tasks they are span ids ``"<doc>#<start>-<end>"`` (see :mod:`benchmarks.chunking`).
        gold_sessions: coarser session-level gold (LongMemEval ``answer_session_ids``); empty when
            the dataset has none.
        created_at: when the question is asked (LongMemEval ``question_date``), if known.
        turns: for a query that is a dialogue (MADial), its ``(speaker, text)`` turns in order;
            ``text`` is then their plain join. Systems may use the structure (e.g. user turns only).
    """

    qid: str
    text: str
    corpus_id: str
    gold: frozenset[str]
    category: str | None = None
    created_at: datetime | None = None
    gold_sessions: frozenset[str] = frozenset()
    turns: tuple[tuple[str, str], ...] = ()


class Match(str, Enum):
    """How a retrieved id is judged against ``Query.gold``."""

    ID = "id"  # the retrieved id must equal a gold id
    SPAN = "span"  # the retrieved chunk span must overlap a gold span of the same document


@dataclass(frozen=True, slots=True)
class RetrievalTask:
    """A dataset ready for evaluation.

    Attributes:
        name: dataset name plus split/language, e.g. ``"madial-zh"``.
        corpora: corpus id -> its documents, in their natural (chronological) order.
        queries: the evaluated questions.
        match: how retrieved ids are judged.
        unit: what one gold unit is ("turn", "memory", "span"), used in reports.
        chunk_chars: when set, the docs are whole documents; systems that do not chunk themselves
            index fixed chunks of this many characters (ids ``"<doc>#<start>-<end>"``).
        notes: loader decisions worth keeping next to the numbers (dropped gold ids, ...).
    """

    name: str
    corpora: Mapping[str, list[Doc]]
    queries: list[Query]
    match: Match = Match.ID
    unit: str = "doc"
    chunk_chars: int | None = None
    notes: tuple[str, ...] = ()

    @property
    def has_sessions(self) -> bool:
        """True when some query carries session-level gold."""
        return any(q.gold_sessions for q in self.queries)

    def limited(self, n: int | None) -> RetrievalTask:
        """This task with only the first ``n`` queries and the corpora they use."""
        if n is None or n >= len(self.queries):
            return self
        queries = self.queries[:n]
        used = {q.corpus_id for q in queries}
        corpora = {cid: docs for cid, docs in self.corpora.items() if cid in used}
        return RetrievalTask(self.name, corpora, queries, self.match, self.unit, self.chunk_chars, self.notes)
