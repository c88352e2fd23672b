"""Input validation for the public API: clear :class:`InvalidInputError`, nothing stored."""

from __future__ import annotations

import inspect
import json
import math
import uuid
from collections.abc import Iterable
from datetime import datetime, timezone
from typing import Any

from hello_memory.errors import InvalidInputError
from hello_memory.models import MemoryType

MAX_CONTENT_CHARS = 200_000
MAX_METADATA_BYTES = 64_000
#: Nesting depth of metadata (and typed fields): deeper JSON is refused at the write gate, because
#: the readers of a stored memory (pydantic, JSON parsers of clients in any language) have
#: recursion limits of their own, and a memory none of them can read would be lost to its user.
MAX_METADATA_DEPTH = 32
MAX_ID_CHARS = 256
MAX_LIMIT = 1000
#: Valid range of every datetime argument and stored time (UTC).
MIN_TIME = datetime(1900, 1, 1, tzinfo=timezone.utc)
MAX_TIME = datetime(2200, 12, 31, 23, 59, 59, 999999, tzinfo=timezone.utc)
MIN_TIMESTAMP, MAX_TIMESTAMP = MIN_TIME.timestamp(), MAX_TIME.timestamp()


def check_text(value: Any, field: str, *, max_chars: int = MAX_CONTENT_CHARS) -> str:
    """A non-empty, valid-UTF-8 string of at most ``max_chars`` characters."""
    if isinstance(value, bytes | bytearray):
        raise InvalidInputError(f"{field} must be text (str), not bytes; decode it first", field=field)
    if not isinstance(value, str):
        raise InvalidInputError(f"{field} must be a string, got {type(value).__name__}", field=field)
    if not value.strip():
        raise InvalidInputError(f"{field} is empty or whitespace only", field=field)
    if len(value) > max_chars:
        raise InvalidInputError(f"{field} has {len(value)} characters; the limit is {max_chars}", field=field)
    try:
        value.encode("utf-8")
    except UnicodeEncodeError as e:
        raise InvalidInputError(
            f"{field} is not valid Unicode text ({e.reason} at {e.start})", field=field
        ) from e
    if "\x00" in value:
        raise InvalidInputError(f"{field} contains NUL characters", field=field)
    return value


def check_id(value: Any, field: str) -> str:
    """A user/session/memory id: a non-empty string without control characters."""
    if not isinstance(value, str) or not value.strip():
        raise InvalidInputError(f"{field} must be a non-empty string", field=field)
    if len(value) > MAX_ID_CHARS or any(ord(c) < 32 for c in value):
        raise InvalidInputError(f"{field} is too long or contains control characters", field=field)
    if not _encodable(value):
        raise InvalidInputError(f"{field} is not valid Unicode text (lone surrogate)", field=field)
    return value


def _encodable(text: str) -> bool:
    """True when ``text`` can be stored as UTF-8 (no lone surrogates)."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def check_memory_id(value: Any, field: str = "memory_id") -> str:
    """A client-supplied memory id: a full UUID, 36 characters with hyphens (any case), returned lowercase.

    Any UUID version is accepted: ``uuid5`` of a stable key makes a deterministic, retry-safe id.
    """
    if isinstance(value, str) and len(value) == 36:
        try:
            canonical = str(uuid.UUID(value))
        except ValueError:
            canonical = ""
        if canonical == value.lower():
            return canonical
    raise InvalidInputError(
        f"{field} must be a full UUID (36 characters with hyphens, e.g. str(uuid.uuid4())), got {value!r:.60}",
        field=field,
    )


def check_importance(value: Any, field: str = "importance") -> float:
    """A finite number in [0, 1] (booleans rejected)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise InvalidInputError(
            f"{field} must be a number in [0, 1], got {type(value).__name__}", field=field
        )
    v = _as_float(value, field)
    if not math.isfinite(v) or not 0.0 <= v <= 1.0:
        raise InvalidInputError(f"{field} must be in [0, 1], got {value!r}", field=field)
    return v


