"""The data directory's path: checked and resolved without importing any store.

:mod:`hello_memory.stores.open` re-exports :func:`resolve_home`; entry points that only need the
path (the CLI's ``--home``, a client that talks to a service) import it from here, so they do not
load numpy, SQLite and the store adapters before they know whether they need them.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from hello_memory.errors import InvalidInputError, StoreError


def resolve_home(value: Any) -> Path:
    """The absolute data directory for ``value`` (a ``str`` or ``os.PathLike``), or a typed error.

    Raises:
        InvalidInputError: not a path, empty, a NUL character, a name the OS cannot encode.
        StoreError: the OS cannot resolve it (a symlink loop, no home directory for ``~``).
    """
    if not isinstance(value, str | os.PathLike):
        raise InvalidInputError(
            f"home must be a path (str or os.PathLike), got {type(value).__name__}", field="home"
        )
    text = os.fspath(value)
    if not isinstance(text, str):
        raise InvalidInputError("home must be a text path, not bytes", field="home")
    if not text.strip():
        raise InvalidInputError("home is empty; give the data directory's path", field="home")
    if "\x00" in text:
        raise InvalidInputError("home contains a NUL character", field="home")
    try:
        os.fsencode(text)
    except UnicodeEncodeError as e:
        raise InvalidInputError(f"home is not a valid file name ({e.reason})", field="home") from e
    try:
        return Path(text).expanduser().resolve()
    except (OSError, RuntimeError, ValueError) as e:  # symlink loop, "~" without a home directory
        raise StoreError(f"cannot use {text!r} as the data directory: {e}") from e
