"""Request bodies of the memory service: the arguments of the library's methods, as pydantic models.

Responses are the library's own models (:mod:`hello_memory.models`, :mod:`rag.models`). Requests
forbid unknown fields and use strict scalars (no ``"0.5"`` for a number, no ``"false"`` for a
boolean); everything else — ranges, limits, ids, metadata size, text validity — is validated by the
library itself, so a request fails here exactly as the same call fails in process.
"""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, StrictBool, StrictFloat, StrictInt, StrictStr

from hello_memory.models import MemoryType, Modality

Number = StrictFloat
Text = StrictStr
Flag = StrictBool
DateTimeText = Annotated[StrictStr, Field(description="ISO 8601 date-time (naive = UTC)",
                                          json_schema_extra={"format": "date-time"})]
UserId = Annotated[StrictStr | None, Field(
    description="the user to act for; default the API key's user (another user needs an admin key)")]
Message = dict[str, Any] | tuple[StrictStr, StrictStr]
Types = list[MemoryType] | MemoryType | None


class _Request(BaseModel):
    model_config = ConfigDict(extra="forbid")


class ChatMessage(_Request):
    """One message of a conversation given to ``add``: OpenAI's chat format, plus its time and an id."""

    role: Text = Field(description="who spoke: user, assistant, ...")
    content: Text = Field(description="what was said")
    name: Text | None = Field(default=None, description="the speaker's name (the turn's participant; default role)")
    id: Text | None = Field(default=None, description="the message's own id (OpenAI, LangChain, the AI SDK): a "
                            "re-sent message is matched by it, and a changed text under it is an edit")
    created_at: DateTimeText | None = None
    memory_id: Text | None = Field(default=None, description="a full UUID for its turn; default derived (keyed) "
                                   "from the message")


class _AddFields(_Request):
    memory_id: Text | None = Field(default=None, description="a full UUID chosen by the caller: a retry is a no-op")
    memory_type: MemoryType | None = Field(default=None, description="default working (a conversation: episodic)")
    importance: Number = 0.5
    user_id: UserId = None
    session_id: Text | None = None
    created_at: DateTimeText | None = None
    metadata: dict[str, Any] | None = Field(default=None, description="free JSON object, kept whole")
    event_type: Text | None = None
    context: Text | None = None
    outcome: Text | None = None
    participants: list[Text] | None = None
    tags: list[Text] | None = None
    modality: Modality | None = None
    source_path: Text | None = Field(default=None, description="perceptual: must lie under the allowed roots")
    agent_id: Text | None = None
    valid_from: DateTimeText | None = None

    def fields(self) -> dict[str, Any]:
        """The keyword arguments of ``MemoryManager.add`` (unset ones left out)."""
        return self.model_dump(exclude_unset=True, exclude={"content"})


class AddMemory(_AddFields):
    """``MemoryManager.add``: one memory (type-specific fields at the top level), or a conversation."""

    content: Text | Annotated[list[ChatMessage], Field(max_length=10_000)] = Field(
        description="the text to remember, or a conversation (needs session_id): its messages, stored as "
        "episodic turns and returned as a list")

    def text(self) -> str | list[dict[str, Any]]:
        """``add``'s first argument: the text, or the messages as dicts (unset keys left out)."""
        if isinstance(self.content, str):
            return self.content
        return [m.model_dump(exclude_unset=True) for m in self.content]


class BatchItem(_AddFields):
    """One memory of ``add_many``."""

    content: Text


class AddMany(_Request):
    """``MemoryManager.add_many``: all validated before any is stored."""

    items: list[BatchItem] = Field(max_length=10_000)


class SearchMemories(_Request):
    """``MemoryManager.search``."""

    query: Text | list[Message] = Field(description="text, or a conversation: [{role, content}, ...]")
    user_id: UserId = None
    memory_types: Types = None
    limit: StrictInt = 10
    min_importance: Number = 0.0
    min_score: Number | None = None
    time_range: tuple[DateTimeText | None, DateTimeText | None] | None = None
    session_id: Text | None = None
    reference_time: DateTimeText | None = None


class UpdateMemory(_Request):
    """``MemoryManager.update``."""

    content: Text | None = None
    importance: Number | None = None
    metadata: dict[str, Any] | None = None
    user_id: UserId = None


class ForUser(_Request):
    """A call that takes only the user (``restore``, ``clear_all``)."""

    user_id: UserId = None


class Forget(_Request):
    """``MemoryManager.forget``."""

    strategy: Text = "importance_based"
    threshold: Number = 0.1
    max_age_days: Number = 30
    capacity: StrictInt | None = None
    memory_types: Types = None
    user_id: UserId = None
    purge: Flag = False


class Consolidate(_Request):
    """``MemoryManager.consolidate``."""

    from_type: MemoryType = MemoryType.WORKING
    to_type: MemoryType = MemoryType.EPISODIC
    importance_threshold: Number = 0.7
    user_id: UserId = None


class Export(_Request):
    """``MemoryManager.export_lines``: which users, with or without vectors."""

    vectors: Flag = True
    users: list[Text] | None = Field(
        default=None, description="default: every user the API key reaches (a normal key: its own)"
    )


class BuildContext(_Request):
    """``MemoryManager.build_context``."""

    query: Text
    budget_tokens: StrictInt = 800
    floor: Number | None = None
    position: Text = "user"
    user_id: UserId = None
    limit: StrictInt = 20


class AddText(_Request):
    """``RAGPipeline.add_text``."""

    text: Text
    document_id: Text | None = None
    source: Text | None = None
    chunk_tokens: StrictInt | None = None
    overlap_tokens: StrictInt | None = None
    metadata: dict[str, Any] | None = None


class AddServerDocument(_Request):
    """``RAGPipeline.add_document`` for a file on the service's machine, under the allowed roots."""

    path: Text = Field(description="absolute, or relative to the first allowed root")
    document_id: Text | None = None
    chunk_tokens: StrictInt | None = None
    overlap_tokens: StrictInt | None = None
    metadata: dict[str, Any] | None = None


class SearchDocuments(_Request):
    """``RAGPipeline.search``."""

    query: Text
    limit: StrictInt = 5
    min_score: Number | None = None
    enable_mqe: Flag = False
    enable_hyde: Flag = False


class Ask(_Request):
    """``RAGPipeline.ask``."""

    question: Text
    limit: StrictInt = 5
    enable_mqe: Flag = False
    enable_hyde: Flag = False
    min_score: Number | None = None
    budget_tokens: StrictInt = 3000
