"""Fixtures for the store tests."""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest


@pytest.fixture
def fast_path(tmp_path: Path) -> Iterator[Path]:
    """A scratch directory on tmpfs when there is one: Qdrant Edge fsyncs every file it creates
    (a new collection with its payload indexes costs ~1.5 s where an fsync takes ~7 ms)."""
    shm = Path("/dev/shm")
    if not (shm.is_dir() and os.access(shm, os.W_OK) and shutil.disk_usage(shm).free > 1 << 30):
        yield tmp_path
        return
    path = Path(tempfile.mkdtemp(prefix="hm-test-", dir=shm))
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)
