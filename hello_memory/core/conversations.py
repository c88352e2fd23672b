"""Conversations kept exactly and privately: what ``add(messages, session_id=...)`` stores.

A chat app sends its conversation again and again. ``add`` matches the messages against the
session's stored turns (:mod:`hello_memory.core.alignment`) and, per message:

- **new** (beyond the overlap, or carrying an id no turn has): stored as a new turn;
- **the same** (in the overlap, or carrying the id of a turn): nothing is stored; the turn is
  returned as it is now — an ``update()`` the user made to it stays;
- **edited** (a message with an id whose text changed, or a difference inside an overlap that the
  alignment takes as an edit): its turn is updated in place — a new version in its history, the
  same id, position and time;
- **forgotten or removed** (the message of a turn the user forgot, or removed: a tombstone): nothing
  is stored and nothing returned — what the user took away stays away; if the message was edited in
  the chat meanwhile, the forgotten turn or the tombstone is matched by the edited message from then
  on (so the chat and the store stay aligned), its content unchanged.

``add`` returns the turns of the messages that have one, in message order.

**Ids reveal nothing.** A new turn's id is an HMAC under the store's random key
(:class:`~hello_memory.stores.records.ledger.TurnLedger`): of the message's own ``id`` when it has
one, else of its digest and the id of the element it follows in the session. Without the key no one
can compute the id another user's message gets, so no answer (a 409 for a taken ``memory_id``, an
error, a time) tells whether a text was said, and no one can take the id first. Deriving ids (rather
than drawing random ones) keeps a retry — or two workers running the same call — storing each turn
once: the same call names the same ids, and the record store's insert is idempotent by id.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta, timezone
from typing import Any

from hello_memory.core import MemoryCore, writes
from hello_memory.core.alignment import Alignment, Sent, Slot, align
from hello_memory.core.items import SentMessage, is_turn
from hello_memory.core.tombstones import Element, Keys, signature
from hello_memory.core.unit import commit
from hello_memory.errors import IdConflictError, InvalidInputError, NotFoundError
from hello_memory.models import HistoryEntry, MemoryItem, MemoryType
from hello_memory.pace import pace
from hello_memory.stores.records.base import RecordOrder, RecordQuery, RecordWrite
from hello_memory.stores.records.ledger import Tombstone, TurnLedger

logger = logging.getLogger(__name__)
Store = Callable[[list[MemoryItem]], list[MemoryItem]]
_MS = timedelta(milliseconds=1)
_WINDOW_SLACK = 32  # stored memories read beyond twice the sent messages (notes of the session among the turns)


def ledger(core: MemoryCore) -> TurnLedger:
    """The record store's conversation ledger; a store without one cannot keep conversations."""
    records = core.records
    if not isinstance(records, TurnLedger):
        raise InvalidInputError(
            f"the record store {type(records).__name__} keeps no conversation ledger (turn_key, tombstones, "
            "bury): add the messages as texts, or use a record store that implements TurnLedger"
        )
    return records


def add(core: MemoryCore, sent: Sequence[SentMessage], *, store: Store) -> list[MemoryItem]:
    """Store what is new in a conversation, apply its edits, and return its turns (module docstring).

    ``store`` writes new items (validate → embed → lock → insert, idempotent by id): the façade's.
    """
    keys = Keys(ledger(core).turn_key(), sent[0].item.user_id, str(sent[0].item.session_id))
    plan = _plan(core, keys, sent)
    added = {it.id: it for it in store(plan.new)} if plan.new else {}
    out: list[MemoryItem] = []
    for n, message in enumerate(sent):
        if n in plan.new_ids:
            out.append(added[plan.new_ids[n]])
        elif n in plan.edits:
            edited = _edit(core, plan.edits[n], message.item)
            out.extend([edited] if edited is not None else [])
        elif n in plan.kept:
            out.append(plan.kept[n])
        elif n in plan.follow:
            _follow(core, keys, plan.follow[n], message.item)
    return out


