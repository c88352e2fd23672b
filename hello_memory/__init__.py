"""hello-memory: multi-tier cognitive memory for LLM agents.

Embedded by default (Qdrant engine in-process, SQLite, offline multilingual embedder), servers by
settings. Public names are imported lazily so ``import hello_memory`` stays fast.
"""

from __future__ import annotations

import logging
from importlib import import_module
from typing import TYPE_CHECKING, Any

logging.getLogger(__name__).addHandler(logging.NullHandler())

__version__ = "0.1.0"

_EXPORTS = {
    "MemoryManager": "hello_memory.manager",
    "AsyncMemoryManager": "hello_memory.manager_async",
    "RemoteMemory": "hello_memory.client.remote",
    "AsyncRemoteMemory": "hello_memory.client.remote_async",
    "Settings": "hello_memory.settings",
    "MemoryItem": "hello_memory.models",
    "MemoryType": "hello_memory.models",
    "ScoredMemory": "hello_memory.models",
    "ForgetReport": "hello_memory.models",
    "ConsolidateReport": "hello_memory.models",
    "MemoryStats": "hello_memory.models",
    "HistoryEntry": "hello_memory.models",
    "ContextBlock": "hello_memory.context",
    "HelloMemoryError": "hello_memory.errors",
    "InvalidInputError": "hello_memory.errors",
    "NotFoundError": "hello_memory.errors",
    "StoreError": "hello_memory.errors",
    "StoreLockedError": "hello_memory.errors",
    "DiskFullError": "hello_memory.errors",
    "IndexPendingError": "hello_memory.errors",
    "IdConflictError": "hello_memory.errors",
    "DimensionMismatchError": "hello_memory.errors",
    "EmbeddingError": "hello_memory.errors",
    "LLMError": "hello_memory.errors",
    "MissingDependencyError": "hello_memory.errors",
}
__all__ = sorted(_EXPORTS)

if TYPE_CHECKING:
    from hello_memory.client.remote import RemoteMemory
    from hello_memory.client.remote_async import AsyncRemoteMemory
    from hello_memory.context import ContextBlock
    from hello_memory.errors import (
        DimensionMismatchError,
        DiskFullError,
        EmbeddingError,
        HelloMemoryError,
        IdConflictError,
        IndexPendingError,
        InvalidInputError,
        LLMError,
        MissingDependencyError,
        NotFoundError,
        StoreError,
        StoreLockedError,
    )
    from hello_memory.manager import MemoryManager
    from hello_memory.manager_async import AsyncMemoryManager
    from hello_memory.models import (
        ConsolidateReport,
        ForgetReport,
        HistoryEntry,
        MemoryItem,
        MemoryStats,
        MemoryType,
        ScoredMemory,
    )
    from hello_memory.settings import Settings


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'hello_memory' has no attribute {name!r}")
    return getattr(import_module(module), name)
