"""Agent tools over hello-memory: Tool/ToolRegistry, MemoryTool, RAGTool, SimpleAgent, MCP server.

Public names are imported lazily (like ``hello_memory``), so ``import tools`` stays cheap.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

_EXPORTS = {
    "Tool": "tools.base",
    "ToolResult": "tools.base",
    "Payload": "tools.base",
    "Action": "tools.base",
    "ToolRegistry": "tools.registry",
    "MemoryTool": "tools.memory_tool",
    "RAGTool": "tools.rag_tool",
    "SimpleAgent": "tools.agent",
    "AgentReply": "tools.agent",
}
__all__ = [
    "Action", "AgentReply", "MemoryTool", "Payload", "RAGTool", "SimpleAgent", "Tool", "ToolRegistry",
    "ToolResult",
]

if TYPE_CHECKING:
    from tools.agent import AgentReply, SimpleAgent
    from tools.base import Action, Payload, Tool, ToolResult
    from tools.memory_tool import MemoryTool
    from tools.rag_tool import RAGTool
    from tools.registry import ToolRegistry


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'tools' has no attribute {name!r}")
    return getattr(import_module(module), name)
