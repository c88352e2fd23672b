"""Building memories from the arguments of ``add`` / ``add_many``: validation only, nothing is stored.

A conversation (``add(messages, session_id=...)``) becomes one episodic *turn* per message
(:func:`build_turns`): its speaker as participant, its time, ``event_type="conversation"``, so the
record stores index it with the turns around it and search prefers the turns of a person a query names.
Which of the messages are new, and the ids of the new ones, are decided against the session's stored
turns (:mod:`hello_memory.core.conversations`).
"""

from __future__ import annotations

import hashlib
import json
import mimetypes
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from hello_memory.core.gate import TYPED_FIELDS
from hello_memory.core.gate import check_typed_fields as _check_typed
from hello_memory.errors import InvalidInputError
from hello_memory.models import MemoryItem, MemoryType, Modality
from hello_memory.pace import pace
from hello_memory.stores.records.sqlite_lexical import TURN_EVENT_TYPE
from hello_memory.validation import (
    check_datetime,
    check_id,
    check_importance,
    check_memory_id,
    check_memory_type,
    check_metadata,
    check_text,
)

#: Keys of an ``add_many`` item besides the typed fields.
ITEM_KEYS = {
    "content",
    "memory_type",
    "importance",
    "user_id",
    "session_id",
    "created_at",
    "metadata",
    "memory_id",
}
_EXT_MODALITY = {
    "image": Modality.IMAGE,
    "audio": Modality.AUDIO,
    "video": Modality.VIDEO,
    "text": Modality.TEXT,
}
MAX_HASH_BYTES = 512 * 1024 * 1024
#: Keys of a conversation message: OpenAI's ``role``, ``content`` and ``name``, plus its own ``id`` (as
#: OpenAI's Responses API, LangChain and the AI SDK give it), a time and a memory id.
MESSAGE_KEYS = frozenset({"role", "content", "name", "id", "created_at", "memory_id"})
_TURN_SET = ("event_type", "participants")  # what a conversation sets on each turn itself


@dataclass(frozen=True, slots=True)
class SentMessage:
    """One message of a conversation given to ``add``, validated and built as the turn it would store.

    Attributes:
        item: the turn; its ``id`` is provisional unless ``memory_id`` is given (the conversation's
            alignment names it: :mod:`hello_memory.core.conversations`).
        timed: the message carried its own ``created_at``.
        memory_id: the message's own ``memory_id``.
        legacy: the digest a turn stored before message digests existed is matched by (:func:`turn_digest`).
    """

    item: MemoryItem
    timed: bool
    memory_id: str | None
    legacy: str


def infer_modality(path: str | None) -> Modality:
    """Modality from a file extension (``photo.jpg`` → image); ``text`` without a path."""
    if not path:
        return Modality.TEXT
    mime, _ = mimetypes.guess_type(path)
    return _EXT_MODALITY.get((mime or "").split("/")[0], Modality.OTHER)


def build_item(
    *,
    enabled: tuple[MemoryType, ...],
    now: datetime,
    content: Any,
    memory_type: Any,
    importance: Any,
    user_id: str,
    session_id: Any,
    created_at: Any,
    metadata: Any,
    fields: dict[str, Any],
    memory_id: Any = None,
) -> MemoryItem:
    """Validate the arguments of ``add`` and build the item (nothing is stored here).

    ``enabled`` are the tiers a memory may go to; ``now`` is its time unless ``created_at`` is given.
    """
    pace()  # once per item of a write of many (hello_memory.pace)
    content = check_text(content, "content")
    mt = check_memory_type(MemoryType.WORKING if memory_type is None else memory_type, enabled)
    unknown = set(fields) - TYPED_FIELDS
    if unknown:
        hint = "; a client-supplied id is 'memory_id'" if "id" in unknown else ""
        raise InvalidInputError(f"unknown field(s) {sorted(unknown)}; put free-form data in metadata{hint}")
    meta = check_metadata(metadata)
    kwargs: dict[str, Any] = {k: v for k, v in fields.items() if v is not None}
    if memory_id is not None:
        kwargs["id"] = check_memory_id(memory_id)
    if mt == MemoryType.PERCEPTUAL:
        _perceptual_fields(kwargs, meta)
    if kwargs.get("agent_id") is not None:
        check_id(kwargs["agent_id"], "agent_id")
    if "participants" in kwargs:
        kwargs["participants"] = _check_participants(kwargs["participants"])
    if "valid_from" in kwargs:
        kwargs["valid_from"] = check_datetime(kwargs["valid_from"], "valid_from")
    try:
        item = MemoryItem(
            user_id=user_id,
            memory_type=mt,
            content=content,
            importance=check_importance(importance),
            session_id=None if session_id is None else check_id(session_id, "session_id"),
            created_at=now if created_at is None else check_datetime(created_at, "created_at"),
            updated_at=now,
            metadata=meta,
            **kwargs,
        )
    except ValueError as e:  # pydantic validation of typed fields
        raise InvalidInputError(f"invalid memory fields: {e}") from e
    _check_typed(item)
    return item


