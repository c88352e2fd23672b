"""The ``hello-memory`` command: the core commands plus the top-layer ones (``mcp``, ``app``).

Lives in ``apps`` because it imports every layer; ``hello_memory.cli`` holds the core commands and
never imports ``rag``, ``tools`` or ``apps``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from hello_memory.cli import Home, User, _fail, app
from hello_memory.errors import HelloMemoryError


@app.command()
def mcp(
    home: Home = None,
    user: User = "default_user",
    namespace: Annotated[str, typer.Option("--namespace", help="RAG knowledge-base namespace")] = "default",
    allow_root: Annotated[list[Path] | None, typer.Option("--allow-root", help="directories RAG may read")] = None,
) -> None:
    """Serve the memory and RAG tools over MCP (stdio)."""
    from tools.mcp_server import serve

    try:
        serve(home, user, namespace, allowed_roots=allow_root)
    except HelloMemoryError as e:  # e.g. the tools extra missing: one line with the pip command
        _fail(e)


@app.command("app")
def app_cmd(
    home: Home = None,
    host: Annotated[str, typer.Option("--host", help="bind address")] = "127.0.0.1",
    port: Annotated[int, typer.Option("--port")] = 7860,
) -> None:
    """Serve the document Q&A learning assistant (Gradio) on the embedded defaults."""
    from apps.app import serve

    try:
        serve(home, host, port)
    except HelloMemoryError as e:  # a busy port, a locked data directory: one line with the fix
        _fail(e)


def main() -> None:
    """Console-script entry point."""
    app()


if __name__ == "__main__":
    main()
