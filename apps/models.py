"""Typed results of the learning assistant (what the UI renders and the reports serialise)."""

from __future__ import annotations

from datetime import datetime
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from hello_memory import ScoredMemory
from rag import Citation
from rag.models import Extract

Route = Literal["rag", "memory"]


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid")


class LoadedDocument(_Model):
    """One file that was indexed, and the episodic memory that records it."""

    file_name: str
    document_id: str
    title: str | None
    format: str
    chunks: int
    tokens: int
    replaced: bool = Field(description="a document of the same file name was replaced")
    memory_id: str = Field(description="the episodic 'document_loaded' memory (importance 0.9)")


class LoadFailure(_Model):
    """One file that could not be indexed; nothing of it was stored."""

    file_name: str
    error: str = Field(description="user-facing reason, bilingual where the app wrote it")


class LoadReport(_Model):
    """What :meth:`LearningAssistant.load_documents` did, file by file."""

    loaded: list[LoadedDocument] = Field(default_factory=list)
    failed: list[LoadFailure] = Field(default_factory=list)

    @property
    def ok(self) -> bool:
        """True when every file was indexed."""
        return not self.failed


class DocumentRow(_Model):
    """A document of the user's knowledge base."""

    document_id: str
    file_name: str
    title: str | None
    format: str
    chunks: int
    tokens: int
    added_at: datetime


class AskReply(_Model):
    """The assistant's reply to one question.

    ``route`` says who answered: ``"rag"`` (the documents, with ``citations``) or ``"memory"``
    (a recall question such as "what did I learn before", answered from ``memories``).
    """

    question: str
    answer: str
    route: Route
    citations: list[Citation] = Field(default_factory=list)
    extracts: list[Extract] = Field(default_factory=list, description="extractive answers: the sentences, "
                                    "unquoted, for display (``answer`` quotes them for models)")
    memories: list[ScoredMemory] = Field(default_factory=list)
    mode: Literal["llm", "extractive", "memory"]
    grounded: bool = Field(description="the answer rests on retrieved passages or memories")
    advanced: bool = Field(default=False, description="MQE/HyDE expansion was requested")
    notes: list[str] = Field(default_factory=list, description="degradations, e.g. a failed LLM call")
    memory_ids: list[str] = Field(default_factory=list, description="memories written for this question")


class QuestionRecord(_Model):
    """A question of this session, for the learning report."""

    question: str
    route: Route
    asked_at: datetime
    sources: list[str] = Field(default_factory=list, description="file names of the cited documents")


class NoteRecord(_Model):
    """A note, stored as semantic memory (importance 0.8)."""

    memory_id: str
    content: str
    created_at: datetime


class SessionStats(_Model):
    """The numbers of the Stats tab."""

    user_id: str
    session_id: str
    started_at: datetime
    duration_seconds: float
    documents: int = Field(description="documents in the user's knowledge base")
    documents_loaded: int = Field(description="documents loaded in this session")
    chunks: int
    questions: int = Field(description="questions asked in this session (both routes)")
    recall_questions: int = Field(description="of which answered from memory")
    notes: int = Field(description="notes added in this session")
    memories_total: int
    memories_by_type: dict[str, int]
    llm: str | None = Field(description="the LLM in use, None when answers are extractive")
    embedder: str


class LearningReport(_Model):
    """The downloadable learning report."""

    generated_at: datetime
    stats: SessionStats
    documents: list[DocumentRow]
    questions: list[QuestionRecord]
    notes: list[NoteRecord]
    memory_summary: str
