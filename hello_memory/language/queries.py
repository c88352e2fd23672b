"""Search queries from a conversation: ``MemoryManager.search`` accepts the messages an agent holds.

A dialogue is a better query than its last line (the topic was often named turns earlier), but
not as one string with its role markup: the assistant's turns echo the question back, and tags
such as ``<User>:`` are noise to both BM25 and the embedder. The query is therefore the text of
the human turns, oldest first, bounded to the newest ones that fit the query limit. On a
benchmark whose queries are dialogues this finds more of the evidence than the raw transcript
(see BENCHMARKS.md).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from hello_memory.errors import InvalidInputError
from hello_memory.validation import check_text

MAX_QUERY_CHARS = 20_000
ASSISTANT_ROLES = frozenset({"assistant", "system", "tool", "function", "developer"})


def _message(value: Any, i: int) -> tuple[str, str]:
    """``(role, content)`` of one message: a mapping with ``role`` and ``content``, or a pair."""
    if isinstance(value, Mapping):
        role, content = value.get("role"), value.get("content")
    elif isinstance(value, tuple | list) and len(value) == 2:
        role, content = value
    else:
        raise InvalidInputError(
            f"query message {i} must be a {{'role': ..., 'content': ...}} mapping or a (role, content) pair",
            field="query",
        )
    if not isinstance(role, str) or not role.strip():
        raise InvalidInputError(f"query message {i} has no role (a non-empty string)", field="query")
    if content is None:
        content = ""  # an assistant message that only called tools
    if not isinstance(content, str):
        raise InvalidInputError(
            f"query message {i} content must be text, got {type(content).__name__}", field="query"
        )
    return role.strip().lower(), content.strip()


def conversation_query(messages: Sequence[Any], *, max_chars: int = MAX_QUERY_CHARS) -> str:
    """The search text of a conversation: its human turns, newest ones kept within ``max_chars``.

    Roles in :data:`ASSISTANT_ROLES` are left out unless no other turn has text; any other role
    (``user``, a speaker's name) counts as human.

    Example:
        >>> conversation_query([{"role": "user", "content": "I start a pottery class"},
        ...                     {"role": "assistant", "content": "Nice! When?"},
        ...                     {"role": "user", "content": "Next Monday"}])
        'I start a pottery class\\nNext Monday'

    Raises:
        InvalidInputError: not a list of messages, a malformed message, or no text at all.
    """
    if isinstance(messages, str | bytes) or not isinstance(messages, Sequence):
        raise InvalidInputError("query must be a string or a list of messages", field="query")
    turns = [_message(m, i) for i, m in enumerate(messages)]
    human = [c for r, c in turns if c and r not in ASSISTANT_ROLES]
    texts = human or [c for _, c in turns if c]
    if not texts:
        raise InvalidInputError("query messages contain no text", field="query")
    kept: list[str] = []
    size = 0
    for text in reversed(texts):  # newest first: the end of a conversation matters most
        if kept and size + len(text) + 1 > max_chars:
            break
        kept.append(text)
        size += len(text) + 1
    return check_text("\n".join(reversed(kept)), "query", max_chars=max_chars)
