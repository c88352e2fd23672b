"""What a baseline indexes and queries with: neighbour-expanded docs, metadata, query views.

These are the cheap retrieval ideas the exploratory presets measure (see ``hybrid.py``):
conversation turns indexed with the turns around them, metadata words appended to the text,
dialogue queries reduced to the user's turns, and a boost for turns by the person a question names.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

from benchmarks.datasets.base import Doc, Query

ASSISTANT_SPEAKERS = frozenset({"assistant", "ai", "bot", "system"})
QUERY_VIEWS = ("text", "turns", "user_turns", "conversation")


def _same_session(a: Doc, b: Doc) -> bool:
    return a.session_id is not None and a.session_id == b.session_id


def with_neighbours(docs: Sequence[Doc], before: int, after: int | None = None, center: int = 1) -> list[str]:
    """Each doc's text with up to ``before``/``after`` same-session neighbours around it.

    ``center`` repeats the doc's own text (a term-frequency weight for BM25). Docs without a
    session id keep their own text.

    Example:
        >>> docs = [Doc("1", "a", session_id="s"), Doc("2", "b", session_id="s"), Doc("3", "c")]
        >>> with_neighbours(docs, 1)
        ['a\\nb', 'a\\nb', 'c']
        >>> with_neighbours(docs, 1, 0, center=2)
        ['a\\na', 'a\\nb\\nb', 'c\\nc']
    """
    after = before if after is None else after
    out: list[str] = []
    for i, doc in enumerate(docs):
        lo = i
        while lo > 0 and i - lo < before and _same_session(docs[lo - 1], doc):
            lo -= 1
        hi = i
        while hi < len(docs) - 1 and hi - i < after and _same_session(docs[hi + 1], doc):
            hi += 1
        parts = [d.text for d in docs[lo:i]] + [doc.text] * center + [d.text for d in docs[i + 1 : hi + 1]]
        out.append("\n".join(parts))
    return out


def with_metadata(docs: Sequence[Doc], texts: Sequence[str], fields: Sequence[str]) -> list[str]:
    """``texts`` with the docs' string values of ``fields`` appended in parentheses."""
    out: list[str] = []
    for doc, text in zip(docs, texts, strict=True):
        values = [str(doc.metadata[f]) for f in fields if isinstance(doc.metadata.get(f), str)]
        out.append(f"{text} ({', '.join(values)})" if values else text)
    return out


def chat_messages(query: Query) -> list[dict[str, str]]:
    """A dialogue query's turns as chat messages (assistant turns as ``assistant``, others ``user``)."""
    return [
        {"role": "assistant" if speaker.lower() in ASSISTANT_SPEAKERS else "user", "content": text}
        for speaker, text in query.turns
    ]


def query_text(query: Query, view: str) -> str:
    """The text a system searches with.

    ``text`` is the query as given; for dialogue queries (``Query.turns``) ``turns`` joins the
    turns without role markup, ``user_turns`` keeps only turns not spoken by the assistant, and
    ``conversation`` is exactly the text ``MemoryManager.search`` makes of the dialogue's chat
    messages (:func:`hello_memory.language.queries.conversation_query`), so a baseline given it compares
    retrieval with the product, not query formatting.
    """
    if view not in QUERY_VIEWS:
        raise ValueError(f"query view must be one of {QUERY_VIEWS}, not {view!r}")
    if view == "text" or not query.turns:
        return query.text
    if view == "conversation":
        from hello_memory.errors import InvalidInputError
        from hello_memory.language.queries import conversation_query

        try:
            return conversation_query(chat_messages(query))
        except InvalidInputError:  # a dialogue without text: nothing better than the raw one
            return query.text
    keep = [t for s, t in query.turns if view == "turns" or s.lower() not in ASSISTANT_SPEAKERS]
    return "\n".join(keep) or query.text


def named_speaker_mask(text: str, docs: Sequence[Doc]) -> npt.NDArray[np.float32]:
    """1.0 for docs spoken by the one corpus speaker the text names (word match), else 0.0.

    All zeros when the text names no speaker or more than one.

    Example:
        >>> docs = [Doc("1", "x", speaker="Caroline"), Doc("2", "y", speaker="Melanie")]
        >>> named_speaker_mask("When did Caroline paint?", docs).tolist()
        [1.0, 0.0]
    """
    speakers = {d.speaker for d in docs if d.speaker}
    named = {s for s in speakers if re.search(rf"\b{re.escape(s)}\b", text, re.IGNORECASE)}
    if len(named) != 1:
        return np.zeros(len(docs), dtype=np.float32)
    return np.array([d.speaker in named for d in docs], dtype=np.float32)
