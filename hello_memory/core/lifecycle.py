"""Lifecycle: working-memory limits, forget policies, consolidation (docs/design.md §6)."""

from __future__ import annotations

import logging
import math
from collections.abc import Sequence
from typing import Any

from hello_memory.core import MemoryCore, deletes, state, tombstones, writes
from hello_memory.core.prepare import prepare
from hello_memory.core.scoring import recency
from hello_memory.errors import IndexPendingError, InvalidInputError, LLMError
from hello_memory.language.text import lexical_tokens
from hello_memory.models import (
    ConsolidateReport,
    ForgetReport,
    ForgottenItem,
    MemoryItem,
    MemoryType,
)
from hello_memory.stores.records.base import RecordOrder, RecordQuery
from hello_memory.validation import (
    check_flag,
    check_importance,
    check_memory_type,
    check_memory_types,
    check_number,
)

logger = logging.getLogger(__name__)
STRATEGIES = ("importance_based", "time_based", "capacity_based", "combined")
DUPLICATE_COSINE = 0.97


def _select(
    core: MemoryCore,
    items: list[MemoryItem],
    strategy: str,
    threshold: float,
    max_age_days: float,
    capacity: int | None,
) -> list[tuple[MemoryItem, str]]:
    now = core.now()
    if strategy == "importance_based":
        return [
            (it, f"importance {it.importance:.2f} < {threshold}") for it in items if it.importance < threshold
        ]
    if strategy == "time_based":
        limit_s = max_age_days * 86400
        return [
            (it, f"older than {max_age_days:g} days")
            for it in items
            if (now - it.created_at).total_seconds() > limit_s
        ]
    if strategy == "capacity_based":
        cap = capacity if capacity is not None else 1000
        ranked = sorted(items, key=lambda it: (it.importance, it.last_accessed_at or it.created_at))
        over = max(0, len(items) - cap)
        return [(it, f"over capacity {cap}") for it in ranked[:over]]
    out = []
    for it in items:
        age_h = (now - it.created_at).total_seconds() / 3600
        retention = it.importance * (1 + math.log1p(it.access_count)) * recency(age_h)
        if retention < threshold:
            out.append((it, f"retention {retention:.3f} < {threshold}"))
    return out


def forget(
    core: MemoryCore,
    strategy: str,
    *,
    threshold: Any,
    max_age_days: Any,
    capacity: int | None,
    memory_types: Sequence[Any] | None,
    user_id: str,
    purge: bool,
) -> ForgetReport:
    """See :meth:`MemoryManager.forget`."""
    if strategy not in STRATEGIES:
        raise InvalidInputError(
            f"unknown forget strategy {strategy!r}; expected one of {', '.join(STRATEGIES)}", field="strategy"
        )
    purge = check_flag(purge, "purge")
    threshold = check_importance(threshold, "threshold")
    max_age = check_number(max_age_days, "max_age_days")
    if capacity is not None and (isinstance(capacity, bool) or not isinstance(capacity, int) or capacity < 0):
        raise InvalidInputError("capacity must be a non-negative integer", field="capacity")
    types = check_memory_types(memory_types, core.enabled)
    chosen: list[tuple[MemoryItem, str]] = []
    for t in types:  # capacity applies per tier
        items = core.records.scan(user_id, RecordQuery(types=(t,)))
        chosen += _select(core, items, strategy, threshold, max_age, capacity)
    report = ForgetReport(
        strategy=strategy,
        purged=purge,
        forgotten=[
            ForgottenItem(id=it.id, memory_type=it.memory_type, content=it.content, reason=r)
            for it, r in chosen
        ],
    )
    try:
        ids, reasons = [it.id for it, _ in chosen], [r for _, r in chosen]
        deletes.in_steps(core, user_id, ids, hard=purge, reasons=reasons)  # bounded write steps
    except IndexPendingError as e:  # committed: the report is true, only the index lags
        e.result = report
        raise
    return report