def build_items(
    specs: Iterable[Any], *, enabled: tuple[MemoryType, ...], now: datetime, user: Callable[[Any], str]
) -> list[MemoryItem]:
    """Validate every ``add_many`` item (dicts with at least ``content``) before any is stored.

    ``user`` turns an item's ``user_id`` (``None`` when it has none) into the checked user id.
    """
    if isinstance(specs, str | bytes | dict) or not isinstance(specs, Iterable):
        raise InvalidInputError("items must be an iterable of dicts, each with at least 'content'")
    built: list[MemoryItem] = []
    for n, spec in enumerate(specs):
        if not isinstance(spec, dict):
            raise InvalidInputError(f"item {n} must be a dict with at least 'content'")
        if "content" not in spec:
            raise InvalidInputError(f"item {n} has no 'content'", field="content")
        built.append(
            build_item(
                enabled=enabled,
                now=now,
                content=spec["content"],
                memory_type=spec.get("memory_type", "working"),
                importance=spec.get("importance", 0.5),
                user_id=user(spec.get("user_id")),
                session_id=spec.get("session_id"),
                created_at=spec.get("created_at"),
                metadata=spec.get("metadata"),
                fields={k: v for k, v in spec.items() if k not in ITEM_KEYS},
                memory_id=spec.get("memory_id"),
            )
        )
    return _unique(built)


def _unique(built: list[MemoryItem]) -> list[MemoryItem]:
    seen: set[str] = set()
    for it in built:
        if it.id in seen:
            raise InvalidInputError(f"memory_id {it.id} appears twice in the batch", field="memory_id")
        seen.add(it.id)
    return built


def is_conversation(content: Any) -> bool:
    """Whether ``add``'s ``content`` is a conversation (a list of messages) rather than one text."""
    return isinstance(content, list | tuple)


def build_turns(
    *,
    enabled: tuple[MemoryType, ...],
    now: datetime,
    content: Sequence[Any],
    memory_type: Any,
    importance: Any,
    user_id: str,
    session_id: Any,
    created_at: Any,
    metadata: Any,
    fields: dict[str, Any],
    memory_id: Any = None,
) -> list[SentMessage]:
    """Validate a conversation given to ``add`` and build the turn of each message, in order (nothing is stored).

    Each message (``{"role", "content", "name"?, "id"?, "created_at"?, "memory_id"?}``) becomes an
    episodic memory of ``session_id`` with ``event_type="conversation"``, its text as content (led by
    the speaker's ``name`` when it has one: :func:`turn_text`), its speaker (``name``, else ``role``)
    as its participant, its own ``id`` as ``message_id`` and the digest of what was said
    (:func:`message_digest`) as ``message_digest``. A message without ``created_at`` is dated
    ``created_at`` (default ``now``) plus its position in milliseconds, so turns keep their order.
    ``importance``, ``metadata`` and the other typed ``fields`` apply to every turn. Any bad message
    refuses the whole list.
    """
    if memory_id is not None:
        raise InvalidInputError(
            "a conversation takes no memory_id: its turns' ids are derived from the messages, or give "
            "each message its own 'id' (or 'memory_id')",
            field="memory_id",
        )
    if memory_type is not None and check_memory_type(memory_type, enabled) != MemoryType.EPISODIC:
        raise InvalidInputError("a conversation is stored as episodic turns: memory_type must be 'episodic'",
                                field="memory_type")
    if session_id is None:
        raise InvalidInputError(
            "a conversation needs session_id (the chat's id): each turn is searched with the turns around it",
            field="session_id",
        )
    session = check_id(session_id, "session_id")
    taken = [k for k in _TURN_SET if k in fields]
    if taken:
        raise InvalidInputError(f"a conversation sets {taken} on each turn itself; leave them out",
                                field=taken[0])
    if not content:
        raise InvalidInputError("the conversation has no messages", field="content")
    start = now if created_at is None else check_datetime(created_at, "created_at")
    turn_fields = {**fields, "event_type": TURN_EVENT_TYPE}
    sent: list[SentMessage] = []
    for n, message in enumerate(content):
        role, text, name, when, mid, own_id = _message(message, n)
        item = build_item(
            enabled=enabled,
            now=now,
            content=turn_text(name, text),
            memory_type=MemoryType.EPISODIC,
            importance=importance,
            user_id=user_id,
            session_id=session,
            created_at=start + timedelta(milliseconds=n) if when is None else when,
            metadata=metadata,
            fields={**turn_fields, "participants": [name or role]},
            memory_id=mid,
        )
        item = item.model_copy(update={"message_id": own_id, "message_digest": message_digest(role, name, text)})
        sent.append(SentMessage(item, when is not None, mid, turn_digest(name or role, item.content)))
    _unique([m.item for m in sent])
    _unique_message_ids(sent)
    return sent


