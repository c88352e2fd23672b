"""Preparing writes without the lock: validate, embed, annotate (nothing is stored here).

Every content write follows validate → embed → lock → write: a 200,000-character memory embeds
for seconds, and other threads' searches must not wait for it. Client-supplied ids make retries
idempotent: :func:`existing` finds the items of a batch that are already stored (same id, user,
content and tier) so that they are returned, not stored again; any other use of a taken id is an
:class:`~hello_memory.errors.IdConflictError`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from hello_memory.core import MemoryCore, semantic
from hello_memory.errors import IdConflictError, InvalidInputError
from hello_memory.models import MemoryItem, MemoryType
from hello_memory.stores.dense.base import VECTOR_TIERS
from hello_memory.validation import check_importance, check_metadata, check_text


@dataclass
class Prepared:
    """Validated items with their vectors and graph links, ready for :func:`hello_memory.core.writes.insert`."""

    items: list[MemoryItem]
    vectors: dict[str, np.ndarray]
    links: dict[str, semantic.Links]


@dataclass
class PreparedUpdate:
    """A validated update of ``base`` with the vectors and links of its new content."""

    base: MemoryItem
    content: str | None  # None: the content does not change
    importance: float | None
    metadata: dict[str, Any] | None  # merged into the stored metadata when written
    vectors: dict[str, np.ndarray]
    links: semantic.Links | None
    fields: dict[str, Any] | None = None  # other fields it sets (a conversation edit: speaker, message digest)

    def fits(self, current: MemoryItem) -> bool:
        """True when the memory's content did not change since this was prepared (the vectors hold)."""
        return current.content == self.base.content and current.deleted_at is None

    def apply_to(self, core: MemoryCore, current: MemoryItem) -> MemoryItem:
        """The new version of ``current`` (the stored memory at write time)."""
        changes: dict[str, Any] = {"updated_at": core.now()}
        if self.content is not None:
            changes["content"] = self.content
        if self.importance is not None:
            changes["importance"] = self.importance
        if self.metadata is not None:
            changes["metadata"] = {**current.metadata, **self.metadata}
        if self.fields:
            changes.update(self.fields)
        new = current.model_copy(update=changes)
        return semantic.with_links(new, self.links) if self.links is not None else new


def embed(core: MemoryCore, items: Sequence[MemoryItem]) -> dict[str, np.ndarray]:
    """Vectors for the items of vector-backed tiers, ``embed_batch_size`` texts per embedder call.

    Needs no lock and stores nothing: a failure raises before anything is written.
    """
    todo = [it for it in items if it.memory_type in VECTOR_TIERS]
    out: dict[str, np.ndarray] = {}
    size = core.settings.embed_batch_size
    for start in range(0, len(todo), size):
        part = todo[start : start + size]
        vecs = core.embedder.embed([it.content for it in part], kind="passage")
        out.update({it.id: vecs[i] for i, it in enumerate(part)})
    return out


def prepare(core: MemoryCore, items: Sequence[MemoryItem]) -> Prepared:
    """Embed and annotate new items (no lock needed; raises before anything is stored)."""
    vectors = embed(core, items)
    links = {
        it.id: semantic.annotate(core.llm, it) for it in items if it.memory_type == MemoryType.SEMANTIC
    }
    return Prepared(list(items), vectors, links)


def prepare_update(
    core: MemoryCore,
    item: MemoryItem,
    content: Any,
    importance: Any,
    metadata: Any,
    fields: dict[str, Any] | None = None,
) -> PreparedUpdate:
    """Validate an update and embed its new content (no lock needed).

    ``fields``: other fields of the memory the update sets, already valid (the core's own edits).
    """
    if content is None and importance is None and metadata is None and not fields:
        raise InvalidInputError("nothing to update: give content, importance or metadata")
    text = None if content is None else check_text(content, "content")
    level = None if importance is None else check_importance(importance)
    meta = None if metadata is None else check_metadata(metadata)
    if text is None or text == item.content:
        return PreparedUpdate(item, None, level, meta, {}, None, fields)
    probe = item.model_copy(update={"content": text})
    vectors = embed(core, [probe])
    links = semantic.annotate(core.llm, probe) if item.memory_type == MemoryType.SEMANTIC else None
    return PreparedUpdate(item, text, level, meta, vectors, links, fields)


def existing(
    core: MemoryCore, items: Sequence[MemoryItem], *, forgotten_ok: bool = False
) -> dict[str, MemoryItem]:
    """The stored memories of a retried batch, by id; raises if an id is taken by anything else.

    An id another user holds is refused by the record store when the insert is applied.
    ``forgotten_ok``: a forgotten memory repeated as it is counts as stored (an import of an
    export holding it), instead of asking for ``restore``.
    """
    by_user: dict[str, list[MemoryItem]] = {}
    for it in items:
        by_user.setdefault(it.user_id, []).append(it)
    out: dict[str, MemoryItem] = {}
    for uid, group in by_user.items():
        stored = core.records.read(uid, [it.id for it in group], include_deleted=True)
        for it in group:
            if it.id in stored:
                check_retry(it, stored[it.id].item, forgotten_ok=forgotten_ok)
                out[it.id] = stored[it.id].item
    return out


def check_retry(new: MemoryItem, old: MemoryItem, *, forgotten_ok: bool = False) -> None:
    """A retry must name the same memory: same user, same content and type, not forgotten."""
    if old.user_id != new.user_id:  # say nothing of the other memory, not even whose it is
        raise IdConflictError(f"memory_id {new.id} is already in use; use a new UUID", memory_id=new.id)
    if old.deleted_at is not None and not (forgotten_ok and new.deleted_at is not None):
        raise IdConflictError(
            f"memory {new.id} exists but was forgotten; call restore() instead of adding it again",
            memory_id=new.id,
        )
    if old.content != new.content or old.memory_type != new.memory_type:
        raise IdConflictError(
            f"memory {new.id} already exists with different content or memory type; call update() to "
            "change it, or use a new UUID for a new memory",
            memory_id=new.id,
        )