def consolidate(
    core: MemoryCore, from_type: Any, to_type: Any, importance_threshold: Any, *, user_id: str
) -> ConsolidateReport:
    """See :meth:`MemoryManager.consolidate`: all-or-nothing, de-duplicated against the target tier."""
    src = check_memory_type(from_type, core.enabled, "from_type")
    dst = check_memory_type(to_type, core.enabled, "to_type")
    _check_direction(src, dst)
    threshold = check_importance(importance_threshold, "importance_threshold")
    sources = [
        it
        for it in core.records.scan(user_id, RecordQuery(types=(src,), order=RecordOrder.OLDEST))
        if it.importance >= threshold
    ]
    report = ConsolidateReport(from_type=src, to_type=dst, importance_threshold=threshold)
    if not sources:
        return report
    texts, by_llm = _summaries(core, sources, dst)
    existing = {_norm(it.content): it for it in core.records.scan(user_id, RecordQuery(types=(dst,)))}
    new_items, merges = [], []
    for it, text in zip(sources, texts, strict=True):
        twin = existing.get(_norm(text))
        if twin is not None:
            merges.append((it, twin))
            continue
        new = MemoryItem(
            user_id=user_id,
            memory_type=dst,
            content=text,
            importance=it.importance,
            session_id=it.session_id,
            created_at=it.created_at,
            updated_at=core.now(),
            agent_id=it.agent_id,
            metadata={**it.metadata, "consolidated_from": it.id, "consolidated_from_type": src.value},
        )
        existing[_norm(text)] = new
        new_items.append(new)
    _commit_consolidation(core, sources, new_items, merges)
    report.promoted = [n.id for n in new_items]
    report.merged = [s.id for s, _ in merges]
    report.source_ids = [s.id for s in sources]
    report.summarised_by_llm = by_llm
    return report


#: Consolidation moves memories towards longer-lived tiers only.
TIER_ORDER = (MemoryType.WORKING, MemoryType.EPISODIC, MemoryType.SEMANTIC)


def _check_direction(src: MemoryType, dst: MemoryType) -> None:
    """Only working → episodic → semantic (skipping a step is allowed); never back, never perceptual.

    Moving back would copy long-term memories into working memory, whose TTL purge then deletes
    them for good. Perceptual memories are long-term records of media (modality, source file,
    hash) in their own collections: neither a source nor a target of consolidation.
    """
    if src == dst:
        raise InvalidInputError("from_type and to_type must differ")
    if MemoryType.PERCEPTUAL in (src, dst):
        raise InvalidInputError(
            "perceptual memories are not consolidated (they keep their media); "
            "consolidate working → episodic → semantic",
            field="from_type" if src == MemoryType.PERCEPTUAL else "to_type",
        )
    if TIER_ORDER.index(src) > TIER_ORDER.index(dst):
        raise InvalidInputError(
            f"cannot consolidate {src.value} into {dst.value}: consolidation only moves memories to "
            "longer-lived tiers (working → episodic → semantic)",
            field="to_type",
        )


def _norm(text: str) -> str:
    return " ".join(lexical_tokens(text)) or text.strip().casefold()


def _summaries(core: MemoryCore, sources: list[MemoryItem], dst: MemoryType) -> tuple[list[str], bool]:
    """Target-tier texts: the LLM rewrites events as facts when one is configured, else content as is."""
    if core.llm is None or dst != MemoryType.SEMANTIC:
        return [s.content for s in sources], False
    out = []
    try:
        for s in sources:
            reply = core.llm.complete(
                [
                    {
                        "role": "system",
                        "content": "Rewrite the event as one durable fact about the user, "
                        "in the event's language. Reply with the fact only.",
                    },
                    {"role": "user", "content": s.content},
                ]
            ).content.strip()
            out.append(reply or s.content)
    except LLMError as e:
        logger.warning("LLM summarising failed, consolidating the original text: %s", e)
        return [s.content for s in sources], False
    return out, True


def _commit_consolidation(
    core: MemoryCore,
    sources: list[MemoryItem],
    new_items: list[MemoryItem],
    merges: list[tuple[MemoryItem, MemoryItem]],
) -> None:
    """Promote, merge and remove the sources, :data:`~hello_memory.core.state.STEP` per write unit (see
    :func:`hello_memory.core.writes.consolidate`); each step embeds its new memories before it takes
    the lock. Every step is all or nothing; a consolidation that fails midway keeps the steps done
    (their sources are gone, promoted) and raises: running it again promotes the rest, merging into
    what earlier steps stored instead of promoting twice. Conversation turns among the sources leave
    tombstones, so a re-sent chat does not store them again."""
    for start in range(0, len(sources), state.STEP):
        part = sources[start : start + state.STEP]
        ids = {s.id for s in part}
        mine = [it for it in new_items if it.metadata.get("consolidated_from") in ids]
        twins = [(src, twin) for src, twin in merges if src.id in ids]
        prepared = prepare(core, mine)  # embedding: outside the lock
        with core.lock:
            tombstones.bury(core, part)
            writes.consolidate(core, part, prepared, twins)
