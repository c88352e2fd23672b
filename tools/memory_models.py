"""Arguments and result payloads of :class:`tools.memory_tool.MemoryTool`'s nine actions.

The argument models are the single source of the tool's JSON Schema; descriptions are written for
the model. Limits are deliberately tighter than the library's (search ``limit`` ≤ 50) so a
model's typo cannot ask for a thousand memories. Payloads render through
:mod:`hello_memory.render`: every string (content, ids, session, user, query) is JSON-quoted.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, ClassVar, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from hello_memory.models import (
    ConsolidateReport,
    ForgottenItem,
    MemoryItem,
    MemoryStats,
    MemoryType,
    ScoredMemory,
)
from hello_memory.render import Rendered, fmt, ident, join
from tools.base import UNTRUSTED, Payload, found
from tools.schema import MAX_SEARCH_LIMIT, ActionArgs

MemoryTypeName = Literal["working", "episodic", "semantic", "perceptual"]
_ID_DOC = "The full 36-character memory id from an earlier result."
_TYPE_DOC = (
    "working = this conversation's short-term context (expires after about an hour); episodic = an event "
    "that happened (what, when); semantic = a lasting fact, preference or concept; perceptual = a "
    "description of an image/audio file (give file_path)."
)


class ChatMessageArg(ActionArgs):
    """One message of a conversation given to ``add``."""

    role: str = Field(min_length=1, max_length=64, description="Who spoke: 'user', 'assistant', ...")
    content: str = Field(min_length=1, max_length=20_000, description="What was said.")
    name: str | None = Field(None, min_length=1, max_length=200,
                             description="The speaker's name when known (e.g. 'Caroline'); default the role.")
    id: str | None = Field(None, min_length=1, max_length=256, description=(
        "The message's own id, if the chat gives one: sending the chat again matches messages by it, "
        "and a changed text under the same id replaces that turn."))
    created_at: str | None = Field(None, max_length=64,
                                   description="When it was said (ISO 8601); default now, in message order.")


class AddArgs(ActionArgs):
    """Arguments of ``add``: one ``content``, or a conversation's ``messages``."""

    content: str | None = Field(None, min_length=1, max_length=20_000,
                                description="What to remember, in the user's language (or give messages).")
    messages: list[ChatMessageArg] | None = Field(None, min_length=1, max_length=200, description=(
        "Instead of content: chat messages to keep as they were said, each stored as an episodic "
        "conversation turn of the session with its speaker and time (returns the turns' ids). Sending the "
        "conversation again (whole or its last messages) stores only the new messages; an edited "
        "message replaces its turn; turns the user removed or forgot are not stored again."))
    memory_type: MemoryTypeName = Field("working", description=_TYPE_DOC + " Messages are always episodic.")
    importance: float = Field(0.5, ge=0.0, le=1.0, description=(
        "0.0-1.0, how much this matters later (consolidation and forgetting use it): 0.9 key personal "
        "facts, 0.5 ordinary, 0.2 trivia."))
    session_id: str | None = Field(None, min_length=1, max_length=256,
                                   description="Session; default: this one.")
    event_type: str | None = Field(None, max_length=100, description="Kind of event, e.g. 'document_loaded'.")
    concept: str | None = Field(None, max_length=200, description="Main concept of a semantic memory.")
    file_path: str | None = Field(None, max_length=4096,
                                  description="Media file a perceptual memory describes.")
    participants: list[str] | None = Field(None, max_length=20, description=(
        "People (names) who said or took part in this memory; a search that names one of them "
        "ranks their memories higher."))
    metadata: dict[str, Any] | None = Field(None, description="Other key-value data to keep with the memory.")

    @model_validator(mode="after")
    def _one_kind(self) -> AddArgs:
        if (self.content is None) == (self.messages is None):
            raise ValueError("give either content (one memory) or messages (a conversation), not both")
        if self.messages is not None:
            extra = [k for k in ("event_type", "file_path", "participants") if getattr(self, k) is not None]
            if extra or ("memory_type" in self.model_fields_set and self.memory_type != "episodic"):
                raise ValueError(f"messages are episodic conversation turns, each with its speaker: leave out "
                                 f"{', '.join(extra) or 'memory_type'}")
        return self


