"""Finding the memory service that owns a data directory, so that other programs share it.

A running ``hello-memory serve`` writes ``<home>/SERVICE`` (JSON: ``url``, ``pid``, ``started``,
``home``, ``version``) once it listens and removes it when it stops. :func:`find_service` reads it
and believes it only if the process is alive and the URL's ``/health`` answers, within a short
timeout, for this very data directory; a stale file (a killed service) is ignored. The directory
lock itself (``LOCK``) stays the store's business: this file only says where to go instead.

Example:
    >>> from hello_memory.client.discovery import connect_memory
    >>> mm = connect_memory(Settings(home="./hello_memory_data"), user_id="alice")  # doctest: +SKIP
    >>> type(mm).__name__   # RemoteMemory while a service owns the directory, else MemoryManager
    'RemoteMemory'
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import re
import urllib.request
from datetime import datetime
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, SecretStr, ValidationError

from hello_memory.api import MemoryAPI
from hello_memory.errors import NotFoundError, StoreLockedError
from hello_memory.models import utcnow
from hello_memory.settings import Settings

logger = logging.getLogger(__name__)

SERVICE_FILE = "SERVICE"
PROBE_TIMEOUT = 0.5
DEFAULT_USER = "default_user"
_SECRET_OPTION = re.compile(r"key|token|password|secret", re.IGNORECASE)


class ServiceRecord(BaseModel):
    """The content of ``<home>/SERVICE``."""

    model_config = ConfigDict(extra="ignore")

    url: str
    pid: int
    started: datetime
    home: str
    version: str = ""


def home_id(home: str | Path) -> str:
    """A short fingerprint of a data directory (its resolved path), shown by ``/health``."""
    resolved = str(Path(home).expanduser().resolve())
    return hashlib.sha256(resolved.encode("utf-8", "surrogateescape")).hexdigest()[:16]


def write_service_file(home: str | Path, url: str) -> Path:
    """Advertise a service listening at ``url`` for ``home`` (atomically replaced)."""
    from hello_memory import __version__

    path = Path(home).expanduser().resolve() / SERVICE_FILE
    record = ServiceRecord(
        url=url, pid=os.getpid(), started=utcnow(), home=home_id(home), version=__version__
    )
    tmp = path.with_name(f".{SERVICE_FILE}.{os.getpid()}.tmp")
    tmp.write_text(record.model_dump_json(indent=2) + "\n", encoding="utf-8")
    os.replace(tmp, path)
    return path


def read_service_file(home: str | Path) -> ServiceRecord | None:
    """The record in ``<home>/SERVICE``; ``None`` when absent or unreadable."""
    path = Path(home).expanduser() / SERVICE_FILE
    try:
        return ServiceRecord.model_validate_json(path.read_bytes())
    except (OSError, ValueError, ValidationError):
        return None


def remove_service_file(home: str | Path) -> None:
    """Stop advertising: remove ``<home>/SERVICE`` if this process wrote it."""
    record = read_service_file(home)
    if record is not None and record.pid == os.getpid():
        (Path(home).expanduser() / SERVICE_FILE).unlink(missing_ok=True)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's process: alive
        return True
    return True


def probe(url: str, *, timeout: float = PROBE_TIMEOUT) -> dict[str, Any] | None:
    """``GET <url>/health`` as JSON, or ``None`` when nothing answers within ``timeout``."""
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))  # a local probe: no proxy
    try:
        with opener.open(f"{url.rstrip('/')}/health", timeout=timeout) as response:
            body = json.loads(response.read(4096))
    except (OSError, ValueError, RecursionError):  # nothing answers, or not the service (HTML, deep JSON)
        return None
    return body if isinstance(body, dict) and body.get("service") == "hello-memory" else None


def find_service(home: str | Path, *, timeout: float = PROBE_TIMEOUT) -> str | None:
    """The URL of the live service that owns ``home``, or ``None`` (no file, stale file, other home)."""
    record = read_service_file(home)
    if record is None or not _alive(record.pid) or record.home != home_id(home):
        return None
    health = probe(record.url, timeout=timeout)
    if health is None or health.get("home") != record.home:
        logger.debug("ignoring %s: no live service for this data directory at %s", SERVICE_FILE, record.url)
        return None
    return record.url


def service_url(settings: Settings, server_url: str | None = None) -> str | None:
    """Where to send calls: ``server_url``, else ``settings.server_url``, else a live service of the home."""
    return server_url or settings.server_url or find_service(settings.home)


def connect_memory(
    settings: Settings,
    *,
    user_id: str = DEFAULT_USER,
    server_url: str | None = None,
    api_key: str | SecretStr | None = None,
    existing: bool = False,
    **manager_kwargs: Any,
) -> MemoryAPI:
    """A :class:`~hello_memory.client.remote.RemoteMemory` when a service is configured or owns the home,
    else a :class:`~hello_memory.MemoryManager` on the home (``manager_kwargs`` go to it).

    Through a service with an API key, the default ``user_id`` stands for the key's own user.
    With ``existing`` (a command that only reads or changes what is there), a data directory that
    does not exist or is empty is :func:`no_memory`'s ``NotFoundError`` instead of being created.
    Both objects are also :class:`~hello_memory.api.MemoryAdminAPI`.
    """
    url = service_url(settings, server_url)
    if url is not None:
        from hello_memory.client.remote import RemoteMemory

        remote_user = None if (api_key and user_id == DEFAULT_USER) else user_id
        return RemoteMemory(url, api_key=api_key, user_id=remote_user)
    if existing:
        check_memory_exists(settings)
    from hello_memory.manager import MemoryManager

    try:
        return MemoryManager(settings, user_id=user_id, **manager_kwargs)
    except StoreLockedError as e:
        raise locked_home(settings.home) from e


def check_memory_exists(settings: Settings) -> None:
    """Raise :func:`no_memory` when ``settings``' stores keep a data directory that is missing or empty.

    Asked of the store configuration (:func:`hello_memory.stores.open_server.wanted`): stores that
    are servers keep no directory, and what they hold is theirs to say.
    """
    from hello_memory.stores.open import resolve_home
    from hello_memory.stores.open_server import wanted

    if wanted(settings):
        return
    home = resolve_home(settings.home)
    try:
        empty = not any(home.iterdir())
    except FileNotFoundError:
        empty = True
    except OSError:  # a file, no permission: opening the stores says what is wrong
        return
    if empty:
        raise no_memory(home)


def no_memory(home: str | Path) -> NotFoundError:
    """The error of a command pointed at a data directory that holds no memory (and no live service)."""
    return NotFoundError(
        f"no memory at {home}: the data directory does not exist or is empty, and no memory service "
        "owns it (nothing was created); point --home (HELLO_MEMORY_HOME) at a data directory, or "
        "--server (HELLO_MEMORY_SERVER_URL) at a memory service",
        object_id=str(home),
    )


def locked_home(home: str | Path, *, serving: bool = False) -> StoreLockedError:
    """The error of a client that found no live service for ``home`` and the directory locked
    (``serving``: of ``hello-memory serve`` that cannot open it).

    It names the holder (:func:`~hello_memory.stores.open.lock_holder`, with its command line where
    ``/proc`` shows it) and says what to do: serve the directory with ``hello-memory serve`` so that
    every program shares it, or use a service elsewhere with ``--server URL``.
    """
    from hello_memory.stores.open import lock_holder, resolve_home

    path = resolve_home(home)
    holder = lock_holder(path)
    who = describe_holder(holder) if holder else None
    a_service = who is not None and re.search(r"\bserve\b|apps\.service", who) is not None
    if serving and a_service:
        hint = "a memory service already serves it: clients find it by themselves (or use --server URL)"
    elif serving:
        hint = "stop that process, then start the service again: the CLI, MCP and the app then share it"
    elif a_service:
        hint = ("it looks like a memory service that does not answer for this directory (yet): retry in a "
                "moment, or pass --server URL")
    else:
        hint = (f"no memory service owns it: to share it, stop that process and run `hello-memory serve "
                f"--home {path}` (the CLI, `hello-memory mcp` and `hello-memory app` then go through it by "
                "themselves), or pass --server URL (HELLO_MEMORY_SERVER_URL) to use a service elsewhere")
    return StoreLockedError(str(path), who, hint=hint)


def check_home_free(home: str | Path) -> None:
    """Raise :func:`locked_home`'s error when another process holds ``home`` (a start-up check)."""
    from hello_memory.stores.open import lock_holder

    if lock_holder(home) is not None:
        raise locked_home(home)


def describe_holder(holder: str) -> str:
    """``"pid 1234"`` with the process's command line when it is readable (Linux ``/proc``)."""
    match = re.fullmatch(r"pid (\d+)", holder)
    if match is None:
        return holder
    try:
        raw = Path(f"/proc/{match[1]}/cmdline").read_bytes()
    except OSError:
        return holder
    words = [" ".join(part.decode("utf-8", "replace").split()) for part in raw.split(b"\0") if part]
    command = " ".join(w if len(w) <= 80 else w[:79] + "…" for w in _redact(words))  # one line
    if len(command) > 400:
        command = command[:399] + "…"
    return f"{holder}: {command}" if command else holder


def _redact(words: list[str]) -> list[str]:
    """Command-line words with the values of options named like secrets (``--api-key``) masked."""
    out: list[str] = []
    for i, word in enumerate(words):
        name, eq, _ = word.partition("=")
        secret_option = name.startswith("-") and _SECRET_OPTION.search(name) is not None
        after_secret_option = i > 0 and "=" not in words[i - 1] and words[i - 1].startswith("-") \
            and _SECRET_OPTION.search(words[i - 1]) is not None
        out.append(f"{name}=***" if secret_option and eq else "***" if after_secret_option else word)
    return out
