"""A conversation re-sent through the ``memory`` tool and MCP's ``memory_add``: the library's contract."""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest

from hello_memory import MemoryManager, Settings
from hello_memory.testing.conversation_resend import Message, ResendContract
from tools.mcp_server import build_registry, build_server
from tools.memory_tool import MemoryTool
from tools.registry import ToolRegistry


class ToolEntry:
    """The ``memory`` tool's ``add`` with ``messages``, called as a model calls it (JSON in)."""

    def __init__(self, registry: ToolRegistry, memory: MemoryManager, user_id: str) -> None:
        self.registry, self.memory, self.user_id = registry, memory, user_id

    def session(self, name: str) -> str:
        return name

    def send(self, messages: Sequence[Message], *, session_id: str) -> list[str]:
        args = {"action": "add", "messages": list(messages), "session_id": session_id}
        result = self.registry.execute("memory", json.dumps(args))
        assert result.ok, result.error
        return [m.id for m in result.data.memories]


class McpEntry:
    """MCP's ``memory_add``: a client session talking to the server in process (the MCP protocol, no pipe)."""

    def __init__(self, server: Any, memory: MemoryManager, user_id: str) -> None:
        self.server, self.memory, self.user_id = server, memory, user_id

    def session(self, name: str) -> str:
        return name

    def send(self, messages: Sequence[Message], *, session_id: str) -> list[str]:
        anyio = pytest.importorskip("anyio")
        client_module = pytest.importorskip("mcp.client.client")

        async def call() -> Any:
            async with client_module.Client(self.server) as client:
                return await client.call_tool("memory_add", {"messages": list(messages), "session_id": session_id})

        result = anyio.run(call)
        assert not result.is_error, result.content
        return [m["id"] for m in result.structured_content["data"]["memories"]]


@pytest.fixture
def manager(tmp_path: Path) -> Iterator[MemoryManager]:
    with MemoryManager(Settings(home=tmp_path / "data", embedder="tfidf"), user_id="carol") as mm:
        yield mm


class TestResendThroughTheMemoryTool(ResendContract):
    @pytest.fixture
    def chat(self, manager: MemoryManager) -> Iterator[ToolEntry]:
        registry = ToolRegistry()
        registry.register(MemoryTool(user_id="carol", manager=manager))
        yield ToolEntry(registry, manager, "carol")
        registry.close()


class TestResendThroughMcp(ResendContract):
    @pytest.fixture
    def chat(self, manager: MemoryManager) -> Iterator[McpEntry]:
        pytest.importorskip("mcp")
        registry = build_registry(manager.settings, user_id="carol", rag=False, memory=manager)
        yield McpEntry(build_server(registry), manager, "carol")
        registry.close()
