"""The LLM client contract (chat completions with optional native tool calls)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol, runtime_checkable

from pydantic import BaseModel, ConfigDict, Field


class ToolCall(BaseModel):
    """A function call requested by the model; ``arguments`` is the raw JSON string it produced."""

    model_config = ConfigDict(extra="forbid")

    id: str
    name: str
    arguments: str = "{}"


class LLMResponse(BaseModel):
    """One assistant turn."""

    model_config = ConfigDict(extra="forbid")

    content: str = ""
    tool_calls: list[ToolCall] = Field(default_factory=list)
    model: str = ""


Message = dict[str, Any]


@runtime_checkable
class LLMClient(Protocol):
    """Chat-completion client (OpenAI message format).

    ``complete`` raises :class:`hello_memory.errors.LLMError` on failure; it never returns an
    empty response in place of an error.
    """

    @property
    def name(self) -> str:
        """Provider and model, e.g. ``"openai-compatible:qwen-plus"``."""
        ...

    def complete(
        self,
        messages: Sequence[Message],
        *,
        tools: Sequence[dict[str, Any]] | None = None,
        temperature: float = 0.2,
        max_tokens: int | None = None,
    ) -> LLMResponse:
        """Return the assistant's reply to ``messages``."""
        ...
