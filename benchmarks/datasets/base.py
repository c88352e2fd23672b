"""Value types every dataset loader returns: documents, queries and the task that holds them.

A *corpus* is one isolated memory space (one LoCoMo conversation, one MADial user, the pooled
LongMemEval haystack): a system indexes each corpus separately and answers a query only from the
corpus named by ``Query.corpus_id``.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from enum import Enum
from pathlib import Path
from typing import Any

DEFAULT_SPLIT = "dev"
_SPLIT_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")


def check_split(split: str) -> str:
    """``split`` when it is a plain file-name part (letters, digits, ``_ . -``); else ValueError.

    Example:
        >>> check_split("test")
        'test'
    """
    if not isinstance(split, str) or not _SPLIT_NAME.match(split) or ".." in split:
        raise ValueError(f"--split must be a plain name such as dev or test, not {split!r}")
    return split


def resolve_file(path: Path, names: Sequence[str], what: str) -> Path:
    """``path`` itself when it is a file, else the first of ``names`` that exists inside it.

    Raises:
        FileNotFoundError: naming the files looked for and the files the directory holds, so a
            held-out split with another file name is one ``--split`` or ``--data FILE`` away.
    """
    if path.is_file():
        return path
    for name in names:
        if (path / name).is_file():
            return path / name
    held = sorted(p.name for p in path.iterdir() if p.is_file()) if path.is_dir() else []
    raise FileNotFoundError(
        f"{what}: no {' or '.join(names)} in {path} (it holds: {', '.join(held) or 'no files'}); "
        "choose the split with --split NAME or pass the file itself with --data FILE"
    )


def split_suffix(split: str, default: str = DEFAULT_SPLIT) -> str:
    """``""`` for the default split, else ``"-<split>"`` (task names: ``locomo``, ``locomo-test``)."""
    return "" if split == default else f"-{split}"


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
        answerable: False for a question whose answer is not in the memory (LongMemEval
            abstention, LoCoMo adversarial): its gold is empty, and the right result is none at
            all (the no-answer rate, :mod:`benchmarks.evaluation`).
    """

    qid: str
    text: str
    corpus_id: str
    gold: frozenset[str]
    category: str | None = None
    created_at: datetime | None = None
    gold_sessions: frozenset[str] = frozenset()
    turns: tuple[tuple[str, str], ...] = ()
    answerable: bool = True


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
