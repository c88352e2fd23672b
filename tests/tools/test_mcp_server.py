"""The MCP server as a subprocess, driven by the official SDK's stdio client."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

pytest.importorskip("mcp")

import anyio
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

from hello_memory import MemoryManager, Settings

REPO = Path(__file__).resolve().parents[2]
FACT = "我叫张三，我是Python开发者"
CHAT = [{"role": "user", "name": "张三", "content": "我下周去杭州出差"},
        {"role": "assistant", "content": "记得带伞，杭州多雨。", "created_at": "2026-03-02T10:00:00+08:00"}]


def _is_error(result) -> bool:
    return bool(getattr(result, "is_error", getattr(result, "isError", False)))


def _structured(result) -> dict:
    return getattr(result, "structured_content", None) or getattr(result, "structuredContent", None)


async def _session_run(home: Path, docs: Path) -> dict:
    params = StdioServerParameters(
        command=sys.executable, cwd=str(REPO),
        args=["-m", "tools.mcp_server", "--home", str(home), "--user", "zhangsan", "--namespace", "kb",
              "--embedder", "tfidf", "--allow-root", str(docs)],
    )
    out: dict = {}
    with anyio.fail_after(120):
        async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            listed = await session.list_tools()
            out["tools"] = {t.name: t for t in listed.tools}
            out["add"] = await session.call_tool("memory_add", {"content": FACT, "memory_type": "semantic",
                                                                "importance": 0.9})
            out["search"] = await session.call_tool("memory_search", {"query": "张三是做什么的"})
            out["chat"] = await session.call_tool("memory_add", {"messages": CHAT})
            out["bad"] = await session.call_tool("memory_search", {"query": "x", "limit": 10_000})
            out["clear"] = await session.call_tool("memory_clear_all", {})
            out["rag_add"] = await session.call_tool("rag_add_text", {"text": "Qdrant stores vectors."})
            out["rag_outside"] = await session.call_tool("rag_add_document", {"file_path": "/etc/passwd"})
    return out


def test_mcp_stdio_server_lists_tools_and_runs_memory_add_and_search(tmp_path):
    home, docs = tmp_path / "data", tmp_path / "docs"
    docs.mkdir()
    out = anyio.run(_session_run, home, docs)

    tools = out["tools"]
    assert {"memory_add", "memory_search", "memory_clear_all", "rag_ask", "rag_add_document"} <= set(tools)
    schema = getattr(tools["memory_search"], "input_schema", None) or tools["memory_search"].inputSchema
    assert schema["required"] == ["query"] and schema["properties"]["limit"]["maximum"] == 50

    add = out["add"]
    assert not _is_error(add) and "Stored semantic memory" in add.content[0].text
    memory_id = _structured(add)["data"]["memory"]["id"]
    assert len(memory_id) == 36

    search = out["search"]
    assert not _is_error(search) and FACT in search.content[0].text and memory_id in search.content[0].text
    assert _structured(search)["data"]["hits"][0]["id"] == memory_id

    add_schema = getattr(tools["memory_add"], "input_schema", None) or tools["memory_add"].inputSchema
    assert set(add_schema["properties"]["messages"]["items"]["properties"]) == {"role", "content", "name", "id",
                                                                                 "created_at"}
    chat = out["chat"]
    assert not _is_error(chat) and "2 conversation turns" in chat.content[0].text
    turns = _structured(chat)["data"]["memories"]
    assert [t["participants"] for t in turns] == [["张三"], ["assistant"]]

    assert _is_error(out["bad"]) and "limit" in out["bad"].content[0].text
    assert _is_error(out["clear"]) and "confirm" in out["clear"].content[0].text
    assert not _is_error(out["rag_add"])
    assert _is_error(out["rag_outside"]) and "outside the allowed folders" in out["rag_outside"].content[0].text

    # The server has exited (directory lock released); the memory is on disk for user zhangsan only.
    with MemoryManager(Settings(home=home, embedder="tfidf"), user_id="zhangsan") as mm:
        assert mm.get(memory_id).content == FACT
        assert [mm.get(t["id"]).event_type for t in turns] == ["conversation", "conversation"]
        assert mm.stats(user_id="someone_else").total == 0


async def _rag_documents(home: Path) -> dict:
    params = StdioServerParameters(
        command=sys.executable, cwd=str(REPO),
        args=["-m", "tools.mcp_server", "--home", str(home), "--user", "lisi", "--embedder", "tfidf"],
    )
    with anyio.fail_after(120):
        async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            return _structured(await session.call_tool("rag_search", {"query": "tomatoes watering"}))


def test_mcp_sees_the_documents_the_app_filed_for_the_same_user(tmp_path):
    """Before: the MCP server used the namespace "default", the app docs_<user>: it saw none of them."""
    from rag import RAGPipeline

    home = tmp_path / "data"
    with RAGPipeline(Settings(home=home, embedder="tfidf"), namespace="docs_lisi") as app_side:
        app_side.add_text("Tomatoes need deep watering twice a week.", document_id="garden.md")
    found = anyio.run(_rag_documents, home)
    assert "garden.md" in str(found), found
