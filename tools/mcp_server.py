"""MCP server over stdio exposing MemoryTool and RAGTool, one MCP tool per action.

Run it with ``python -m tools.mcp_server --home DIR --user U --namespace N`` (or ``hello-memory
mcp``) and point an MCP client at that command. Tools are named ``memory_add``,
``memory_search``, ..., ``rag_ask``, ...; each takes that action's JSON Schema, returns the
tool's concise text as content, the full :class:`~tools.base.ToolResult` as structured content,
and ``isError`` for error results. Needs the ``tools`` extra (``pip install 'hello-memory[tools]'``).
"""

from __future__ import annotations

import argparse
import inspect
import logging
import os
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from hello_memory._lazy import require
from hello_memory.api import MemoryAPI
from hello_memory.errors import HelloMemoryError, StoreLockedError
from hello_memory.settings import Settings
from rag.api import RAGAPI
from rag.namespaces import default_namespace
from tools.registry import ToolRegistry

logger = logging.getLogger(__name__)

SERVER_NAME = "hello-memory"
EMBEDDERS = ("auto", "e5", "sentence-transformers", "dashscope", "tfidf")


def build_registry(
    settings: Settings, *, user_id: str | None = "default_user", namespace: str = "default",
    allowed_roots: Sequence[str | Path] | None = None, rag: bool = True,
    memory: MemoryAPI | None = None, pipeline: RAGAPI | None = None,
) -> ToolRegistry:
    """A registry (actions expanded) with a MemoryTool for ``user_id`` and a RAGTool for ``namespace``.

    ``memory`` / ``pipeline`` (e.g. the clients of a memory service) are used instead of opening the
    data directory; the caller closes them.
    Both read files only inside ``allowed_roots`` (default: the working directory).
    """
    from tools.memory_tool import MemoryTool

    registry = ToolRegistry(expand_actions=True)
    registry.register(MemoryTool(user_id=user_id, settings=settings, manager=memory, allowed_roots=allowed_roots))
    if rag:
        from tools.rag_tool import RAGTool

        try:
            registry.register(RAGTool(namespace=namespace, settings=settings, allowed_roots=allowed_roots,
                                      pipeline=pipeline))
        except BaseException:
            registry.close()
            raise
    return registry


def build_server(registry: ToolRegistry, *, name: str = SERVER_NAME) -> Any:
    """A low-level MCP ``Server`` listing the registry's functions and executing calls through it."""
    types = require("mcp.types", "tools", "mcp")

    def list_tools() -> list[Any]:
        functions = [t["function"] for t in registry.to_openai_tools(expand_actions=True)]
        return [types.Tool.model_validate({"name": f["name"], "description": f["description"],
                                           "inputSchema": f["parameters"]}) for f in functions]

    def call_tool(tool: str, arguments: dict[str, Any] | None) -> Any:
        result = registry.execute(tool, arguments or {})
        return types.CallToolResult.model_validate({
            "content": [{"type": "text", "text": result.text()}],
            "structuredContent": result.model_dump(mode="json"), "isError": not result.ok,
        })

    return _server(name, list_tools, call_tool)


def _server(name: str, list_tools: Callable[[], list[Any]], call_tool: Callable[..., Any]) -> Any:
    lowlevel = require("mcp.server.lowlevel", "tools", "mcp")
    types = require("mcp.types", "tools", "mcp")
    if "on_list_tools" in inspect.signature(lowlevel.Server.__init__).parameters:  # mcp 2.x
        async def on_list(ctx: Any, params: Any) -> Any:
            return types.ListToolsResult(tools=list_tools())

        async def on_call(ctx: Any, params: Any) -> Any:
            return call_tool(params.name, params.arguments)

        return lowlevel.Server(name, on_list_tools=on_list, on_call_tool=on_call)
    server = lowlevel.Server(name)  # mcp 1.x: decorator registration

    @server.list_tools()
    async def _list() -> list[Any]:
        return list_tools()

    @server.call_tool()
    async def _call(tool: str, arguments: dict[str, Any] | None) -> Any:
        return call_tool(tool, arguments)

    return server


async def run_stdio(server: Any) -> None:
    """Serve ``server`` on this process's stdin/stdout until the client disconnects."""
    stdio = require("mcp.server.stdio", "tools", "mcp")
    async with stdio.stdio_server() as (read, write):
        await server.run(read, write, server.create_initialization_options())


def _remote(
    url: str, api_key: str | None, user_id: str, namespace: str, rag: bool
) -> tuple[MemoryAPI, RAGAPI | None]:
    """Clients of the memory service at ``url`` (with a key, the default user is the key's own)."""
    from hello_memory.client.discovery import DEFAULT_USER
    from hello_memory.client.remote import RemoteMemory
    from rag.remote import RemoteRAG

    user = None if (api_key and user_id == DEFAULT_USER) else user_id
    memory = RemoteMemory(url, api_key=api_key, user_id=user)
    return memory, RemoteRAG(url, namespace=namespace, api_key=api_key) if rag else None


