"""Which messages of a re-sent conversation a session holds already: the alignment (pure, no store).

A chat app sends its conversation again and again: the whole history each time, its last N messages
(a sliding window), or only the new ones. The session's stored sequence — its turns, live and
forgotten, and the tombstones of removed ones, oldest first — is matched against the sent list as
the **longest overlap of a suffix of the stored sequence with a prefix of the sent one**; what lies
beyond the overlap is new. Repeats are kept: in ``[hi, ok, I moved, ok]`` then ``[I moved, ok, and
I work remotely, ok]`` the overlap is ``[I moved, ok]`` and the second "ok" of the new part is new.

Equality (:func:`same`): a message that carries an id (its own ``id``, or a ``memory_id``) is the
turn of that id; any other is a stored element of the same digest (its speaker and text as first
sent) and, when the message carries its own time, of that time.

**Edits without ids** are the positions of an overlap where the stored and the sent message differ
and the sent one carries no id: the message there replaces its turn. An overlap with differences is
taken only when edits are few — one, or one per :data:`EDIT_SPAN` messages of a longer overlap, at
most :data:`MAX_EDITS` — and it either spans the session from its first turn (the whole history was
sent) or is at least :data:`EDIT_CONTEXT` long with at least two matching messages per edit. Anything
else is ambiguous
— a client sending only its new messages may repeat an earlier exchange ("hi" / "hello"), and in a
chat of short replies ("ok") a window slid by two positions differs from the stored tail at every
other message — and is not taken: those messages count as new.

**A client that drops removed messages** from its history is aligned as well: the overlap is also
sought against the live turns alone, and the longer of the two wins (ties: the one with fewer
edits, then the whole sequence).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

#: The shortest overlap that reveals an edit when it does not span the whole session.
EDIT_CONTEXT = 3
#: An overlap longer than this many messages may hold one more edit per this many ...
EDIT_SPAN = 8
#: ... up to this many edits in one re-send.
MAX_EDITS = 4
#: Two times within this many seconds are the same time (stored times round-trip through floats).
TIME_TOLERANCE = 0.0015


@dataclass(frozen=True, slots=True)
class Slot:
    """One stored element of the session: a turn (live or forgotten) or a tombstone.

    Attributes:
        key: the digest it is matched by (a tombstone's is keyed).
        refs: the ids it answers to (a turn: its memory id, its message id; a tombstone: its mark).
        at: its time (epoch seconds).
        live: a live turn (neither forgotten nor removed).
    """

    key: str
    refs: frozenset[str]
    at: float
    live: bool


@dataclass(frozen=True, slots=True)
class Sent:
    """One sent message, as the alignment sees it.

    Attributes:
        keys: the digests it matches (plain and keyed, current and legacy).
        refs: the ids it answers to (empty: the message carries no id).
        at: its own time (``None``: it carried none).
    """

    keys: frozenset[str]
    refs: frozenset[str] = frozenset()
    at: float | None = None


@dataclass(frozen=True, slots=True)
class Alignment:
    """The overlap found: ``pairs`` maps a sent index to a stored index; ``edits`` are the sent indices
    whose message replaces its turn's."""

    pairs: dict[int, int] = field(default_factory=dict)
    edits: frozenset[int] = frozenset()

    @property
    def overlap(self) -> int:
        """How many leading sent messages the session holds already."""
        return len(self.pairs)


def same(slot: Slot, sent: Sent) -> bool:
    """Whether ``sent`` is the message ``slot`` stores (see the module docstring)."""
    if sent.refs:
        return bool(slot.refs & sent.refs)
    if slot.key not in sent.keys:
        return False
    return sent.at is None or abs(slot.at - sent.at) <= TIME_TOLERANCE


def align(stored: Sequence[Slot], sent: Sequence[Sent], *, whole: bool) -> Alignment:
    """The overlap of ``stored`` (oldest first) with ``sent``; ``whole``: ``stored`` is the entire session."""
    full = _overlap(list(range(len(stored))), stored, sent, whole)
    live = [i for i, s in enumerate(stored) if s.live]
    if len(live) == len(stored):
        return full
    dropped = _overlap(live, stored, sent, whole)
    better = (dropped.overlap, -len(dropped.edits)) > (full.overlap, -len(full.edits))
    return dropped if better else full


def _overlap(order: list[int], stored: Sequence[Slot], sent: Sequence[Sent], whole: bool) -> Alignment:
    """The longest suffix of ``stored[order]`` that is a prefix of ``sent``, edits allowed (module docstring)."""
    m = len(order)
    for k in range(min(m, len(sent)), 0, -1):
        base = m - k
        misses = _differences(order[base:], stored, sent, _most_edits(k))
        if misses is None or (misses and not _edits_allowed(k, len(misses), spans=whole and k == m)):
            continue
        return Alignment({j: order[base + j] for j in range(k)}, frozenset(misses))
    return Alignment()


def _most_edits(k: int) -> int:
    """The most edits an overlap of length ``k`` may hold."""
    return min(MAX_EDITS, max(1, k // EDIT_SPAN))


def _edits_allowed(k: int, edits: int, *, spans: bool) -> bool:
    """Whether an overlap of length ``k`` with ``edits`` differences is taken (module docstring)."""
    return (spans and k - edits >= edits) or (k >= EDIT_CONTEXT and k - edits >= 2 * edits)


def _differences(window: list[int], stored: Sequence[Slot], sent: Sequence[Sent], most: int) -> list[int] | None:
    """The positions where ``sent`` differs from ``stored[window]``; ``None`` when there are more than
    ``most``, or one of them is a message that carries an id (its turn is the one of that id: no edit).
    Stopping at the first difference too many keeps a long re-send linear in practice."""
    misses: list[int] = []
    for j, i in enumerate(window):
        if same(stored[i], sent[j]):
            continue
        if sent[j].refs or len(misses) == most:
            return None
        misses.append(j)
    return misses
