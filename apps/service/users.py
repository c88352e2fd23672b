"""Users and their knowledge bases: a user's default namespace, and forgetting a user everywhere.

The library keeps memories and knowledge bases apart (``MemoryManager.forget_user`` knows no RAG
namespace); the service serves both, so deleting a user here is the composition of the two:
their memories (``MemoryManager.forget_user``) and their default knowledge base.

**Default namespace** (:func:`~apps.service.auth.default_namespace`). Each user id has one
default knowledge base, the app's and what an API key without explicit ``namespaces`` reaches:
``docs_<user id>``. The mapping is injective, so no two users share one (before issue 27, keys
also reached the namespace named like their bare user id, so the key of user ``docs_bob`` reached
bob's ``docs_bob``). An id too long for ``docs_`` in front (namespaces are ids of at most
``MAX_ID_CHARS`` characters) maps to ``docs~`` and the SHA-256 of the id, which no ``docs_…`` name
can equal.

**What forgetting a user deletes** (``DELETE /v1/users/{user}``): every memory of the user (counts
``vectors:…``, ``graph:…``, ``records:…``) and every document of their default knowledge base —
chunks, vectors, the recorded source paths (``knowledge_base:documents``, ``knowledge_base:chunks``).
Namespaces granted explicitly in a key's ``namespaces`` stay: they are shared by design (a team's
knowledge base outlives a member) and no chunk records who added it; an admin clears one with
``DELETE /v1/namespaces/{namespace}/documents``.

Example:
    >>> default_namespace("bob"), default_namespace("docs_bob")
    ('docs_bob', 'docs_docs_bob')
    >>> default_namespace("x" * 256)[:10]
    'docs~85e62'
"""

from __future__ import annotations

from apps.service.auth import default_namespace
from apps.service.core import ServiceCore
from hello_memory.errors import IndexPendingError

__all__ = ["default_namespace", "forget_user"]


def forget_user(core: ServiceCore, user_id: str) -> dict[str, int]:
    """Delete the user's default knowledge base, then their memories; counts per store.

    The knowledge base goes first: when deleting the memories fails half-way
    (``IndexPendingError``), the documents are already gone, and calling it again completes both.
    """
    pipeline = core.rag(default_namespace(user_id))
    documents = len(pipeline.list_documents())
    counts = {"knowledge_base:documents": documents, "knowledge_base:chunks": pipeline.clear()}
    try:
        return {**counts, **core.memory.forget_user(user_id)}
    except IndexPendingError as e:  # committed: what the call would have returned says the documents too
        e.result = {**counts, **e.result} if isinstance(e.result, dict) else counts
        raise