@dataclass
class _Plan:
    """What ``add`` does per message index: store new, keep, edit (else: forgotten or removed)."""

    new: list[MemoryItem] = field(default_factory=list)
    new_ids: dict[int, str] = field(default_factory=dict)
    kept: dict[int, MemoryItem] = field(default_factory=dict)
    edits: dict[int, MemoryItem] = field(default_factory=dict)
    follow: dict[int, Element] = field(default_factory=dict)  # forgotten / removed: only the digest follows


@dataclass
class _Session:
    """The session as stored: its last elements (oldest first), and every element a sent id names."""

    slots: list[Slot]
    behind: list[Element]
    whole: bool
    named: dict[str, Element]


def _plan(core: MemoryCore, keys: Keys, sent: Sequence[SentMessage]) -> _Plan:
    refs = [_ref(keys, m) for m in sent]
    views = [_view(keys, m, r) for m, r in zip(sent, refs, strict=True)]
    session = _read_session(core, keys, len(sent), [r for r in refs if r is not None])
    found = align(session.slots, views, whole=session.whole)
    plan = _Plan()
    after = _anchor(session.behind[-1]) if session.behind else ""
    last = max((_time(e) for e in session.behind), default=None)
    for n, (message, ref) in enumerate(zip(sent, refs, strict=True)):
        pace()
        element = _matched(found, session, n, views[n])
        if element is None:
            item = message.item.model_copy(update={"id": ref or keys.turn_id(_digest(message), after)})
            if not message.timed and last is not None and item.created_at.timestamp() <= last:
                # a message without a time follows the turns stored before it (calls a few ms apart)
                item = item.model_copy(update={"created_at": datetime.fromtimestamp(last, timezone.utc) + _MS})
            plan.new.append(item)
            plan.new_ids[n] = after = item.id
            last = max(last or float("-inf"), item.created_at.timestamp())
            continue
        _settle(plan, n, element, message, views[n], edited=n in found.edits or ref is not None)
    return plan


def _matched(found: Alignment, session: _Session, n: int, view: Sent) -> Element | None:
    if n in found.pairs:
        return session.behind[found.pairs[n]]
    return next((session.named[r] for r in sorted(view.refs) if r in session.named), None)


def _settle(plan: _Plan, n: int, element: Element, message: SentMessage, view: Sent, *, edited: bool) -> None:
    """A message whose turn is stored: kept as it is or edited; or, forgotten or removed, left so."""
    if isinstance(element, Tombstone):
        if edited and element.digest not in view.keys:
            plan.follow[n] = element
        return
    if not is_turn(element) or element.session_id != message.item.session_id:
        raise IdConflictError(
            f"memory_id {element.id} names a memory that is not a turn of this conversation; use a new UUID",
            memory_id=element.id,
        )
    changed = edited and signature(element) not in (message.item.message_digest, message.legacy)
    if element.deleted_at is not None:
        if changed:
            plan.follow[n] = element
    elif changed:
        plan.edits[n] = element
    else:
        plan.kept[n] = element


def _edit(core: MemoryCore, turn: MemoryItem, message: MemoryItem) -> MemoryItem | None:
    """Replace a turn's message in place (a new version of the turn); ``None`` if it was removed or forgotten since."""
    try:
        return writes.update_memory(core, turn.user_id, turn.id, message.content, None, None, _message_fields(message))
    except NotFoundError:
        return None


def _follow(core: MemoryCore, keys: Keys, element: Element, message: MemoryItem) -> None:
    """A message edited in the chat whose turn the user forgot or removed: the turn stays forgotten (its
    content as it was) or removed, and is matched by the edited message from now on."""
    if isinstance(element, Tombstone):
        ledger(core).bury(keys.user, [replace(element, digest=keys.mac(str(message.message_digest)))])
        return
    with core.lock:
        rec = core.records.read(keys.user, [element.id], include_deleted=True).get(element.id)
        if rec is None or rec.item.deleted_at is None:
            return  # removed or restored since: the next re-send sees it as it is then
        new = rec.item.model_copy(update=_message_fields(message))
        entry = HistoryEntry(memory_id=new.id, event="update", old={"message_digest": rec.item.message_digest},
                             new={"message_digest": new.message_digest}, at=core.now())
        write = RecordWrite(new, expected_version=rec.version, history=(entry,))
        commit(core, [write], index=lambda stored: None, undo=None, hold=False, what="conversation edit")


