"""Launch the learning assistant: ``python -m apps --host 127.0.0.1 --port 7860 --home DIR``.

Runs offline on the embedded defaults (in-process Qdrant engine, SQLite, the e5 embedder,
extractive answers); setting ``LLM_API_KEY`` (or ``DASHSCOPE_API_KEY``) turns on generated
answers and MQE/HyDE search. ``serve`` is the entry point for a ``hello-memory app`` command.
"""

from __future__ import annotations

import argparse
import logging
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from apps.ports import PortInUseError, check_port
from apps.sessions import AssistantFactory
from hello_memory import HelloMemoryError, Settings
from hello_memory.embedders.base import Embedder
from hello_memory.llm.base import LLMClient

if TYPE_CHECKING:
    import gradio as gr

logger = logging.getLogger(__name__)


DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 7860
MAX_FILE_SIZE = "200mb"  # the converter's own limit


def create_app(
    settings: Settings | None = None,
    *,
    home: str | Path | None = None,
    embedder: Embedder | None = None,
    llm: LLMClient | None = None,
    server_url: str | None = None,
    api_key: str | None = None,
) -> tuple[gr.Blocks, AssistantFactory]:
    """The Blocks app and the factory owning its sessions (call ``factory.close_all()`` when done).

    The sessions use a memory service — ``server_url``, else ``settings.server_url``, else the one that
    owns the data directory (``hello-memory serve``) — instead of opening the data directory.

    Raises:
        InvalidInputError: the LLM settings are incomplete (e.g. ``LLM_BASE_URL`` without ``LLM_MODEL``).
        MissingDependencyError: Gradio is not installed (``pip install 'hello-memory[demo]'``).
    """
    from apps.ui import build_app  # Gradio is imported here, not when apps.app is

    settings = settings or Settings()
    if home is not None:
        from hello_memory.stores.open import resolve_home

        settings = settings.model_copy(update={"home": resolve_home(home)})  # "" used to mean the cwd
    from hello_memory.client.discovery import service_url

    url = service_url(settings, server_url)
    factory = AssistantFactory(settings, embedder=embedder, llm=llm, server_url=url, api_key=api_key)
    return build_app(factory), factory


def _check_home(settings: Settings | None, home: str | Path | None) -> None:
    """Without a live service for the data directory, another process must not hold it: say who does."""
    from hello_memory.client.discovery import check_home_free, find_service
    from hello_memory.stores.open import resolve_home

    path = resolve_home(home if home is not None else (settings or Settings()).home)
    if find_service(path) is None:
        check_home_free(path)


def serve(
    home: str | Path | None = None,
    host: str = DEFAULT_HOST,
    port: int = DEFAULT_PORT,
    *,
    settings: Settings | None = None,
    open_browser: bool = False,
    server_url: str | None = None,
    api_key: str | None = None,
) -> None:
    """Serve the app until interrupted (Ctrl+C), then close every session's stores.

    Args:
        home: data directory (default: ``HELLO_MEMORY_HOME`` or ``./hello_memory_data``).
        host: interface to bind; loopback by default — use ``0.0.0.0`` only on a trusted network.
        port: TCP port.
        settings: full configuration (``home`` still overrides its data directory).
        open_browser: open the page in the default browser.
        server_url / api_key: a memory service to use; default ``settings.server_url``, else the service
            that owns the data directory (``hello-memory serve``), else the directory itself.
    """
    from apps.ui import launch_kwargs

    check_port(host, port)  # before the stores, the embedder and Gradio load
    if server_url is None and (settings or Settings()).server_url is None:
        _check_home(settings, home)
    demo, factory = create_app(settings, home=home, server_url=server_url, api_key=api_key)
    logger.info("memory: %s", factory.server_url or Path(factory.settings.home).resolve())
    try:
        factory.claim()  # the data directory is the app's from now, not from the first browser session
        demo.queue().launch(server_name=host, server_port=port, inbrowser=open_browser, share=False,
                            show_error=False, max_file_size=MAX_FILE_SIZE, footer_links=["settings"],
                            **launch_kwargs())
    except OSError as e:  # taken between the check and the launch: Gradio's "Cannot find empty port"
        if isinstance(e, HelloMemoryError) or "port" not in str(e).lower():
            raise
        raise PortInUseError(f"port {port} on {host} is in use: choose another with --port {port + 1}") from e
    finally:
        factory.close_all()


def main(argv: Sequence[str] | None = None) -> int:
    """Command line of ``python -m apps``; returns the exit code."""
    ap = argparse.ArgumentParser(prog="python -m apps", description="Document Q&A learning assistant (Gradio).")
    ap.add_argument("--host", default=DEFAULT_HOST, help=f"interface to bind (default {DEFAULT_HOST})")
    ap.add_argument("--port", type=int, default=DEFAULT_PORT, help=f"port (default {DEFAULT_PORT})")
    ap.add_argument("--home", type=Path, default=None, help="data directory (default HELLO_MEMORY_HOME or "
                                                            "./hello_memory_data)")
    ap.add_argument("--open", action="store_true", help="open the page in a browser")
    args = ap.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    logging.getLogger("httpx").setLevel(logging.WARNING)  # Gradio's own start-up probes
    try:
        serve(args.home, args.host, args.port, open_browser=args.open)
    except HelloMemoryError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    return 0
