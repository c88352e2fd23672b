"""Data model: memories, scored hits and lifecycle reports (docs/design.md §3).

Records that cross the public API are pydantic models; ids are full UUID strings and every
API returns them whole.
"""

from __future__ import annotations

import math
import uuid
from collections.abc import Iterable
from datetime import datetime, timezone
from enum import Enum
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator


def utcnow() -> datetime:
    """Current time, timezone-aware UTC (all stored times are UTC)."""
    return datetime.now(timezone.utc)


def new_id() -> str:
    """A new full UUID4 string."""
    return str(uuid.uuid4())


class _Record(BaseModel):
    """A record of the public API: unknown fields are refused."""

    model_config = ConfigDict(extra="forbid")


class MemoryType(str, Enum):
    """The four memory tiers."""

    WORKING = "working"
    EPISODIC = "episodic"
    SEMANTIC = "semantic"
    PERCEPTUAL = "perceptual"


class Modality(str, Enum):
    """Perceptual modalities; each has its own vector collection."""

    TEXT = "text"
    IMAGE = "image"
    AUDIO = "audio"
    VIDEO = "video"
    OTHER = "other"


class Entity(BaseModel):
    """A named thing mentioned by semantic memories. ``id`` is stable per (user, normalised name)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    id: str
    name: str
    type: str = Field(default="concept", description="entity kind, e.g. person, place, concept")


class Relation(BaseModel):
    """A directed, typed edge between two entities, asserted by one memory."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    source_id: str
    target_id: str
    type: str = Field(description="relation name, e.g. 'is', 'likes', 'related_to'")


class MemoryItem(BaseModel):
    """One memory of one user.

    Example:
        >>> item = MemoryItem(user_id="alice", memory_type="semantic", content="Alice likes tea")
        >>> len(item.id)
        36
    """

    model_config = ConfigDict(extra="forbid", validate_assignment=True)

    id: str = Field(default_factory=new_id, description="full UUID")
    user_id: str = Field(min_length=1)
    agent_id: str | None = None
    session_id: str | None = None
    memory_type: MemoryType
    content: str = Field(min_length=1)
    importance: float = Field(default=0.5, ge=0.0, le=1.0)
    created_at: datetime = Field(default_factory=utcnow)
    updated_at: datetime = Field(default_factory=utcnow)
    last_accessed_at: datetime | None = None
    access_count: int = Field(default=0, ge=0)
    metadata: dict[str, Any] = Field(default_factory=dict)
    deleted_at: datetime | None = Field(default=None, description="set when soft-deleted (restorable)")
    # episodic
    event_type: str | None = None
    context: str | None = None
    outcome: str | None = None
    participants: list[str] = Field(default_factory=list)
    tags: list[str] = Field(default_factory=list)
    # semantic
    entities: list[Entity] = Field(default_factory=list)
    relations: list[Relation] = Field(default_factory=list)
    valid_from: datetime | None = None
    valid_to: datetime | None = Field(default=None, description="set when a newer fact supersedes this one")
    superseded_by: str | None = None
    # perceptual
    modality: Modality | None = None
    source_path: str | None = None
    media_hash: str | None = None
    # conversation turns (``add(messages)``)
    message_id: str | None = Field(default=None, description="a conversation turn: the id its message carried")
    message_digest: str | None = Field(
        default=None,
        description="a conversation turn: SHA-256 of its message as last sent (role, name, text); a re-sent "
        "message is matched by it, so an update() of the turn's content does not make it new",
    )

    @field_validator("importance")
    @classmethod
    def _finite(cls, v: float) -> float:
        if not math.isfinite(v):
            raise ValueError("importance must be a finite number in [0, 1]")
        return v


class ScoredMemory(_Record):
    """A search hit: the memory, its final score and the formula's terms by name.

    A search list may hold, after the memories that cleared the relevance floor, candidates that did
    not (``below_floor``; docs/design.md §5): they are there for recall at depth, not for a prompt. Every place
    that builds a prompt keeps only :func:`cleared`; a list shown to a person marks or omits the rest.
    """

    item: MemoryItem
    score: float
    breakdown: dict[str, float] = Field(default_factory=dict)

    @property
    def below_floor(self) -> bool:
        """True when this hit follows the ones that cleared the relevance floor without clearing it."""
        return self.breakdown.get("below_floor", 0.0) > 0


def cleared(hits: Iterable[ScoredMemory]) -> list[ScoredMemory]:
    """The hits that cleared the relevance floor, in their order: what may reach a prompt.

    Example:
        >>> item = MemoryItem(user_id="u", content="x", memory_type="semantic")
        >>> below = ScoredMemory(item=item, score=0.9, breakdown={"below_floor": 1.0})
        >>> hits = [ScoredMemory(item=item, score=0.4), below]
        >>> [h.score for h in cleared(hits)]
        [0.4]
    """
    return [h for h in hits if not h.below_floor]


class HistoryEntry(_Record):
    """One change of one memory (add, update, remove, restore, consolidate, supersede, purge)."""

    memory_id: str
    event: str
    old: dict[str, Any] | None = None
    new: dict[str, Any] | None = None
    at: datetime
    actor: str = "system"


class ForgottenItem(_Record):
    """One memory a forget call removed, and why."""

    id: str
    memory_type: MemoryType
    content: str
    reason: str


class ForgetReport(_Record):
    """What :meth:`MemoryManager.forget` did."""

    strategy: str
    forgotten: list[ForgottenItem] = Field(default_factory=list)
    purged: bool = False

    @property
    def count(self) -> int:
        """Number of memories forgotten."""
        return len(self.forgotten)


class ConsolidateReport(_Record):
    """What :meth:`MemoryManager.consolidate` did."""

    from_type: MemoryType
    to_type: MemoryType
    importance_threshold: float
    promoted: list[str] = Field(default_factory=list, description="new ids in the target tier")
    merged: list[str] = Field(default_factory=list, description="source ids merged into an existing item")
    source_ids: list[str] = Field(default_factory=list)
    summarised_by_llm: bool = False

    @property
    def count(self) -> int:
        """Number of source memories consolidated."""
        return len(self.source_ids)


class MemoryStats(_Record):
    """Counts for one user."""

    user_id: str
    total: int
    by_type: dict[str, int]
    deleted: int = 0
    entities: int = 0
    relations: int = 0
    avg_importance: float = 0.0
    embedder: str = ""
    vector_backend: str = ""


class ImportReport(BaseModel):
    """What ``import_lines`` stored: memories read from the export and vectors embedded again."""

    model_config = ConfigDict(extra="forbid")

    memories: int = Field(0, description="memories of the export now stored (imported or already there)")
    reembedded: int = Field(0, description="memories embedded again (no usable vector in the export)")


class ReindexReport(BaseModel):
    """What ``reindex_graph`` rebuilt."""

    model_config = ConfigDict(extra="forbid")

    users: int = Field(0, description="users whose graph was rebuilt")
    memories: int = Field(0, description="semantic memories linked again")
    recovered: int = Field(0, description="pending operations completed first")
