"""Typed results of the RAG pipeline."""

from __future__ import annotations

from datetime import datetime
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid")


class IngestReport(_Model):
    """What adding one document did."""

    document_id: str
    source_path: str | None
    chunks: int
    tokens: int
    format: str
    replaced: bool = Field(description="an earlier version of the document was replaced")


class ChunkHit(_Model):
    """One retrieved chunk, with exact offsets into its document's Markdown."""

    chunk_id: str
    document_id: str
    source_path: str | None
    heading_path: str
    start: int
    end: int
    text: str
    score: float
    breakdown: dict[str, float] = Field(default_factory=dict)


class Expansion(_Model):
    """A query that was searched: the original, an MQE paraphrase, a HyDE passage or a PRF query."""

    kind: Literal["original", "mqe", "hyde", "prf"]
    text: str


class SearchResult(_Model):
    """Hits plus which expansions ran (and why some did not)."""

    query: str
    hits: list[ChunkHit]
    expansions: list[Expansion]
    notes: list[str] = Field(default_factory=list)


class Citation(_Model):
    """Source ``[n]`` of an answer."""

    n: int
    chunk_id: str
    document_id: str
    source_path: str | None
    heading_path: str
    start: int
    end: int
    score: float
    text: str


class Extract(_Model):
    """A sentence of an extractive answer, with the list it introduces (for display; see ``Answer``)."""

    n: int = Field(description="the citation it comes from")
    text: str


class Answer(_Model):
    """A grounded answer with numbered citations.

    ``answer`` is what a model reads: in extractive mode the source sentences JSON-quoted, each
    with its ``[n]``; ``extracts`` holds the same sentences unquoted, for a human-facing display.
    """

    question: str
    answer: str
    citations: list[Citation]
    mode: Literal["llm", "extractive"]
    grounded: bool = Field(description="False when the documents held nothing relevant")
    expansions: list[Expansion] = Field(default_factory=list)
    notes: list[str] = Field(default_factory=list)
    extracts: list[Extract] = Field(default_factory=list, description="extractive mode: the sentences used")


class DocumentInfo(_Model):
    """A document of a namespace."""

    document_id: str
    source_path: str | None
    title: str | None
    format: str
    chunks: int
    tokens: int
    added_at: datetime


class RAGStats(_Model):
    """Counts of one namespace."""

    namespace: str
    documents: int
    chunks: int
    tokens: int
    embedder: str
    vector_backend: str
    llm: str | None = None  # the LLM that answers ``ask`` and expands queries; None = extractive, offline
