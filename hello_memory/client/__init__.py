"""The clients of a memory service: :class:`RemoteMemory` and :class:`AsyncRemoteMemory` (imported lazily).

Example:
    >>> from hello_memory.client import AsyncRemoteMemory, RemoteMemory
    >>> RemoteMemory.__name__, AsyncRemoteMemory.__name__
    ('RemoteMemory', 'AsyncRemoteMemory')
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from hello_memory._lazy import lazy_exports

_EXPORTS = {
    "RemoteMemory": "hello_memory.client.remote",
    "AsyncRemoteMemory": "hello_memory.client.remote_async",
}
__all__ = sorted(_EXPORTS)

if TYPE_CHECKING:
    from hello_memory.client.remote import RemoteMemory
    from hello_memory.client.remote_async import AsyncRemoteMemory


__getattr__ = lazy_exports(__name__, _EXPORTS)
