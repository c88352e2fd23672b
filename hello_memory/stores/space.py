"""Free disk space checks for the embedded stores (issue 17: a full disk must raise, never kill).

Qdrant Edge memory-maps its write-ahead log (32 MiB segments), vectors and payload indexes as
sparse files and fills them through the mapping. On a full filesystem the page fault that needs a
new block is a SIGBUS, which kills the process; no exception can be caught. So the embedded vector
store checks, before it lets the engine write or load, that the filesystem has room for what that
call may allocate (:func:`require`), and raises :class:`~hello_memory.errors.DiskFullError` instead.

On tmpfs (and ramfs) even *reading* a hole of a shared mapping allocates a page, and loading a
shard touches its index and vector files: :func:`populate_deficit` is what such a load allocates.
"""

from __future__ import annotations

import os
from pathlib import Path

from hello_memory.errors import DiskFullError

_ALLOCATE_ON_READ = {"tmpfs", "ramfs", "shm"}


def free_bytes(path: Path) -> int | None:
    """Free bytes for unprivileged writers on the filesystem holding ``path`` (``None`` if unknown)."""
    for candidate in (path, *path.parents):
        try:
            st = os.statvfs(candidate)
        except OSError:
            continue
        return st.f_bavail * st.f_frsize
    return None


def require(path: Path, needed: int) -> None:
    """Raise :class:`DiskFullError` unless the filesystem of ``path`` has ``needed`` bytes free."""
    free = free_bytes(path)
    if free is not None and free < needed:
        raise DiskFullError(str(path), free_bytes=free, needed_bytes=needed)


def sparse_deficit(root: Path, *parts: str) -> int:
    """Bytes the sparse files under ``root`` (in subdirectories named ``parts``, if given) lack."""
    total = 0
    stack = [root]
    while stack:
        here = stack.pop()
        try:
            entries = list(os.scandir(here))
        except OSError:
            continue
        for entry in entries:
            if entry.is_dir(follow_symlinks=False):
                stack.append(Path(entry.path))
            elif entry.is_file(follow_symlinks=False) and (not parts or any(p in entry.path for p in parts)):
                st = entry.stat(follow_symlinks=False)
                total += max(0, st.st_size - st.st_blocks * 512)
    return total


def allocates_on_read(path: Path) -> bool:
    """True on tmpfs and ramfs, where touching a hole of a shared mapping allocates a page."""
    return filesystem_type(path) in _ALLOCATE_ON_READ


def populate_deficit(shard: Path) -> int:
    """What loading the shard allocates: its sparse index and vector files where reads allocate (tmpfs)."""
    if not allocates_on_read(shard):
        return 0
    return sparse_deficit(shard / "segments", "payload_index", "vector_storage")


def filesystem_type(path: Path) -> str:
    """The type of the filesystem mounted at (the longest prefix of) ``path``, e.g. ``"ext4"``."""
    return _mount_type(str(_existing(path).resolve()))


def _existing(path: Path) -> Path:
    for candidate in (path, *path.parents):
        if candidate.exists():
            return candidate
    return Path("/")


def _mount_type(real: str) -> str:
    best, kind = "", ""
    try:
        with open("/proc/self/mounts", encoding="utf-8") as fh:
            for line in fh:
                fields = line.split()
                if len(fields) < 3:
                    continue
                mount = fields[1].replace("\\040", " ")
                inside = real == mount or real.startswith(mount.rstrip("/") + "/")
                if inside and len(mount) >= len(best):
                    best, kind = mount, fields[2]
    except OSError:
        return ""
    return kind


class Ballast:
    """A file of reserved disk space, given back when a flush must fit on an otherwise full disk.

    Flushing (and closing) an embedded shard writes its unflushed payloads and mappings through
    memory maps, so it cannot fail cleanly on a full disk: it is a SIGBUS (measured on ext4). Once
    the filesystem has less than ``low_water`` free, the store keeps ``size`` bytes allocated while
    it writes, and releases them to flush when nothing else is left. (Above ``low_water`` there is
    no ballast: a disk with room does not pay for one.)
    """

    def __init__(self, path: Path, size: int, *, low_water: int = 1 << 30) -> None:
        self.path = path
        self.size = size
        self.low_water = low_water

    def needed(self) -> bool:
        """Whether the ballast should exist now (the filesystem is below ``low_water``)."""
        free = free_bytes(self.path.parent)
        return free is not None and free < self.low_water

    def missing(self) -> int:
        """Bytes the ballast lacks (its full size when absent; 0 while it is not needed)."""
        if not self.needed():
            return 0
        try:
            st = self.path.stat()
        except OSError:
            return self.size
        return max(0, self.size - st.st_blocks * 512)

    def fill(self) -> None:
        """Allocate the ballast when it is short and the filesystem has room for it (best effort)."""
        short = self.missing()
        free = free_bytes(self.path.parent)
        if short == 0 or free is None or free < short + (1 << 20):
            return
        try:
            fd = os.open(self.path, os.O_WRONLY | os.O_CREAT, 0o600)
            try:
                os.posix_fallocate(fd, 0, self.size)
            finally:
                os.close(fd)
        except OSError:
            self.release()

    def release(self) -> None:
        """Give the space back."""
        self.path.unlink(missing_ok=True)