def _message_fields(message: MemoryItem) -> dict[str, Any]:
    """What a turn takes from the message it records, besides its text."""
    fields: dict[str, Any] = {"participants": message.participants, "message_digest": message.message_digest}
    if message.message_id is not None:
        fields["message_id"] = message.message_id
    return fields


def _ref(keys: Keys, message: SentMessage) -> str | None:
    """The memory id a message names itself: its ``memory_id``, or the one its own ``id`` gives."""
    if message.memory_id is not None:
        return message.memory_id
    own = message.item.message_id
    return None if own is None else keys.message_id(own)


def _digest(message: SentMessage) -> str:
    return message.item.message_digest or message.legacy


def _view(keys: Keys, message: SentMessage, ref: str | None) -> Sent:
    pace()  # once per message of a conversation (hello_memory.pace)
    plain = {_digest(message), message.legacy}
    refs: set[str] = set()
    if ref is not None:
        refs |= {ref, keys.mark(ref)}
    if message.item.message_id is not None:
        refs.add(f"message:{message.item.message_id}")
    at = message.item.created_at.timestamp() if message.timed else None
    return Sent(frozenset(plain | {keys.mac(d) for d in plain}), frozenset(refs), at)


def _refs(element: Element) -> set[str]:
    if isinstance(element, Tombstone):
        return {element.mark}
    return {element.id} | ({f"message:{element.message_id}"} if element.message_id is not None else set())


def _anchor(element: Element) -> str:
    return element.mark if isinstance(element, Tombstone) else element.id


def _slot(element: Element) -> Slot:
    if isinstance(element, Tombstone):
        return Slot(element.digest, frozenset(_refs(element)), element.at, live=False)
    live = element.deleted_at is None
    return Slot(signature(element), frozenset(_refs(element)), element.created_at.timestamp(), live)


def _time(element: Element) -> float:
    return element.at if isinstance(element, Tombstone) else element.created_at.timestamp()


def _read_session(core: MemoryCore, keys: Keys, sent: int, refs: list[str]) -> _Session:
    """The session's last turns (at least ``sent`` of them, or all) and tombstones, oldest first, and
    every turn or tombstone the ``refs`` of the sent messages name."""
    turns, whole = _last_turns(core, keys, sent)
    wanted = sorted(set(refs) - {it.id for it in turns})
    named_turns = list(core.records.read(keys.user, wanted, include_deleted=True).values()) if wanted else []
    marks = {keys.mark(it.id) for it in [*turns, *(rec.item for rec in named_turns)]}
    # A tombstone of a turn that is still there: buried, then the process died before the deletion.
    stones = [t for t in ledger(core).tombstones(keys.user, keys.session) if t.mark not in marks]
    first = turns[0].created_at.timestamp() if turns and not whole else float("-inf")
    behind: list[Element] = sorted([*turns, *(t for t in stones if t.at >= first)], key=_time)
    named: dict[str, Element] = {}
    for element in [*stones, *(rec.item for rec in named_turns), *behind]:
        named.update(dict.fromkeys(_refs(element), element))
    return _Session([_slot(e) for e in behind], behind, whole, named)


def _last_turns(core: MemoryCore, keys: Keys, sent: int) -> tuple[list[MemoryItem], bool]:
    """The session's last turns, oldest first — at least ``sent`` of them, or all — and whether they are all."""
    limit = 2 * sent + _WINDOW_SLACK
    query = RecordQuery(types=(MemoryType.EPISODIC,), deleted=None, session_id=keys.session,
                        order=RecordOrder.NEWEST, limit=limit)
    recent = core.records.scan(keys.user, query)
    turns = sorted((it for it in reversed(recent) if is_turn(it)), key=_time)
    if len(recent) < limit:
        return turns, True
    if len(turns) >= sent:
        return turns, False
    everything = core.records.scan(keys.user, RecordQuery(
        types=(MemoryType.EPISODIC,), deleted=None, session_id=keys.session, order=RecordOrder.OLDEST))
    return sorted((it for it in everything if is_turn(it)), key=_time), True
