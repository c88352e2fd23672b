"""A full disk raises ``DiskFullError`` ("disk full: free space in ..."), never a signal (issue 17 §2).

Before: SIGBUS (exit 135) with 4 MiB free and on a 20 MiB filesystem (Qdrant Edge fills memory-mapped
sparse files), raw ``sqlite3.OperationalError: database or disk is full``, ``CorruptStoreError ... disk
I/O error`` when opening an intact store, raw ``OSError [Errno 28]`` for a new home. Each scenario
runs on a real small filesystem (tmpfs, and ext4 on a loop device: reads allocate pages on tmpfs but
not on a disk) with the writer in a child process (``disk_worker.py``), so a signal shows as its
return code. Mounting needs root; without it the tests skip with the reason.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

WORKER = Path(__file__).resolve().parent / "disk_worker.py"
KINDS = ["tmpfs", "ext4"]


def _run(cmd: list[str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(cmd, capture_output=True, text=True, check=False)


@pytest.fixture
def small_fs(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Path]:
    """A freshly made filesystem of ``request.param = (kind, MiB)`` mounted at a temporary directory."""
    kind, mib = request.param
    target = tmp_path / "fs"
    target.mkdir()
    if kind == "tmpfs":
        done = _run(["mount", "-t", "tmpfs", "-o", f"size={mib}m", "tmpfs", str(target)])
    else:
        image = tmp_path / "disk.img"
        with open(image, "wb") as fh:
            fh.truncate(mib << 20)
        made = _run(["mkfs.ext4", "-q", "-F", "-m", "0", str(image)])
        done = made if made.returncode else _run(["mount", "-o", "loop", str(image), str(target)])
    if done.returncode != 0:
        pytest.skip(f"cannot mount a {mib} MiB {kind} here: {done.stderr.strip() or done.returncode}")
    try:
        yield target
    finally:
        _run(["umount", "-l", str(target)])


def _fill(fs: Path, leave: int) -> None:
    """Fill ``fs`` completely, then free ``leave`` bytes (a 4 KiB-granular filler file)."""
    filler = fs / "filler"
    fd = os.open(filler, os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
    try:
        for block in (1 << 20, 4096):
            try:
                while True:
                    os.write(fd, b"\1" * block)
            except OSError:
                pass
        os.fsync(fd)
    finally:
        os.close(fd)
    os.truncate(filler, max(0, filler.stat().st_size - leave))


def _worker(mode: str, home: Path) -> tuple[int, list[dict[str, Any]]]:
    done = subprocess.run([sys.executable, str(WORKER), mode, str(home)], capture_output=True, text=True,
                          timeout=900, check=False)
    lines = [json.loads(x) for x in done.stdout.splitlines() if x.startswith("{")]
    assert "Traceback" not in done.stderr, done.stderr[-3000:]
    return done.returncode, lines


def _failures(lines: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [x for x in lines if not x["ok"]]


def _assert_only_disk_full(lines: list[dict[str, Any]]) -> None:
    for x in _failures(lines):
        assert x["error"] == "DiskFullError", x
        assert x["message"].startswith("disk full: free space in"), x


def _opened(lines: list[dict[str, Any]]) -> bool:
    return bool(next(x for x in lines if x["op"] == "open")["ok"])


def _reads_ok(lines: list[dict[str, Any]]) -> None:
    reads = [x for x in lines if x["op"] in ("search", "get_all", "stats", "summary", "context")]
    assert reads and all(x["ok"] for x in reads), [x for x in reads if not x["ok"]]


@pytest.mark.parametrize("small_fs", [("tmpfs", 20), ("ext4", 20), ("ext4", 100)], indirect=True,
                         ids=["tmpfs-20MiB", "ext4-20MiB", "ext4-100MiB"])
def test_filling_a_filesystem_raises_disk_full_and_never_a_signal(small_fs: Path) -> None:
    code, lines = _worker("fill", small_fs / "home")
    assert code == 0, f"the writer died with {code} (SIGBUS is -7): {lines[-3:]}"
    assert _failures(lines), "the disk never filled"
    _assert_only_disk_full(lines)
    _reads_ok(lines)  # reads keep working on the full disk
    assert any(x["op"] == "close" and x["ok"] for x in lines)


# tmpfs: a loaded collection holds ~90 MiB there (its sparse files fill on the first load), so 200 MiB.
@pytest.mark.parametrize("small_fs", [("tmpfs", 200), ("ext4", 100)], indirect=True, ids=KINDS)
def test_a_store_on_a_full_disk_opens_reads_and_refuses_writes(small_fs: Path) -> None:
    home = small_fs / "home"
    code, lines = _worker("seed", home)
    assert code == 0 and lines[-1] == {"op": "seed", "ok": True}, lines
    _fill(small_fs, leave=4 << 20)
    code, lines = _worker("read", home)
    assert code == 0, f"died with {code}: {lines[-3:]}"
    _assert_only_disk_full(lines)
    assert _opened(lines)  # (was: CorruptStoreError ... disk I/O error)
    _reads_ok(lines)
    adds = {x["op"]: x["ok"] for x in lines if x["op"].startswith("add:")}
    assert not adds["add:episodic"] and not adds["add:semantic"]  # refused before the engine writes
    search = [x for x in lines if x["op"] == "search"]
    assert search[0]["result"] >= 3  # the seeded memories are found
    code, lines = _worker("read", home)  # the refused writes left journal entries: the open postpones them
    assert code == 0 and _opened(lines), lines[:3]
    _assert_only_disk_full(lines)
    _reads_ok(lines)
    _fill(small_fs, leave=0)
    code, lines = _worker("read", home)
    assert code == 0, f"died with {code} on a completely full disk: {lines[-3:]}"
    _assert_only_disk_full(lines)


@pytest.mark.parametrize("small_fs", [(k, 100) for k in KINDS], indirect=True, ids=KINDS)
def test_a_new_home_on_a_full_disk_raises_disk_full(small_fs: Path) -> None:
    _fill(small_fs, leave=4 << 20)
    code, lines = _worker("fill", small_fs / "home4")
    assert code == 0, f"died with {code}: {lines[-3:]}"
    _assert_only_disk_full(lines)
    assert not next(x for x in lines if x["op"] == "add:episodic")["ok"]  # a collection needs room
    _fill(small_fs, leave=0)
    code, lines = _worker("fill", small_fs / "home0")
    assert code == 0, f"died with {code}: {lines[-3:]}"
    _assert_only_disk_full(lines)  # (was: raw OSError [Errno 28])
    assert _failures(lines)