class SearchArgs(ActionArgs):
    """Arguments of ``search``."""

    query: str = Field(min_length=1, max_length=2000,
                       description="What to look for (natural language). A time it names ('last week', "
                                   "'三天前') is understood: memories from then rank higher.")
    limit: int = Field(5, ge=1, le=MAX_SEARCH_LIMIT, description="Maximum number of results.")
    memory_type: MemoryTypeName | None = Field(None, description="Search only this tier.")
    memory_types: list[MemoryTypeName] | None = Field(None, min_length=1, max_length=4,
                                                      description="Search only these tiers (default: all).")
    min_importance: float = Field(0.1, ge=0.0, le=1.0, description="Skip memories less important than this.")


class SummaryArgs(ActionArgs):
    """Arguments of ``summary``."""

    limit: int = Field(10, ge=1, le=MAX_SEARCH_LIMIT, description="Most important memories shown per tier.")


class UpdateArgs(ActionArgs):
    """Arguments of ``update`` (at least one change)."""

    memory_id: str = Field(min_length=1, max_length=64, description=_ID_DOC)
    content: str | None = Field(None, min_length=1, max_length=20_000, description="New text.")
    importance: float | None = Field(None, ge=0.0, le=1.0, description="New importance, 0.0-1.0.")
    metadata: dict[str, Any] | None = Field(None, description="Keys to add or change in the metadata.")

    @model_validator(mode="after")
    def _something(self) -> UpdateArgs:
        if self.content is None and self.importance is None and self.metadata is None:
            raise ValueError("give at least one of content, importance or metadata to change")
        return self


class RemoveArgs(ActionArgs):
    """Arguments of ``remove``."""

    memory_id: str = Field(min_length=1, max_length=64, description=_ID_DOC)


class ForgetArgs(ActionArgs):
    """Arguments of ``forget``."""

    strategy: Literal["importance_based", "time_based", "capacity_based", "combined"] = Field(
        "importance_based", description=(
            "importance_based: below threshold; time_based: older than max_age_days; capacity_based: "
            "least important beyond capacity per tier; combined: importance x use x age below threshold."))
    threshold: float = Field(0.1, ge=0.0, le=1.0, description="Importance (or retention) threshold.")
    max_age_days: float = Field(30, ge=0, le=36_500, description="Age limit in days for time_based.")
    capacity: int | None = Field(None, ge=0, le=100_000,
                                 description="Memories kept per tier for capacity_based.")


class ConsolidateArgs(ActionArgs):
    """Arguments of ``consolidate``."""

    from_type: MemoryTypeName = Field("working", description="Tier to promote from.")
    to_type: MemoryTypeName = Field("episodic", description="Tier to promote into.")
    importance_threshold: float = Field(0.7, ge=0.0, le=1.0,
                                        description="Promote memories at least this important.")


# -- payloads ---------------------------------------------------------------------------------------
_LINE = "[{m.memory_type}, {m.created_at}, importance {m.importance:.2f}] {m.content:.300} (id {m.id})"


class MemoryView(BaseModel):
    """A memory as the tools show it (full id)."""

    model_config = ConfigDict(extra="forbid")

    id: str
    memory_type: MemoryType
    content: str
    importance: float
    created_at: datetime
    session_id: str | None = None
    event_type: str | None = None
    participants: list[str] = Field(default_factory=list)
    metadata: dict[str, Any] = Field(default_factory=dict)

    @classmethod
    def of(cls, item: MemoryItem) -> MemoryView:
        """View of a stored memory."""
        return cls(id=item.id, memory_type=item.memory_type, content=item.content,
                   importance=item.importance, created_at=item.created_at, session_id=item.session_id,
                   event_type=item.event_type, participants=item.participants, metadata=item.metadata)

    def line(self) -> Rendered:
        """``[episodic, 2026-03-02, importance 0.70] "text" (id "…")``."""
        return fmt(_LINE, m=self)


class MemoryHit(MemoryView):
    """A search hit: the memory plus its final score and the formula's terms."""

    score: float
    breakdown: dict[str, float] = Field(default_factory=dict)

    @classmethod
    def of_hit(cls, hit: ScoredMemory) -> MemoryHit:
        """View of a scored search hit."""
        return cls(**dict(MemoryView.of(hit.item)), score=round(hit.score, 4), breakdown=hit.breakdown)


