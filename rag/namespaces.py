"""The knowledge base a user's documents go to by default, the same for every entry point.

The app, the memory service, the ``hello-memory docs`` commands and ``hello-memory mcp`` all file
user U's documents in ``docs_U``, so a document uploaded in one is found by the others.

Example:
    >>> default_namespace("alice")
    'docs_alice'
"""

from __future__ import annotations

import hashlib

from hello_memory.validation import MAX_ID_CHARS


def default_namespace(user_id: str) -> str:
    """The default knowledge base of ``user_id``: ``docs_<user id>``, injective over user ids.

    An id too long for the prefix (a namespace is an id of at most ``MAX_ID_CHARS`` characters) maps
    to ``docs~`` and its SHA-256, which no ``docs_…`` name equals.
    """
    name = "docs_" + user_id
    if len(name) <= MAX_ID_CHARS:
        return name
    return "docs~" + hashlib.sha256(user_id.encode("utf-8")).hexdigest()
