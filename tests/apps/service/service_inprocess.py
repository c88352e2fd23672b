"""Serve an app in this process (uvicorn in a thread, loopback, a free port), for tests that reach into its core."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

WAIT = 30.0


@contextmanager
def serving(app: Any, *, wait: float = WAIT) -> Iterator[str]:
    """Run ``app`` until the ``with`` ends; yields its URL (``http://127.0.0.1:<port>``)."""
    import uvicorn

    config = uvicorn.Config(app, host="127.0.0.1", port=0, log_level="warning", lifespan="on")
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    for _ in range(int(wait * 100)):
        if server.started or not thread.is_alive():
            break
        time.sleep(0.01)
    assert server.started, "the in-process service did not start"
    port = server.servers[0].sockets[0].getsockname()[1]
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(wait)
