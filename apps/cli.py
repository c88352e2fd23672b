"""The ``hello-memory`` command: the core commands plus the top-layer ones (``mcp``, ``app``).

Lives in ``apps`` because it imports every layer; ``hello_memory.cli`` holds the core commands and
never imports ``rag``, ``tools`` or ``apps``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

from apps.docs_cli import docs
from hello_memory.cli import ApiKey, Home, Server, User, _fail, app, skip_unused_imports
from hello_memory.errors import HelloMemoryError

app.add_typer(docs, name="docs")


@app.command()
def mcp(
    home: Home = None,
    user: User = "default_user",
    namespace: Annotated[
        str | None, typer.Option("--namespace", help="RAG knowledge base (default: the app's, docs_<user>)")
    ] = None,
    allow_root: Annotated[list[Path] | None, typer.Option("--allow-root", help="directories RAG may read")] = None,
    server: Server = None,
    api_key: ApiKey = None,
) -> None:
    """Serve the memory and RAG tools over MCP (stdio); through the memory service when one owns the home.

    The RAG tools see the knowledge base the app files the user's uploads in (docs_<user>) unless
    --namespace names another.
    """
    from tools.mcp_server import serve

    try:
        serve(home, user, namespace, allowed_roots=allow_root, server_url=server, api_key=api_key)
    except HelloMemoryError as e:  # e.g. the tools extra missing: one line with the pip command
        _fail(e)


@app.command("app")
def app_cmd(
    home: Home = None,
    host: Annotated[str, typer.Option("--host", help="bind address")] = "127.0.0.1",
    port: Annotated[int, typer.Option("--port")] = 7860,
    server: Server = None,
    api_key: ApiKey = None,
) -> None:
    """Serve the document Q&A learning assistant (Gradio); through the memory service when one owns the home."""
    from apps.app import serve

    try:
        serve(home, host, port, server_url=server, api_key=api_key)
    except HelloMemoryError as e:  # a busy port, a locked data directory: one line with the fix
        _fail(e)


@app.command("serve")
def serve_cmd(
    home: Home = None,
    host: Annotated[
        str | None, typer.Option("--host", help="bind address (default 127.0.0.1); non-loopback needs API keys")
    ] = None,
    port: Annotated[int | None, typer.Option("--port", help="port (default 8765; 0 = any free port)")] = None,
    keys_file: Annotated[Path | None, typer.Option("--keys-file", help="JSON file of API keys")] = None,
    allow_root: Annotated[
        list[Path] | None, typer.Option("--allow-root", help="folders whose files clients may index by path")
    ] = None,
    log_level: Annotated[str, typer.Option("--log-level")] = "warning",
) -> None:
    """Serve the memory over HTTP, so the app, the CLI, MCP clients and agents share one data directory.

    Keys: --keys-file, HELLO_MEMORY_SERVICE_API_KEYS ({"<key>": "<user>"}) and
    HELLO_MEMORY_SERVICE_ADMIN_KEY; without any, only loopback clients are served.
    """
    from apps.service.server import serve
    from apps.service.settings import ServiceSettings

    given = {"host": host, "port": port, "keys_file": keys_file, "allowed_roots": allow_root or None}
    overrides: dict[str, Any] = {k: v for k, v in given.items() if v is not None}
    try:
        serve(service=ServiceSettings(**overrides), home=home, log_level=log_level.lower())
    except HelloMemoryError as e:
        _fail(e)


def main() -> None:
    """Console-script entry point."""
    skip_unused_imports()
    app()


if __name__ == "__main__":
    main()
