"""The clients of a memory service: :class:`RemoteMemory` and :class:`AsyncRemoteMemory` (imported lazily).

Example:
    >>> from hello_memory.client import AsyncRemoteMemory, RemoteMemory
    >>> RemoteMemory.__name__, AsyncRemoteMemory.__name__
    ('RemoteMemory', 'AsyncRemoteMemory')
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

_EXPORTS = {
    "RemoteMemory": "hello_memory.client.remote",
    "AsyncRemoteMemory": "hello_memory.client.remote_async",
}
__all__ = sorted(_EXPORTS)

if TYPE_CHECKING:
    from hello_memory.client.remote import RemoteMemory
    from hello_memory.client.remote_async import AsyncRemoteMemory


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'hello_memory.client' has no attribute {name!r}")
    return getattr(import_module(module), name)
