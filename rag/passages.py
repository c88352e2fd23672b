"""Passages: the parts of a chunk that are embedded, bounded in number, size and model work.

Chunks are what search returns and what an answer cites; passages are what is embedded. A chunk
over ``PASSAGE_TOKENS`` is cut into passages at its paragraph and sentence boundaries (the chunker
itself, with no overlap), each embedded under the chunk's heading path, and a chunk's dense score
is its best passage's cosine. One vector for a whole ~1,800-character chunk averages its topics
away: on docs_qa, passages raised the pipeline's hit@1 / hit@5 / hit@10 / MRR from 0.590 / 0.801 /
0.873 / 0.684 to 0.649 / 0.829 / 0.892 / 0.730 (BENCHMARKS.md).

Work per passage is bounded, whatever the text:

* tokens are counted as the chunker counts them, so an unbroken run (a base64 blob, a minified
  line, one 300,000-character "word") counts one token per 64 characters and is split like any
  other long text, instead of passing as one "token" of any length;
* what the model sees of a run longer than ``MAX_RUN_CHARS`` is its first ``MAX_RUN_CHARS``
  characters (e5 spends about 0.8 model tokens per character of base64, and a blob means nothing
  to it); the chunk text and its lexical index keep the whole run;
* a passage's embedded text is at most ``CHARS_PER_TOKEN`` characters per token of its budget.

Before these bounds, one 300,000-character word took 53 s and 2.0 GB of peak RSS to index (14
passages of 21,000 characters each); see ``tests/rag/test_pathological.py`` for the figures now.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from hello_memory.language.text import iter_token_spans

PASSAGE_TOKENS = 128  # estimated tokens (a CJK character or a word each) per embedded passage
MAX_PASSAGES = 16  # per chunk: a longer chunk gets longer passages
MAX_RUN_CHARS = 64  # of an unbroken run, the model sees this many characters (the chunker's token)
CHARS_PER_TOKEN = 16  # embedded characters per token of the passage budget, at most (~2.5x English)
_PASSAGE_NAMESPACE = uuid.UUID("0b8f7d2e-3c41-4d6a-9e85-7a2c61f4b0d3")


@dataclass(frozen=True, slots=True)
class ChunkRef:
    """What indexing needs of a chunk, from the chunker (ingest) or from SQLite (recovery)."""

    chunk_id: str
    text: str
    start: int
    end: int
    heading_path: str
    language: str


@dataclass(frozen=True, slots=True)
class Passage:
    """One point of the vector index: its id, the embedded text and the payload."""

    id: str
    text: str  # the embedded text: heading path + passage
    payload: dict[str, Any]


def _split(text: str) -> tuple[list[str], int]:
    """The chunker's cut of ``text`` into passages, and the token budget of each."""
    from rag.chunking import chunk_markdown, count_tokens

    tokens = count_tokens(text)
    if tokens <= PASSAGE_TOKENS:
        return [text], PASSAGE_TOKENS
    budget = max(PASSAGE_TOKENS, -(-tokens // MAX_PASSAGES))
    parts = [c.text for c in chunk_markdown(text, chunk_tokens=budget, overlap_tokens=0)]
    if len(parts) > MAX_PASSAGES:  # greedy packing can leave up to twice the ideal count
        step = -(-len(parts) // MAX_PASSAGES)
        parts = ["\n".join(parts[i : i + step]) for i in range(0, len(parts), step)]
    return parts or [text], budget


def bounded(text: str, limit: int) -> str:
    """``text`` with every unbroken run cut to ``MAX_RUN_CHARS`` characters, then to ``limit``.

    Example:
        >>> bounded("see " + "x" * 100 + " here", 1000) == "see " + "x" * 64 + " here"
        True
    """
    out: list[str] = []
    pos = 0
    for s, e in iter_token_spans(text):
        if e - s > MAX_RUN_CHARS:
            out.append(text[pos : s + MAX_RUN_CHARS])
            pos = e
    out.append(text[pos:])
    return "".join(out)[:limit]


def passages(text: str) -> list[str]:
    """The parts of a chunk embedded separately: at most ``MAX_PASSAGES``, each bounded.

    Example:
        >>> passages("short chunk")
        ['short chunk']
        >>> parts = passages("First sentence here. " * 100)
        >>> from hello_memory.language.text import estimate_tokens
        >>> len(parts) > 1 and all(estimate_tokens(t) <= PASSAGE_TOKENS for t in parts)
        True
        >>> [len(p) for p in passages("x" * 300_000)]  # one unbroken run: bounded work
        [64, 64, 64, 64, 64, 64, 64, 64, 64, 64, 64, 64, 64, 64, 64, 64]
    """
    parts, budget = _split(text)
    return [bounded(p, budget * CHARS_PER_TOKEN) for p in parts]


def passage_id(chunk_id: str, index: int) -> str:
    """Idempotent id of a chunk's ``index``-th passage in the vector index."""
    return str(uuid.uuid5(_PASSAGE_NAMESPACE, f"{chunk_id}\x1f{index}"))


def embed_text(heading_path: str, text: str) -> str:
    """What is embedded for a chunk: its heading path gives the chunk its context."""
    return f"{heading_path}\n{text}" if heading_path else text


def payload(
    namespace: str, document_id: str, chunk: str, start: int, end: int, language: str
) -> dict[str, Any]:
    """Vector payload of a passage: its chunk, filter keys and the chunk's offsets; never document
    text (headings, file paths).

    SQLite is the source of truth for the text; keeping it out of the vector index means a
    deleted document's words cannot linger in vector segments or their write-ahead log.
    """
    return {
        "namespace": namespace,
        "document_id": document_id,
        "chunk_id": chunk,
        "start": start,
        "end": end,
        "language": language,
    }


def of_chunks(namespace: str, document_id: str, refs: Sequence[ChunkRef]) -> list[Passage]:
    """Every passage of ``refs``, with its id and payload."""
    out = []
    for ref in refs:
        data = payload(namespace, document_id, ref.chunk_id, ref.start, ref.end, ref.language)
        for i, part in enumerate(passages(ref.text)):
            out.append(Passage(passage_id(ref.chunk_id, i), embed_text(ref.heading_path, part), data))
    return out
