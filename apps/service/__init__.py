"""The memory service (``hello-memory serve``): the MemoryManager and RAGPipeline API over HTTP.

One process owns a data directory; the app, the CLI, MCP clients and agents in any language share
it through this service (Python: :class:`hello_memory.client.remote.RemoteMemory`,
:class:`rag.remote.RemoteRAG`). Needs the ``service`` extra (FastAPI, uvicorn).
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

_EXPORTS = {
    "ServiceCore": "apps.service.core",
    "ServiceSettings": "apps.service.settings",
    "KeyGrant": "apps.service.settings",
    "KeyRing": "apps.service.auth",
    "create_app": "apps.service.app",
    "serve": "apps.service.server",
}
__all__ = sorted(_EXPORTS)

if TYPE_CHECKING:
    from apps.service.app import create_app
    from apps.service.auth import KeyRing
    from apps.service.core import ServiceCore
    from apps.service.server import serve
    from apps.service.settings import KeyGrant, ServiceSettings


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'apps.service' has no attribute {name!r}")
    return getattr(import_module(module), name)