def tiers(stats: MemoryStats) -> Rendered:
    """``working 0, episodic 2, semantic 1``: a count per tier (a key that is no tier is quoted)."""
    known = {t.value: t for t in MemoryType}
    return join((fmt("{tier} {n}", tier=known.get(k, k), n=v) for k, v in stats.by_type.items()), ", ")


class MemoryAdded(Payload):
    """Result of ``add``."""

    template: ClassVar[str] = ("Stored {memory.memory_type} memory {memory.id} "
                               "(importance {memory.importance:.2f}, session {memory.session_id}).")
    memory: MemoryView


class ConversationAdded(Payload):
    """Result of ``add`` with messages: the turns, in the messages' order."""

    session_id: str
    memories: list[MemoryView]

    def render(self) -> Rendered:
        ids = [m.id for m in self.memories]
        return fmt("Stored {n:conversation turn/conversation turns} of session {session} (episodic), ids in "
                   "message order: {ids}.", n=len(ids), session=self.session_id, ids=ids)


class MemorySearchResult(Payload):
    """Result of ``search``: hits best first."""

    query: str
    hits: list[MemoryHit]

    def render(self) -> Rendered:
        lines = (fmt("{n}. score {h.score:.3f} {line}", n=n, h=h, line=h.line()) for n, h in enumerate(self.hits, 1))
        return join([found(len(self.hits), "memory", "memories", self.query), *lines])


class MemorySummary(Payload):
    """Result of ``summary``: the counts and the most important memories of each tier."""

    stats: MemoryStats
    memories: list[MemoryView]

    def render(self) -> Rendered:
        head = fmt("Memory summary for {s.user_id}: {s.total:memory/memories} ({tiers})", s=self.stats,
                   tiers=tiers(self.stats))
        if not self.memories:
            return fmt("{head}.", head=head)
        return join([fmt("{head}; most important first {untrusted}:", head=head, untrusted=UNTRUSTED),
                     *(fmt("- {line}", line=m.line()) for m in self.memories)])


class MemoryStatsResult(Payload):
    """Result of ``stats``."""

    stats: MemoryStats
    session_id: str

    def render(self) -> Rendered:
        return fmt("User {s.user_id}: {s.total:memory/memories} ({tiers}); {s.deleted} forgotten (restorable); "
                   "graph {s.entities} entities / {s.relations} relations; average importance "
                   "{s.avg_importance:.2f}; embedder {s.embedder}; vectors {s.vector_backend}; session {session}.",
                   s=self.stats, tiers=tiers(self.stats), session=self.session_id)


class MemoryUpdated(Payload):
    """Result of ``update``."""

    memory: MemoryView

    def render(self) -> Rendered:
        return fmt("Updated memory {m.id}: {line}", m=self.memory, line=self.memory.line())


class MemoryRemoved(Payload):
    """Result of ``remove``."""

    template: ClassVar[str] = "Removed memory {memory_id}."
    memory_id: str


class ForgetResult(Payload):
    """Result of ``forget``."""

    strategy: str
    forgotten: list[ForgottenItem]
    restorable: bool

    def render(self) -> Rendered:
        kept = Rendered(", restorable" if self.restorable else "")
        head = fmt("Forgot {n:memory/memories} ({strategy}{kept}).", n=len(self.forgotten),
                   strategy=ident(self.strategy), kept=kept)
        items = (fmt("- {f.id} [{f.memory_type}] {f.reason}", f=f) for f in self.forgotten[:20])
        return join([head, *items])


class ConsolidateResult(Payload):
    """Result of ``consolidate``."""

    report: ConsolidateReport

    def render(self) -> Rendered:
        r = self.report
        new_ids = fmt(" New ids: {ids}", ids=r.promoted) if r.promoted else Rendered("")
        return fmt("Consolidated {sources} {r.from_type} memories (importance >= {r.importance_threshold:.2f}) "
                   "into {r.to_type}: {promoted} new, {merged} merged into existing ones.{new_ids}", r=r,
                   sources=len(r.source_ids), promoted=len(r.promoted), merged=len(r.merged), new_ids=new_ids)


class MemoriesCleared(Payload):
    """Result of ``clear_all``."""

    template: ClassVar[str] = "Deleted all {deleted} memories of user {user_id}."
    user_id: str
    deleted: int
