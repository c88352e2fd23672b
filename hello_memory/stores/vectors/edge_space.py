"""The Edge store's disk budget: free space each engine call asks for, and the writes not yet flushed.

The engine writes through memory maps, where running out of space is a SIGBUS that kills the process
(:mod:`hello_memory.stores.space`). So every load, write and flush first checks the free space it may
need — ``min_free_bytes`` plus the size of the write and of the next flush (more to create a collection
on tmpfs) — and raises :class:`~hello_memory.errors.DiskFullError` instead. A collection is flushed
once ``MAX_UNFLUSHED_BYTES`` are unflushed, and below 1 GiB free a ``BALLAST_BYTES`` reserve file is
kept and given back when a flush would not fit. Reads need only ``LOAD_FREE_BYTES`` (plus, on tmpfs,
the pages a first load of a shard fills).
"""

from __future__ import annotations

from pathlib import Path

from hello_memory.stores import space

#: Free space every write asks for, beyond its own size (a WAL segment fills through its memory map).
MIN_FREE_BYTES = 16 << 20
#: Free space to create a collection on tmpfs, where its payload indexes write ~17 MiB at once (on
#: ext4 0.2 MiB: there it needs ``min_free_bytes``).
CREATE_FREE_BYTES = 64 << 20
#: Free space to load a shard, read and flush (the engine touches a few new pages).
LOAD_FREE_BYTES = 512 << 10
#: Free space to delete points (a WAL record each): deleting must stay possible on a nearly full disk.
DELETE_FREE_BYTES = 1 << 20
#: Unflushed writes after which a collection is flushed (a flush writes them through memory maps).
MAX_UNFLUSHED_BYTES = 8 << 20
#: Space kept allocated in ``.reserve`` while writing, released so that a flush fits a full disk.
BALLAST_BYTES = 24 << 20


class DiskBudget:
    """Free-space checks and per-collection flush debt for one Edge data directory (not thread-safe:
    the store calls it under its lock).

    Args:
        path: the data directory.
        min_free: free space a write asks for beyond its own size.
    """

    def __init__(self, path: Path, min_free: int) -> None:
        self.path = path
        self.min_free = min_free
        self.ballast = space.Ballast(path / ".reserve", BALLAST_BYTES)
        self._debt: dict[str, int] = {}  # per collection, bytes written since its last flush

    def need(self, needed: int) -> None:
        """Refuse an engine call that could run the filesystem out of space (a SIGBUS, not an error)."""
        space.require(self.path, needed)

    def room(self, needed: int) -> bool:
        """Whether ``needed`` bytes are free (``True`` when the free space is unknown)."""
        free = space.free_bytes(self.path)
        return free is None or free >= needed

    def for_create(self) -> None:
        """Check the room to create a collection (its payload indexes; the ballast first)."""
        self.ballast.fill()
        create = CREATE_FREE_BYTES if space.allocates_on_read(self.path) else self.min_free
        self.need(create + self.ballast.missing())

    def for_load(self, shard_dir: Path) -> None:
        """Check the room to load a shard."""
        self.need(LOAD_FREE_BYTES + space.populate_deficit(shard_dir))

    def for_upsert(self, name: str, points: int, dimension: int) -> None:
        """Check the room to upsert ``points`` and the flush that must follow them, and owe their flush.

        A point costs its vector about three times (WAL, vector storage, segment copy).
        """
        self.ballast.fill()  # no write without room for the flush that must follow it
        write = points * (12 * dimension + 4096)
        self.need(self.min_free + self.flush_need() + self.ballast.missing() + write)
        self._owe(name, points * (4 * dimension + 1024))

    def for_delete(self, name: str, points: int) -> None:
        """Check the room to delete ``points`` (a WAL record each) and owe their flush."""
        self.need(DELETE_FREE_BYTES)
        self._owe(name, 64 * points)

    def for_optimize(self, points: int, dimension: int) -> None:
        """Check the room to rebuild a collection's segments."""
        self.need(self.min_free + 2 * points * (4 * dimension + 1024))

    def flush_need(self, name: str | None = None) -> int:
        """Free space a flush asks for: it writes the unflushed payloads and mappings through memory maps
        (a flush with too little room measured as a SIGBUS on ext4), for one collection or all."""
        debt = sum(self._debt.values()) if name is None else self._debt.get(name, 0)
        return LOAD_FREE_BYTES + 2 * debt

    def make_flush_room(self, name: str) -> bool:
        """Release the ballast when a flush of ``name`` would not fit; whether it fits now."""
        if not self.room(self.flush_need(name)):
            self.ballast.release()
        return self.room(self.flush_need(name))

    def overdue(self, name: str) -> bool:
        """Whether ``name`` has more unflushed writes than ``MAX_UNFLUSHED_BYTES``."""
        return self._debt.get(name, 0) > MAX_UNFLUSHED_BYTES

    def flushed(self, name: str) -> None:
        """``name`` was flushed: it owes nothing."""
        self._debt.pop(name, None)

    def _owe(self, name: str, written: int) -> None:
        self._debt[name] = self._debt.get(name, 0) + written