def check_memory_type(value: Any, enabled: Iterable[MemoryType], field: str = "memory_type") -> MemoryType:
    """A known and enabled memory type."""
    try:
        mt = MemoryType(value)
    except (ValueError, TypeError):
        names = ", ".join(m.value for m in MemoryType)
        raise InvalidInputError(f"unknown {field} {value!r}; expected one of: {names}", field=field) from None
    if mt not in set(enabled):
        raise InvalidInputError(f"memory type {mt.value!r} is not enabled in this MemoryManager", field=field)
    return mt


def check_memory_types(
    value: Any, enabled: Iterable[MemoryType], field: str = "memory_types"
) -> list[MemoryType]:
    """A list of known, enabled memory types (one name is a list of one); ``None`` = every enabled type."""
    enabled = list(enabled)
    if value is None:
        return enabled
    if isinstance(value, str | MemoryType):
        value = [value]
    if not isinstance(value, list | tuple | set | frozenset):
        raise InvalidInputError(f"{field} must be a list of memory type names", field=field)
    return list(dict.fromkeys(check_memory_type(t, enabled, field) for t in value))


def _as_float(value: Any, field: str) -> float:
    """A number as a float (booleans refused; an int beyond float range is infinite)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise InvalidInputError(f"{field} must be a number, got {type(value).__name__}", field=field)
    try:
        return float(value)
    except OverflowError:
        return math.inf


def check_number(value: Any, field: str, *, minimum: float = 0.0) -> float:
    """A finite number of at least ``minimum`` (booleans and huge integers refused)."""
    v = _as_float(value, field)
    if not math.isfinite(v) or v < minimum:
        raise InvalidInputError(f"{field} must be a finite number >= {minimum:g}, got {value!r}", field=field)
    return v


def check_metadata(value: Any) -> dict[str, Any]:
    """A JSON-serialisable dict with string keys, at most ``MAX_METADATA_BYTES`` when encoded."""
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise InvalidInputError(f"metadata must be a dict, got {type(value).__name__}", field="metadata")
    check_depth(value, "metadata")
    try:
        encoded = json.dumps(value, ensure_ascii=False, allow_nan=False)
    except (TypeError, ValueError, RecursionError) as e:
        raise InvalidInputError(f"metadata is not JSON-serialisable: {e}", field="metadata") from e
    if not _encodable(encoded):
        raise InvalidInputError("metadata is not valid Unicode text (lone surrogate)", field="metadata")
    if len(encoded.encode("utf-8")) > MAX_METADATA_BYTES:
        raise InvalidInputError(f"metadata is larger than {MAX_METADATA_BYTES} bytes", field="metadata")
    return dict(json.loads(encoded))


def check_depth(value: Any, field: str, *, limit: int = MAX_METADATA_DEPTH) -> None:
    """Refuse JSON-like data nested deeper than ``limit`` (iterative: no recursion to exhaust).

    Example:
        >>> check_depth({"a": [{"b": 1}]}, "metadata")
        >>> check_depth([[[1]]], "metadata", limit=2)
        Traceback (most recent call last):
        ...
        hello_memory.errors.InvalidInputError: metadata is nested deeper than 2 levels
    """
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        node, depth = stack.pop()
        children = node.values() if isinstance(node, dict) else node if isinstance(node, list | tuple) else ()
        for child in children:
            if isinstance(child, dict | list | tuple):
                if depth + 1 > limit:
                    raise InvalidInputError(f"{field} is nested deeper than {limit} levels", field=field)
                stack.append((child, depth + 1))


def check_datetime(value: Any, field: str) -> datetime:
    """A datetime (naive = UTC) or an ISO-8601 string, between ``MIN_TIME`` and ``MAX_TIME``.

    The result is timezone-aware and keeps the caller's offset (a query's "yesterday" is the caller's
    day). The range keeps every stored time, and every window computed from it, representable:
    ``9999-12-31T23:59:59-05:00`` is year 10000 in UTC, and ``datetime.min`` minus a day overflows.
    """
    if isinstance(value, str):
        try:
            value = datetime.fromisoformat(value)
        except ValueError as e:
            raise InvalidInputError(f"{field} is not an ISO-8601 date/time: {value!r}", field=field) from e
    if not isinstance(value, datetime):
        raise InvalidInputError(f"{field} must be a datetime or ISO string", field=field)
    aware = value if value.tzinfo else value.replace(tzinfo=timezone.utc)
    try:
        in_range = MIN_TIME <= aware.astimezone(timezone.utc) <= MAX_TIME
    except (OverflowError, ValueError):  # beyond year 1..9999 once converted to UTC
        in_range = False
    if not in_range:
        raise InvalidInputError(
            f"{field} must be between 1900 and 2200 (UTC), got {value.isoformat()}", field=field
        )
    return aware


def clamp_timestamp(ts: float) -> float:
    """A stored epoch timestamp clamped into the valid range (rows written before the range check)."""
    return min(max(ts, MIN_TIMESTAMP), MAX_TIMESTAMP)


def check_flag(value: Any, field: str) -> bool:
    """A real boolean: strings such as ``"false"`` and numbers are refused, never guessed.

    ``bool("false")`` is ``True``: a flag like ``purge`` that arrives as text from a tool call or a
    form would silently do the opposite of what was meant. Parse text at the edge, strictly.
    """
    if not isinstance(value, bool):
        raise InvalidInputError(
            f"{field} must be true or false (a bool), got {type(value).__name__} {value!r}", field=field
        )
    return value


def check_limit(value: Any, field: str = "limit", *, maximum: int = MAX_LIMIT) -> int:
    """An integer in [1, maximum]."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise InvalidInputError(f"{field} must be an integer, got {type(value).__name__}", field=field)
    if not 1 <= value <= maximum:
        raise InvalidInputError(f"{field} must be between 1 and {maximum}, got {value}", field=field)
    return value


