"""Context injection (docs/design.md §7): retrieve → floor → rank → cut to budget → render as evidence.

Only what cleared the relevance floor reaches the block: a search list may go on, after those
memories, with candidates that did not (``ScoredMemory.below_floor``: recall at depth for a caller
that ranks), and a prompt is no place for them (docs/design.md §5).

Memories are rendered as labelled, quoted evidence — data for the model, never instructions —
and by default outside the system block (position ``"user"``), so stored text cannot pose as
the developer's instructions.
"""

from __future__ import annotations

from typing import Any, Literal, Protocol

from pydantic import BaseModel, ConfigDict, Field

from hello_memory.errors import InvalidInputError
from hello_memory.language.text import estimate_tokens
from hello_memory.models import ScoredMemory, cleared
from hello_memory.render import memory_evidence, memory_label
from hello_memory.validation import check_budget, check_score

__all__ = ["ContextBlock", "Position", "Search", "build_context"]

Position = Literal["system", "user", "tool"]


class Search(Protocol):
    """What :func:`build_context` retrieves with (``MemoryManager.search`` fits): hits, best first."""

    def __call__(
        self, query: str, *, user_id: str | None, limit: int, min_score: float | None
    ) -> list[ScoredMemory]: ...


class ContextBlock(BaseModel):
    """Rendered memories plus their provenance, ready to insert into a chat."""

    model_config = ConfigDict(extra="forbid")

    text: str
    position: Position
    tokens: int
    hits: list[ScoredMemory] = Field(default_factory=list)
    dropped: int = Field(default=0, description="relevant hits left out by the budget")

    def messages(self, tool_call_id: str = "memory_context") -> list[dict[str, Any]]:
        """The block as chat messages for its position (empty when nothing was retrieved)."""
        if not self.hits:
            return []
        if self.position == "tool":
            return [{"role": "tool", "tool_call_id": tool_call_id, "content": self.text}]
        return [{"role": self.position, "content": self.text}]


def build_context(
    search: Search,
    query: str,
    *,
    budget_tokens: int,
    floor: float | None,
    position: str,
    user_id: str | None,
    limit: int,
) -> ContextBlock:
    """Retrieve with ``search``, keep the hits that cleared the relevance floor and score at least
    ``floor``, cut to the budget from the top, render.

    See :meth:`hello_memory.manager.MemoryManager.build_context`; ``search`` is its ``search``.
    """
    if position not in ("system", "user", "tool"):
        raise InvalidInputError("position must be 'system', 'user' or 'tool'", field="position")
    where: Position = position  # type: ignore[assignment]  # narrowed by the check above
    check_budget(budget_tokens)
    check_score(floor, "floor")
    hits = cleared(search(query, user_id=user_id, limit=limit, min_score=floor))
    overhead = estimate_tokens(memory_evidence([]))
    kept: list[ScoredMemory] = []
    used = overhead
    for h in hits:  # from the top: the first memory that does not fit ends the block
        cost = estimate_tokens(memory_label(h)) + estimate_tokens(h.item.content) + 1
        if used + cost > budget_tokens:
            break
        kept.append(h)
        used += cost
    text = memory_evidence(kept) if kept else ""
    return ContextBlock(  # position validated above
        text=text,
        position=where,
        tokens=estimate_tokens(text) if kept else 0,
        hits=kept,
        dropped=len(hits) - len(kept),
    )
