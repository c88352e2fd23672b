"""Fixed-size character chunks and span ids for document tasks (docs_qa).

A chunk id is ``"<doc>#<start>-<end>"`` with ``[start, end)`` character offsets into the source
document, so any system that returns such ids can be judged by span overlap.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from benchmarks.datasets.base import Doc

# "<doc>#<start>-<end>": the doc part may itself contain '#' or '-', so anchor on the last '#'.
_SPAN_ID = re.compile(r"^(?P<doc>.*)#(?P<start>\d+)-(?P<end>\d+)$")


def span_id(doc: str, start: int, end: int) -> str:
    """The id of ``doc[start:end]``."""
    return f"{doc}#{start}-{end}"


def parse_span_id(value: str) -> tuple[str, int, int] | None:
    """``(doc, start, end)`` from a span id, or ``None`` when ``value`` is not one."""
    m = _SPAN_ID.match(value)
    return (m.group("doc"), int(m.group("start")), int(m.group("end"))) if m else None


def overlaps(a: tuple[str, int, int], b: tuple[str, int, int]) -> bool:
    """True when two spans are in the same document and their ``[start, end)`` ranges intersect."""
    return a[0] == b[0] and a[1] < b[2] and b[1] < a[2]


def fixed_chunks(docs: Iterable[Doc], size: int = 1000) -> list[Doc]:
    """Cut every document into consecutive ``size``-character chunks (the last may be shorter).

    Example:
        >>> [c.doc_id for c in fixed_chunks([Doc("a", "x" * 2500)], 1000)]
        ['a#0-1000', 'a#1000-2000', 'a#2000-2500']
    """
    out: list[Doc] = []
    for doc in docs:
        for start in range(0, len(doc.text), size):
            end = min(start + size, len(doc.text))
            # No session id: chunks are not conversation turns, so turn-neighbour options stay inert.
            meta = {"document_id": doc.doc_id}
            out.append(
                Doc(
                    span_id(doc.doc_id, start, end),
                    doc.text[start:end],
                    doc.created_at,
                    None,
                    doc.speaker,
                    meta,
                )
            )
    return out
