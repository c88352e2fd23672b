"""Checking a port before anything is opened: the app and the service refuse a busy one in one line.

Both bind with ``SO_REUSEADDR`` (Gradio and uvicorn alike), so a test bind with it too says
whether theirs will succeed; a port taken between the check and their bind is still reported
by each (``PortInUseError`` from the app, ``ServiceError`` from the service).
"""

from __future__ import annotations

import socket

from hello_memory.errors import HelloMemoryError, InvalidInputError


class PortInUseError(HelloMemoryError, OSError):
    """A port cannot be bound (in use); the message names the ``--port`` to try."""


def check_port(host: str, port: int, *, holder: str = "another hello-memory app?", retry: str = "") -> None:
    """Raise :class:`PortInUseError` (one line with the fix) when ``host:port`` cannot be bound.

    Args:
        host / port: what the caller is about to bind.
        holder: who is likely listening there, named in the message.
        retry: the ``--port`` value to suggest (default: the next port).
    """
    if not 0 <= port <= 65535:  # socket.bind raises OverflowError, which no entry point expects
        raise InvalidInputError(f"port={port} is not valid: expected an integer from 0 to 65535", field="port")
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except (OSError, UnicodeError) as e:
        raise InvalidInputError(f"cannot serve on {host!r}: {e}; use --host 127.0.0.1", field="host") from e
    family, _, _, _, address = infos[0]
    with socket.socket(family, socket.SOCK_STREAM) as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as Gradio's and uvicorn's servers bind
        try:
            s.bind(address)
        except OSError as e:
            raise PortInUseError(
                f"cannot listen on {host}:{port} ({e.strerror or e}): stop what is listening there "
                f"({holder}) or choose another port with --port {retry or port + 1}"
            ) from e
