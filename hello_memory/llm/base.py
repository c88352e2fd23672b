"""The LLM client contract (chat completions with optional native tool calls) and its shared front."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass
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


@dataclass(frozen=True, slots=True)
class ChatRequest:
    """The arguments of one :meth:`LLMClient.complete` call (fresh lists, the caller's dicts)."""

    messages: list[Message]
    tools: list[dict[str, Any]] | None
    temperature: float
    max_tokens: int | None


class ChatLLM(ABC):
    """An :class:`LLMClient` whose :meth:`complete` hands one :class:`ChatRequest` to :meth:`_complete`.

    Subclasses name themselves and answer a request; the signature of ``complete`` lives here once.

    Example:
        >>> class Echo(ChatLLM):
        ...     name = "echo"
        ...     def _complete(self, request):
        ...         return LLMResponse(content=request.messages[-1]["content"], model=self.name)
        >>> Echo().complete([{"role": "user", "content": "hi"}]).content
        'hi'
    """

    @property
    @abstractmethod
    def name(self) -> str:
        """Provider and model, e.g. ``"openai-compatible:qwen-plus"``."""

    def complete(
        self,
        messages: Sequence[Message],
        *,
        tools: Sequence[dict[str, Any]] | None = None,
        temperature: float = 0.2,
        max_tokens: int | None = None,
    ) -> LLMResponse:
        """Return the assistant's reply to ``messages`` (see :meth:`LLMClient.complete`)."""
        return self._complete(
            ChatRequest(list(messages), None if tools is None else list(tools), temperature, max_tokens)
        )

    @abstractmethod
    def _complete(self, request: ChatRequest) -> LLMResponse:
        """The reply to ``request``; raise :class:`hello_memory.errors.LLMError` on failure."""