def check_score(value: Any, field: str = "min_score") -> float | None:
    """An optional finite number (a score floor); ``None`` passes through."""
    if value is None:
        return None
    v = _as_float(value, field)
    if not math.isfinite(v):
        raise InvalidInputError(f"{field} must be a finite number, got {value!r}", field=field)
    return v


def check_budget(value: Any, field: str = "budget_tokens") -> int:
    """A positive integer token budget."""
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise InvalidInputError(f"{field} must be a positive integer, got {value!r}", field=field)
    return value


def check_progress(progress: object) -> None:
    """A progress callback is ``None`` or a function callable as ``progress(done, total)``.

    Checked before any work starts, so that a wrong one is an ``InvalidInputError``, not a
    ``TypeError`` halfway through (or after) indexing.
    """
    if progress is None:
        return
    error = InvalidInputError(
        f"progress must be a function progress(done, total) or None, got {progress!r:.60}", field="progress"
    )
    if not callable(progress) or isinstance(progress, type):
        raise error
    try:
        inspect.signature(progress).bind(0, 0)
    except TypeError:
        raise error from None
    except ValueError:  # no signature to check (a builtin): taken as it is
        pass


def check_tiers(*, working: Any, episodic: Any, semantic: Any, perceptual: Any) -> tuple[MemoryType, ...]:
    """The tiers a memory serves, from its ``enable_*`` flags (strict booleans; at least one)."""
    flags = {
        MemoryType.WORKING: check_flag(working, "enable_working"),
        MemoryType.EPISODIC: check_flag(episodic, "enable_episodic"),
        MemoryType.SEMANTIC: check_flag(semantic, "enable_semantic"),
        MemoryType.PERCEPTUAL: check_flag(perceptual, "enable_perceptual"),
    }
    enabled = tuple(t for t, on in flags.items() if on)
    if not enabled:
        raise InvalidInputError("enable at least one memory type")
    return enabled