def serve(
    home: str | Path | None = None, user_id: str = "default_user", namespace: str | None = None, *,
    allowed_roots: Sequence[str | Path] | None = None, embedder: str | None = None,
    settings: Settings | None = None, rag: bool = True, server_url: str | None = None,
    api_key: str | None = None,
) -> None:
    """Run the MCP server over stdio (blocking); the entry point for ``hello-memory mcp``.

    Args:
        home: data directory (default: ``HELLO_MEMORY_HOME`` or ``./hello_memory_data``).
        user_id: whose memories the memory tools use.
        namespace: the knowledge base the rag tools use; default the user's, where the app files
            their uploads (``docs_<user>``, :func:`rag.namespaces.default_namespace`).
        allowed_roots: folders ``rag_add_document`` may read; default the current directory.
        embedder: override ``settings.embedder`` (``auto``, ``e5``, ``tfidf``, ...).
        settings: base settings (``Settings()`` from the environment when omitted).
        rag: also expose the RAG tools.
        server_url: a memory service to use; default ``settings.server_url``, else the service that
            owns the data directory (``hello-memory serve``), else the directory itself.
        api_key: the memory service's API key.
    """
    anyio = require("anyio", "tools")
    require("mcp.server.lowlevel", "tools", "mcp")  # before the stores are opened
    namespace = default_namespace(user_id) if namespace is None else namespace
    settings = settings or Settings()
    update: dict[str, Any] = {}
    if home is not None:
        from hello_memory.stores.open import resolve_home

        update["home"] = resolve_home(home)  # typed errors for "", 5, a NUL ("" used to mean the cwd)
    if embedder is not None:
        update["embedder"] = embedder
    settings = settings.model_copy(update=update)
    roots = list(allowed_roots) if allowed_roots else [Path.cwd()]
    from hello_memory.client.discovery import locked_home, service_url

    url = service_url(settings, server_url)
    memory, pipeline = _remote(url, api_key, user_id, namespace, rag) if url else (None, None)
    try:
        try:
            registry = build_registry(settings, user_id=None if memory else user_id, namespace=namespace,
                                      allowed_roots=roots, rag=rag, memory=memory, pipeline=pipeline)
        except StoreLockedError as e:  # no service owns the home and another process holds it
            raise locked_home(settings.home) from e
        try:
            logger.info("MCP server: %s, user %s, namespace %s", url or settings.home, user_id, namespace)
            anyio.run(run_stdio, build_server(registry))
        finally:
            registry.close()
    finally:
        for client in (memory, pipeline):
            if client is not None:
                client.close()


def main(argv: Sequence[str] | None = None) -> None:
    """``python -m tools.mcp_server --home DIR --user U --namespace N``."""
    ap = argparse.ArgumentParser(prog="python -m tools.mcp_server", description=__doc__.splitlines()[0])
    ap.add_argument("--home", type=Path, default=None, help="data directory")
    ap.add_argument("--user", default="default_user", help="user id of the memory tools")
    ap.add_argument("--namespace", default=None, help="knowledge base of the rag tools (default docs_<user>)")
    ap.add_argument("--allow-root", action="append", type=Path, default=None,
                    help="folder rag_add_document may read (repeatable; default: current directory)")
    ap.add_argument("--embedder", choices=EMBEDDERS, default=None, help="override HELLO_MEMORY_EMBEDDER")
    ap.add_argument("--no-rag", action="store_true", help="expose only the memory tools")
    ap.add_argument("--server", default=None, help="memory service URL (default: HELLO_MEMORY_SERVER_URL or "
                    "the service that owns --home)")
    ap.add_argument("--api-key", default=None, help="memory service API key (default: HELLO_MEMORY_API_KEY)")
    ap.add_argument("--log-level", default="WARNING", help="log level (logs go to stderr)")
    args = ap.parse_args(argv)
    logging.basicConfig(stream=sys.stderr, level=args.log_level.upper())
    try:
        serve(args.home, args.user, args.namespace, allowed_roots=args.allow_root, embedder=args.embedder,
              rag=not args.no_rag, server_url=args.server,
              api_key=args.api_key or os.environ.get("HELLO_MEMORY_API_KEY"))
    except HelloMemoryError as e:  # a locked home, a missing extra: one line on stderr, exit 2
        print(f"error: {e}", file=sys.stderr)
        raise SystemExit(2) from None


if __name__ == "__main__":
    main()
