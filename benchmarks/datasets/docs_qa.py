"""docs_qa: product-documentation guides and questions with gold character spans.

Each ``docs/<guide>/master.txt`` is one document (doc id = guide name) in one shared corpus; the
gold of a question is its ``gold_spans`` as span ids ``"<guide>#<start>-<end>"``. A retrieved chunk
is relevant when its span overlaps a gold span of the same guide (``Match.SPAN``). Systems that do
not chunk themselves index fixed 1,000-character chunks (``chunk_chars``).
"""

from __future__ import annotations

import json
from pathlib import Path

from benchmarks.chunking import span_id
from benchmarks.datasets.base import (
    DEFAULT_SPLIT,
    Doc,
    Match,
    Query,
    RetrievalTask,
    check_split,
    resolve_file,
    split_suffix,
)

CORPUS = "docs"
CHUNK_CHARS = 1000


def load(path: Path, chunk_chars: int = CHUNK_CHARS, split: str = DEFAULT_SPLIT) -> RetrievalTask:
    """Load the questions (``path`` itself, or ``qa_<split>.json`` inside it) and ``docs/*/master.txt``.

    The guides are read from the ``docs`` directory next to the question file.

    Raises:
        FileNotFoundError: no question file, or no guide next to it.
    """
    qa_file = resolve_file(path, [f"qa_{check_split(split)}.json"], "docs_qa")
    docs = [
        Doc(p.parent.name, p.read_text(encoding="utf-8"))
        for p in sorted((qa_file.parent / "docs").glob("*/master.txt"))
    ]
    if not docs:
        raise FileNotFoundError(f"docs_qa: no docs/<guide>/master.txt next to {qa_file}")
    items = json.loads(qa_file.read_text(encoding="utf-8"))
    queries = [
        Query(
            str(it["id"]),
            str(it["question"]),
            CORPUS,
            frozenset(span_id(s["doc"], int(s["start"]), int(s["end"])) for s in it["gold_spans"]),
            it.get("category"),
        )
        for it in items
        if it.get("gold_spans")
    ]
    return RetrievalTask(
        f"docs_qa{split_suffix(split)}",
        {CORPUS: docs},
        queries,
        match=Match.SPAN,
        unit="span",
        chunk_chars=chunk_chars,
    )
