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
from benchmarks.datasets.base import Doc, Match, Query, RetrievalTask

CORPUS = "docs"
CHUNK_CHARS = 1000


def load(path: Path, chunk_chars: int = CHUNK_CHARS) -> RetrievalTask:
    """Load ``docs/*/master.txt`` and ``qa_dev.json`` from the docs_qa directory."""
    docs = [
        Doc(p.parent.name, p.read_text(encoding="utf-8"))
        for p in sorted((path / "docs").glob("*/master.txt"))
    ]
    items = json.loads((path / "qa_dev.json").read_text(encoding="utf-8"))
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
        "docs_qa", {CORPUS: docs}, queries, match=Match.SPAN, unit="span", chunk_chars=chunk_chars
    )