def _unique_message_ids(sent: list[SentMessage]) -> None:
    seen: set[str] = set()
    for m in sent:
        if m.item.message_id is not None:
            if m.item.message_id in seen:
                raise InvalidInputError(f"message id {m.item.message_id!r} appears twice in the conversation",
                                        field="content")
            seen.add(m.item.message_id)


def is_turn(item: MemoryItem) -> bool:
    """Whether a memory is a conversation turn: episodic, of a session, ``event_type="conversation"``."""
    episodic = item.memory_type == MemoryType.EPISODIC
    return episodic and item.session_id is not None and item.event_type == TURN_EVENT_TYPE


def turn_text(name: str | None, text: str) -> str:
    """A turn's content: ``"name: text"`` for a named speaker, else the text.

    Questions name people, and the name in the text is what BM25 and the embedder match (measured in
    BENCHMARKS.md, "Conversations"); a role (``user``, ``assistant``) names no one and is not written.
    A text already led by the name keeps it once.
    """
    if name is None or text.startswith(f"{name}:"):
        return text
    return f"{name}: {text}"


def message_digest(role: str, name: str | None, text: str) -> str:
    """SHA-256 of what a message said — its role, name and text (not its time, not its id).

    A re-sent message is recognised by it among the session's turns, so a turn whose content the
    user changed with ``update()`` is still the turn of that message. It says nothing the turn's own
    content does not (and a tombstone keeps only a keyed digest of it).
    """
    return _sha256(["message", role, name, text])


def turn_digest(speaker: str, content: str) -> str:
    """The digest of a turn stored without ``message_digest`` (before it existed): its speaker and content."""
    return _sha256(["turn", speaker, content])


def _sha256(parts: list[Any]) -> str:
    return hashlib.sha256(json.dumps(parts, ensure_ascii=False).encode("utf-8")).hexdigest()


def _message(message: Any, n: int) -> tuple[str, str, str | None, datetime | None, str | None, str | None]:
    """``(role, text, name, time, memory_id, id)`` of the ``n``-th message, validated."""
    where = f"message {n}"
    if not isinstance(message, Mapping):
        raise InvalidInputError(
            f"{where} must be a {{'role': ..., 'content': ...}} mapping, got {type(message).__name__}",
            field="content",
        )
    unknown = sorted(str(k) for k in message if k not in MESSAGE_KEYS)
    if unknown:
        raise InvalidInputError(
            f"{where} has unknown key(s) {unknown}; a message is {{role, content, name?, id?, created_at?, "
            "memory_id?}} (leave out tool calls and messages without text)",
            field="content",
        )
    role = check_id(message.get("role"), f"{where} role").strip()
    if message.get("content") is None:
        raise InvalidInputError(f"{where} has no text (a message that only calls tools is no turn)",
                                field="content")
    text = check_text(message.get("content"), f"{where} content")
    name = message.get("name")
    name = None if name is None else check_id(name, f"{where} name").strip()
    when = message.get("created_at")
    when = None if when is None else check_datetime(when, f"{where} created_at")
    mid = message.get("memory_id")
    own = message.get("id")
    return (role, text, name, when, None if mid is None else check_memory_id(mid, f"{where} memory_id"),
            None if own is None else check_id(own, f"{where} id"))


def _perceptual_fields(kwargs: dict[str, Any], meta: dict[str, Any]) -> None:
    src = kwargs.get("source_path") or meta.get("file_path") or meta.get("source_path")
    if src is not None and not isinstance(src, str):
        raise InvalidInputError("source_path must be a string", field="source_path")
    kwargs["source_path"] = src
    kwargs.setdefault("modality", infer_modality(src))
    if src and _is_file(src):
        kwargs["media_hash"] = media_hash(Path(src))
    meta.setdefault("encoder", "text-proxy")  # the caption/description is what is embedded


def _is_file(path: str) -> bool:
    try:
        return Path(path).is_file()
    except (OSError, ValueError):  # a NUL in the path, a name too long: not a file we can hash
        return False


def _check_participants(value: Any) -> list[str]:
    """Participants are names (search prefers memories whose participant a query names)."""
    if not isinstance(value, list | tuple):
        raise InvalidInputError("participants must be a list of names", field="participants")
    names = [v.strip() if isinstance(v, str) else v for v in value]
    if not all(isinstance(v, str) and v for v in names):
        raise InvalidInputError("participants must be non-empty names (strings)", field="participants")
    return list(dict.fromkeys(names))


def media_hash(path: Path) -> str | None:
    """SHA-256 of a media file, streamed; ``None`` for files over ``MAX_HASH_BYTES`` or unreadable."""
    try:
        if path.stat().st_size > MAX_HASH_BYTES:
            return None
        digest = hashlib.sha256()
        with path.open("rb") as fh:
            for block in iter(lambda: fh.read(1 << 20), b""):
                digest.update(block)
        return digest.hexdigest()
    except OSError:
        return None
